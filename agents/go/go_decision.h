// From a GO policy's actions to a core::Decision: per-task actions by topological position
// become placement, priorities and fusion by node, with the tasks the policy does not decide
// taken from a base decision. Shared by PPO's sampling (go_ppo.h), the zero-shot memory
// repair (go_memory_repair.h) and the agents' greedy decisions.
#pragma once

#include <torch/torch.h>

#include <cstdint>

#include "agents/environment.h"
#include "agents/go/go_features.h"
#include "agents/go/go_model.h"

namespace gopt::agents::go {

/// What a decision keeps for the tasks the policy does not decide (multi-task GO's
/// single-task variants keep TensorFlow's default for the others).
struct DecisionBase {
  core::Decision decision;  ///< placement / priority / fusion used when not decided
  /// Fusion not decided: XLA-style rule-based fusion (agents/baselines/tf_default.h) for the
  /// decision's placement instead of `decision.fusion`.
  bool xla_fusion = false;
  /// Priorities not decided: critical-path priorities (agents/baselines/list_scheduling.h)
  /// for the decision's placement instead of `decision.priority`.
  bool critical_path_order = false;
};

/// Per-task actions, by topological position ([N] int64; undefined: not decided).
struct TaskActions {
  torch::Tensor placement;
  torch::Tensor priority;
  torch::Tensor fusion;

  [[nodiscard]] torch::Tensor& of(GoTask task);
  [[nodiscard]] const torch::Tensor& of(GoTask task) const;
};

/// Turns per-position device choices into a Decision (colocation applied).
[[nodiscard]] core::Decision placement_decision(const torch::Tensor& devices_by_position,
                                                const GraphTensors& tensors,
                                                const core::CompiledGraph& graph);

/// Turns per-task actions into a Decision: decided fields from `actions` (placement with
/// colocation applied, priority levels as priorities, fusion levels as fusion priorities),
/// the others from `base`.
[[nodiscard]] core::Decision task_decision(const TaskActions& actions, const GraphTensors& tensors,
                                           const Problem& problem, const DecisionBase& base);

/// The greedy (argmax) decision of `policy` for `problem`.
[[nodiscard]] core::Decision greedy_decision(GoPolicy& policy, const GraphTensors& tensors,
                                             const Problem& problem, const DecisionBase& base = {});

/// The exploration block for a graph of `n` nodes on `devices` devices: `block`
/// (PpoOptions::exploration_block), but at least 4 blocks per device, so that a small graph
/// is not placed whole on one device. Sampling and the memory repair group ops by the same
/// blocks.
[[nodiscard]] std::int64_t exploration_block_size(std::int64_t block, std::int64_t n,
                                                  std::int64_t devices);

}  // namespace gopt::agents::go
