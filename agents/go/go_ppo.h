// Proximal Policy Optimization (Schulman et al., 2017) for the GO policy on the simulator.
//
// One update on one graph: a forward pass gives per-node device distributions; `samples_per_step`
// placements are drawn from them (all nodes at once) and simulated, plus the greedy placement
// (evaluated for the best-so-far, not trained on). The reward of a placement is -sqrt(step time /
// reference), where the reference is the graph's first valid sampled step time, so rewards of every
// graph are O(1) and graphs of very different speeds can share one policy; an out-of-memory
// placement gets the fixed `oom_reward`. Advantages are the rewards minus the value head's
// prediction, normalised over the batch. Then `epochs` passes of the clipped surrogate objective
// (summed over the nodes of a placement, averaged over the samples), each a full forward
// and backward pass over the graph (the first epoch reuses the sampling pass), with a value loss
// (the value head reads detached features, so its regression does not compete with the policy for
// the shared layers), an entropy bonus on the joint (summed per-node) entropy, and global
// gradient-norm clipping.
//
// Correlated exploration (a gopt addition, `exploration_block`): devices are sampled with
// the Gumbel-max trick, a = argmax(logits + G), and all nodes of a block of consecutive
// topological positions share one Gumbel vector G. Every node's marginal is still exactly
// the policy's softmax, but neighbouring nodes with similar logits now move together, so
// a sampled placement differs from another in a few coherent regions instead of in
// thousands of independent coin flips whose effect on the step time averages out. On
// graphs of thousands of nodes this is what lets the reward say anything (see
// docs/agents.md for the measurements); block 1 restores independent sampling. With
// `layer_exploration`, every other sample shares one Gumbel vector per layer attribute
// (LSTM layer, Transformer block, WaveNet stack layer) instead, so that whole layers move
// between devices together; marginals are still exact.
//
// The probability ratio is taken per node (each node's device is one factor of the joint
// action, all factors sharing the placement's advantage) rather than for the product over
// tens of thousands of nodes, whose ratio would leave the clip range at the first step.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "agents/environment.h"
#include "agents/go/go_features.h"
#include "agents/go/go_model.h"

namespace gopt::agents::go {

struct PpoOptions {
  std::int64_t samples_per_step = 16;  ///< placements sampled per update
  std::int64_t epochs = 3;             ///< optimisation passes over each batch
  double learning_rate = 3e-4;         ///< Adam (docs/agents.md "Learning rate")
  double clip = 0.2;                   ///< ratio clip range
  double value_coef = 0.5;             ///< weight of the value loss
  double entropy_coef = 0.01;          ///< weight of the entropy bonus
  double grad_clip = 1.0;              ///< max global gradient norm
  double oom_reward = -3.0;            ///< reward of an out-of-memory placement
  bool evaluate_greedy = true;         ///< also simulate the argmax placement each update
  /// Self-imitation: each epoch also maximises the log-likelihood of the best decision found
  /// so far on the graph (summed over nodes), with this weight. 0: off.
  double imitation_coef = 0;
  /// ... each op's log-likelihood only while the best action's probability is below this,
  /// so that the policy keeps exploring around the best decision (1: no limit).
  double imitation_cap = 0.9;
  /// Correlated exploration: nodes in the same block of this many consecutive topological
  /// positions share their Gumbel noise when sampled (1: independent, as in the paper).
  /// Capped at N / (4 x devices) so that every graph has at least 4 blocks per device.
  std::int64_t exploration_block = 64;
  /// Every other sample shares noise per layer (ops with a layer attribute) instead of per
  /// block, so whole layers move between devices together.
  bool layer_exploration = true;
  /// ... and the layer groups are (top-level name scope, layer attribute) pairs, so that an
  /// encoder layer moves apart from the decoder layer with the same index (docs/agents.md
  /// "What limits GO-one on the RNN graphs"). Off: one group per layer attribute.
  bool scope_exploration = false;
  /// Mixed sampling, with per-op decisions: the first this many samples of each update
  /// are drawn per decision unit (GraphTensors::unit) from the softmax of the mean of its
  /// ops' logits, every op of a unit on the unit's device, and trained on those per-unit
  /// log-probabilities; the others per op, as above. 0: every sample per op.
  std::int64_t unit_samples = 0;
};

/// What a decision keeps for the tasks the policy does not decide (multi-task GO's
/// single-task variants keep TensorFlow's default for the others).
struct DecisionBase {
  core::Decision decision;  ///< placement / priority / fusion used when not decided
  /// Fusion not decided: XLA-style rule-based fusion (agents/baselines/tf_default.h) for the
  /// decision's placement instead of `decision.fusion`.
  bool xla_fusion = false;
};

/// Per-task actions, by topological position ([N] int64; undefined: not decided).
struct TaskActions {
  torch::Tensor placement;
  torch::Tensor priority;
  torch::Tensor fusion;

  [[nodiscard]] torch::Tensor& of(GoTask task);
};

/// One graph being trained on, with its per-graph reward reference.
struct PpoTask {
  explicit PpoTask(Environment& environment, DecisionBase base = {});
  Environment* env;
  GraphTensors tensors;
  DecisionBase base;
  double reference_s = 0;  ///< set from the first valid sample
};

/// What one update did.
struct PpoStepStats {
  double mean_step_time_s = 0;  ///< over the sampled placements, OOM counted as +inf excluded
  double mean_reward = 0;
  double policy_loss = 0;
  double value_loss = 0;
  double entropy = 0;  ///< entropy (nats) per placement decision (node or unit), summed over tasks
  std::int64_t samples = 0;  ///< simulations this update
  std::int64_t oom = 0;      ///< sampled placements that ran out of memory
};

/// Turns per-position device choices into a Decision (colocation applied).
[[nodiscard]] core::Decision placement_decision(const torch::Tensor& devices_by_position,
                                                const GraphTensors& tensors,
                                                const core::CompiledGraph& graph);

/// Turns per-task actions into a Decision: decided fields from `actions` (placement with
/// colocation applied, priority levels as priorities, fusion levels as fusion priorities),
/// the others from `base`.
[[nodiscard]] core::Decision task_decision(const TaskActions& actions, const GraphTensors& tensors,
                                           const core::CompiledGraph& graph,
                                           const DecisionBase& base);

/// The greedy (argmax) decision of `policy` for `problem`.
[[nodiscard]] core::Decision greedy_decision(GoPolicy& policy, const GraphTensors& tensors,
                                             const Problem& problem, const DecisionBase& base = {});

/// What memory_fitting_decision() did.
struct MemoryRepair {
  std::int64_t simulations = 0;  ///< decisions simulated, the greedy one included
  std::int64_t moved_ops = 0;    ///< ops whose device differs from the greedy placement
  bool fits = false;             ///< the returned decision fits in memory
};

/// The greedy decision of `policy` for `env`'s problem, moved into memory when it does not
/// fit. Ops move in the groups sampling moves together (the decision units with unit
/// decisions; else a layer attribute, else a block of `block` consecutive positions,
/// capped as in sampling). While the simulated
/// placement runs out of memory, each device over its capacity hands over the groups the
/// policy is least sure of there (smallest mean margin of log p(device) over the best device
/// with room) to the device with the most room, until its estimated peak is 10% under its
/// capacity (peak bytes per byte of op weight, parameter + output bytes, as on the full
/// device). At most `max_repairs` re-placements, each one simulation on `env` (a sample).
/// Returns the first decision that fits, or the greedy one when none did. Other tasks
/// (scheduling, fusion) keep their greedy actions.
[[nodiscard]] core::Decision memory_fitting_decision(GoPolicy& policy, const GraphTensors& tensors,
                                                     Environment& env, const DecisionBase& base,
                                                     std::int64_t max_repairs, std::int64_t block,
                                                     MemoryRepair* report = nullptr);

class PpoTrainer {
 public:
  PpoTrainer(GoPolicy policy, torch::optim::Adam& optimizer, PpoOptions options,
             at::Generator generator);
  /// One PPO update on `task`.
  PpoStepStats step(PpoTask& task);
  /// The sampling generator (its state goes into training snapshots).
  [[nodiscard]] at::Generator& generator() { return gen_; }
  /// Simulations one update costs.
  [[nodiscard]] std::int64_t samples_per_update() const {
    return options_.samples_per_step + (options_.evaluate_greedy ? 1 : 0);
  }

 private:
  torch::Tensor sample_actions(const torch::Tensor& log_probs, const GraphTensors& g,
                               std::int64_t k);

  GoPolicy policy_;
  torch::optim::Adam* optimizer_;
  PpoOptions options_;
  at::Generator gen_;
};

}  // namespace gopt::agents::go
