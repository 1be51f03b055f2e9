// The GO agents (Zhou et al., NeurIPS 2020), all one policy (go_model.h) trained with PPO
// (go_ppo.h) on the simulator:
//   go_one        trained from scratch on one graph;
//   go_pretrain   trained on a set of graphs (the runner's training graphs), switching to
//                 the next batch of graphs every `switch_steps` updates, and writing a
//                 checkpoint;
//   go_finetune   loads a checkpoint and fine-tunes on a held-out graph (at most
//                 `finetune_steps` updates, 50 by default as in the paper);
//   go_zero_shot  loads a checkpoint and places a held-out graph greedily, no training (a
//                 placement that runs out of memory is moved into memory, `memory_repairs`).
// Multi-task GO (paper section 3.3, issue #9) is the same agent with more tasks: one
// recurrent attention layer per task (go_model.h), trained from scratch on one graph on the
// joint reward; the tasks it does not decide keep TensorFlow's default (tf_default_base):
//   go_placement, go_scheduling, go_fusion                   one task each;
//   go_placement_scheduling, go_placement_fusion,
//   go_scheduling_fusion                                     two tasks;
//   go_multitask                                             all three.
// The parts: the policy (go_model.h), PPO (go_ppo.h), the training loop and its callbacks
// (go_training.h), the checkpoint and snapshot files (go_checkpoint.h), zero-shot's memory
// repair (go_memory_repair.h); the agents built from them: go_one.cpp, go_transfer.cpp.
// Options, defaults and their reasoning: docs/agents.md "GO".
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

#include "agents/go/go_model.h"
#include "agents/go/go_ppo.h"
#include "agents/registry.h"
#include "agents/torch_utils.h"
#include "core/options.h"

namespace gopt::agents::go {

enum class GoMode { kOne, kPretrain, kFinetune, kZeroShot };

/// The default learning rate of the agents that search around a given start for a short
/// budget: go_finetune (a pretrained policy, at most 50 updates) and the multi-task agents
/// (the default pipeline's priors), and go_one's on a graph too large for one device
/// (GoOptions::oversize_learning_rate). Training from scratch otherwise uses
/// PpoOptions::learning_rate, 3e-4 (docs/design-decisions.md "GO: learning").
inline constexpr double kSearchLearningRate = 3e-3;

/// go_one's default self-imitation weight (PpoOptions::imitation_coef; the other agents
/// default to 0). Measured in docs/design-decisions.md, "GO: learning".
inline constexpr double kGoOneImitation = 0.3;

/// The greedy placements go_zero_shot and go_finetune start from (their option
/// `granularity`): the checkpoint's own decisions (per op unless it was trained per unit),
/// whole decision units (each on the argmax of its ops' mean logits), or the faster of the
/// two, each simulated and moved into memory.
enum class Granularity { kPolicy, kUnit, kBest };

/// Whether decision units split off their layer's weight gradients (GoOptions::
/// weight_gradient_units, make_graph_tensors' split_below): never, on every graph, or on a
/// graph with fewer units than the cluster has devices, where whole units leave devices idle.
enum class WeightGradientUnits { kOff, kAlways, kFewerUnitsThanDevices };

/// The order ready ops run in when the agent decides no priorities (GoOptions::order): the
/// executor's (topological rank, the paper's setting) or critical-path list scheduling on
/// each placement (agents::critical_path_priorities, a system with a smarter scheduler).
enum class ExecutorOrder { kExecutor, kCriticalPath };

/// Every option of the GO agents. The defaults are go_one's, the options `gopt run` gives
/// go_one when a config sets none; the other GO agents start from them and change what
/// differs (go_agent_defaults, go_registration.h).
struct GoOptions {
  GOPT_OPTION(GoMode, mode, GoMode::kOne)
  GOPT_OPTION(GoPolicyOptions, policy, {})
  /// PPO's options, with go_one's self-imitation (kGoOneImitation; PpoOptions alone does
  /// not self-imitate).
  GOPT_OPTION(PpoOptions, ppo, PpoOptions().with_imitation_coef(kGoOneImitation))
  GOPT_OPTION(std::int64_t, graphs_per_batch, 0)  ///< pretraining: graphs trained together (0: all)
  GOPT_OPTION(std::int64_t, switch_steps,
              1000)  ///< pretraining: updates before the next batch (paper)
  /// Pretraining: graphs of the batch trained by each update, the gradient their mean
  /// (TrainingLoop::graphs_per_update); what data-parallel members split among them.
  GOPT_OPTION(std::int64_t, graphs_per_update, 1)
  GOPT_OPTION(std::int64_t, finetune_steps,
              50)  ///< fine-tuning: at most this many updates (paper: <50)
  /// Pretraining with validation graphs (TransferableAgent::set_validation): updates between
  /// two checks of the policy's zero-shot placements on them.
  GOPT_OPTION(std::int64_t, validate_every, 100)
  /// Zero-shot: at most this many re-placements to move a greedy placement that runs out of
  /// memory into memory (memory_fitting_decision; 0: the greedy placement as it is).
  GOPT_OPTION(std::int64_t, memory_repairs, 20)
  /// Zero-shot and fine-tuning: the greedy placements they start from (per op as the
  /// checkpoint decides, per decision unit, or the faster of both); fine-tuning runs its
  /// unit phase (unit_phase) only from a per-unit start. kPolicy: fine-tuning starts from
  /// no placement and runs unit_phase as given.
  GOPT_OPTION(Granularity, granularity, Granularity::kPolicy)
  /// GO-one: Adam learning rate on a graph that runs out of memory on one device, whose
  /// random start is mostly out-of-memory samples (docs/design-decisions.md "GO: learning"); 0: use
  /// ppo.learning_rate on every graph (the multi-task agents).
  GOPT_OPTION(double, oversize_learning_rate, kSearchLearningRate)
  /// Coarse to fine: the first this many updates decide per decision unit
  /// (GoPolicyOptions::unit_decisions), the rest per op, from the same network; the best
  /// decision found in either phase is kept (docs/agents.md "PPO", decision units). 0: off.
  GOPT_OPTION(std::int64_t, unit_phase, 0)
  /// Coarse to fine: the unit phase ends early, after update s, once the best step time after
  /// s updates is no lower than after s - unit_patience (CoarseToFine); 0: it runs all
  /// unit_phase updates.
  GOPT_OPTION(std::int64_t, unit_patience, 0)
  /// Coarse to fine: updates after the unit phase over which the ops' placement logits move
  /// from their unit's mean to their own (GoPolicyOptions::unit_blend, linearly), so that
  /// per-op sampling starts from the unit phase's placements. 0: at once.
  GOPT_OPTION(std::int64_t, unit_handover, 0)
  /// Decision units: a unit's weight gradients become a unit of their own, always or on a
  /// graph with fewer units than devices (docs/agents.md "PPO", decision units). Off: each
  /// layer is one unit with its gradients.
  GOPT_OPTION(WeightGradientUnits, weight_gradient_units, WeightGradientUnits::kOff)
  /// Order of ready ops when the policy decides no priorities (ExecutorOrder).
  GOPT_OPTION(ExecutorOrder, order, ExecutorOrder::kExecutor)
  /// Where the policy network runs (resolve_compute_device): auto (a GPU when LibTorch has
  /// CUDA and sees one, else the CPU), cpu or cuda. PPO's sampling and objective and the
  /// simulator stay on the CPU.
  GOPT_OPTION(ComputeDevice, device, ComputeDevice::kAuto)
  GOPT_OPTION(std::string, checkpoint, {})  ///< written (pretrain) or read (finetune, zero-shot)
  GOPT_OPTION(std::uint64_t, seed, 0)       ///< mixed with the problem seed
  GOPT_OPTION(std::string, name, {})        ///< agent name (empty: the mode's, e.g. go_one)
  /// What decisions keep for the tasks the policy does not decide (empty: every op on
  /// device 0, FIFO, no fusion). The multi-task variants use tf_default_base.
  GOPT_OPTION(std::function<DecisionBase(const Problem&)>, base, {})
  /// Logit bonus for the device the base decision gives each op (GraphTensors::
  /// placement_prior), when the policy decides placement and the base has a placement.
  /// 0: none, placement starts at random (go_one, and the multi-task default).
  GOPT_OPTION(double, placement_prior, 0)
  /// Logit bonus for one middle priority level for every op (GraphTensors::priority_prior):
  /// equal priorities, the FIFO schedule. 0: none, priorities start at random.
  GOPT_OPTION(double, priority_prior, 0)
  /// Logit bonus for the top fusion level on the ops the base's rule-based fusion fuses, and
  /// for level 0 on the others (GraphTensors::fusion_prior). 0: none.
  GOPT_OPTION(double, fusion_prior, 0)
};

/// TensorFlow's default pipeline as a DecisionBase: the human expert's placement (or every
/// op on device 0 with `single_device`), FIFO scheduling, XLA-style fusion for whatever
/// placement the decision has.
[[nodiscard]] DecisionBase tf_default_base(const Problem& problem, bool single_device = false);

/// Registers go_one, go_pretrain, go_finetune and go_zero_shot, and the multi-task agents
/// go_placement, go_scheduling, go_fusion, go_placement_scheduling, go_placement_fusion,
/// go_scheduling_fusion and go_multitask (issue #9).
void register_go(AgentRegistry& registry);

/// Creates the GO agent class `options.mode` names (go_one.cpp, go_transfer.cpp); register_go's
/// factories and the tests create GO agents through it.
[[nodiscard]] std::unique_ptr<Agent> make_go_agent(const GoOptions& options);

}  // namespace gopt::agents::go
