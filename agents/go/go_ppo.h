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
#include "agents/go/go_decision.h"
#include "agents/go/go_features.h"
#include "agents/go/go_model.h"
#include "agents/learner_group.h"
#include "core/options.h"

namespace gopt::agents::go {

struct PpoOptions {
  GOPT_OPTION(std::int64_t, samples_per_step, 16)  ///< placements sampled per update
  GOPT_OPTION(std::int64_t, epochs, 3)             ///< optimisation passes over each batch
  GOPT_OPTION(double, learning_rate, 3e-4)  ///< Adam (docs/design-decisions.md "GO: learning")
  GOPT_OPTION(double, clip, 0.2)            ///< ratio clip range
  GOPT_OPTION(double, value_coef, 0.5)      ///< weight of the value loss
  GOPT_OPTION(double, entropy_coef, 0.01)   ///< weight of the entropy bonus
  /// Weight of the device-balance penalty (0: off): KL(uniform || p̄) times the number of
  /// placement decisions, where p̄ is the policy's device distribution averaged over those
  /// decisions. It keeps every device in use on average, so that a device the policy
  /// stopped sampling (whose mean probability fell to ~1e-4, where neither the reward nor
  /// the per-node entropy moves it back) comes back (docs/agents.md "Device balance").
  GOPT_OPTION(double, device_balance, 0)
  /// With device_balance: a floor, as a fraction of the uniform share 1/devices, below
  /// which a device's mean probability is penalised; devices above it are left alone, so
  /// that a graph whose best placements use few devices is not pulled towards all of them
  /// (0: no floor, the full KL). The penalty is then c · n · (1/devices) · Σ over devices
  /// of max(0, log(floor / devices) − log p̄_d), the KL's terms of the devices below it.
  GOPT_OPTION(double, device_floor, 0)
  GOPT_OPTION(double, grad_clip, 1.0)       ///< max global gradient norm
  GOPT_OPTION(double, oom_reward, -3.0)     ///< reward of an out-of-memory placement
  GOPT_OPTION(bool, evaluate_greedy, true)  ///< also simulate the argmax placement each update
  /// Self-imitation: each epoch also maximises the log-likelihood of the best decision found
  /// so far on the graph (summed over nodes), with this weight. 0: off.
  GOPT_OPTION(double, imitation_coef, 0)
  /// ... each op's log-likelihood only while the best action's probability is below this,
  /// so that the policy keeps exploring around the best decision (1: no limit).
  GOPT_OPTION(double, imitation_cap, 0.9)
  /// Correlated exploration: nodes in the same block of this many consecutive topological
  /// positions share their Gumbel noise when sampled (1: independent, as in the paper).
  /// Capped at N / (4 x devices) so that every graph has at least 4 blocks per device.
  GOPT_OPTION(std::int64_t, exploration_block, 64)
  /// Every other sample shares noise per layer (ops with a layer attribute) instead of per
  /// block, so whole layers move between devices together.
  GOPT_OPTION(bool, layer_exploration, true)
  /// ... and the layer groups are (top-level name scope, layer attribute) pairs, so that an
  /// encoder layer moves apart from the decoder layer with the same index (docs/design-decisions.md
  /// "What limits GO-one on the RNN graphs"). Off: one group per layer attribute.
  GOPT_OPTION(bool, scope_exploration, false)
  /// Mixed sampling, with per-op decisions: the first this many samples of each update
  /// are drawn per decision unit (GraphTensors::unit) from the softmax of the mean of its
  /// ops' logits, every op of a unit on the unit's device, and trained on those per-unit
  /// log-probabilities; the others per op, as above. 0: every sample per op.
  GOPT_OPTION(std::int64_t, unit_samples, 0)
};

/// One graph being trained on, with its per-graph reward reference.
struct PpoTask {
  explicit PpoTask(Environment& environment, DecisionBase base = {});
  /// With the graph's tensors made already (GoLearner::tensors_for).
  PpoTask(Environment& environment, DecisionBase base, GraphTensors graph_tensors);
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

/// The samples of one update, drawn from the policy before it changes: what PPO's objective
/// is computed on. Rows are decisions (an op's, or with unit decisions a unit's placement),
/// columns the `k` samples.
struct PpoBatch {
  std::int64_t devices = 0;   ///< the cluster's devices
  TaskActions actions;        ///< [decisions, k] per decided task
  TaskActions old_log_probs;  ///< [decisions, k] their log-probabilities when sampled
  /// Mixed sampling (PpoOptions::unit_samples): the first `unit_samples` samples' units'
  /// devices [units, unit_samples] and their pooled log-probabilities.
  std::int64_t unit_samples = 0;
  torch::Tensor unit_actions;
  torch::Tensor unit_old_log_probs;
  /// The greedy decision's actions per decided task ([decisions]), simulated before the
  /// samples for the best so far and not trained on (PpoOptions::evaluate_greedy).
  TaskActions greedy;
  /// The simulations of the greedy decision (when evaluated) and the samples, in that order.
  std::vector<Evaluation> evaluations;
  torch::Tensor old_value;  ///< [] the value head's prediction when sampled
  torch::Tensor reward;     ///< [k]
  torch::Tensor advantage;  ///< [1, k] reward - old_value, normalised over the samples
  /// Self-imitation targets, the best decision so far per decided task ([decisions, 1]);
  /// undefined when not imitating.
  TaskActions imitation;
  /// The sampling forward pass with its autograd graph: the policy is unchanged until the
  /// first epoch's optimizer step, so that epoch reuses it instead of a second forward pass
  /// (gradient mode does not change the values: the update is the same, ~10% sooner).
  PolicyOutput first_pass;
};

/// PPO's optimisation of `policy` on `batch` (its graph `g`): `options.epochs` passes of the
/// clipped surrogate objective with the value loss, the entropy bonus and self-imitation,
/// each an Adam step after global gradient-norm clipping. Sets `stats`' losses and entropy
/// from the first epoch.
void ppo_update(GoPolicy& policy, torch::optim::Adam& optimizer, const GraphTensors& g,
                PpoBatch batch, const PpoOptions& options, PpoStepStats& stats);

/// Epoch `epoch` of ppo_update's objective on `batch` (the first reuses the sampling pass),
/// backpropagated: adds its gradient to the policy's. `stats` (may be null): its losses.
void ppo_backward(GoPolicy& policy, const GraphTensors& g, PpoBatch& batch,
                  const PpoOptions& options, std::int64_t epoch, PpoStepStats* stats);

class PpoTrainer {
 public:
  PpoTrainer(GoPolicy policy, torch::optim::Adam& optimizer, PpoOptions options,
             at::Generator generator);
  /// One PPO update on `task`: sample_batch(), then ppo_update().
  PpoStepStats step(PpoTask& task);
  /// Samples `samples_per_step` decisions of `task` from the policy (and simulates the
  /// greedy one), simulates them and scores them: the batch of one update.
  [[nodiscard]] PpoBatch sample_batch(PpoTask& task, PpoStepStats& stats);
  /// Shares the updates' simulations with the other members of `group` (null: alone):
  /// each member simulates its share of every batch and all of them score the whole batch
  /// alike, so every member takes the same update, the one a trainer alone takes.
  void share(LearnerGroup* group) { group_ = group; }
  /// The sampling generator (its state goes into training snapshots).
  [[nodiscard]] at::Generator& generator() { return gen_; }
  /// Simulations one update costs.
  [[nodiscard]] std::int64_t samples_per_update() const {
    return options_.samples_per_step + (options_.evaluate_greedy ? 1 : 0);
  }

 private:
  torch::Tensor sample_actions(const torch::Tensor& log_probs, const GraphTensors& g,
                               std::int64_t k);
  void draw(PpoTask& task, PpoBatch& batch);
  void draw_units(const GraphTensors& g, PpoBatch& batch);

  GoPolicy policy_;
  torch::optim::Adam* optimizer_;
  PpoOptions options_;
  at::Generator gen_;
  LearnerGroup* group_ = nullptr;
};

}  // namespace gopt::agents::go
