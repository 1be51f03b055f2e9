// Inspecting a trained GO policy without LibTorch in the interface (so `gopt` commands
// outside agents/ can call it): how its placement distribution varies over the ops of a
// graph. A policy that ignores the op it places gives every op the same distribution
// (docs/design-decisions.md, "GO: learning").
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/compiled_graph.h"

namespace gopt::agents::go {

/// How a trained policy's placement distribution varies over the ops of a graph.
struct PlacementSpread {
  std::string options;                   ///< the policy options recorded in the file
  std::int64_t updates = 0;              ///< PPO updates the policy had when written
  std::vector<double> mean_probability;  ///< per device: its probability, averaged over ops
  std::vector<double> logit_spread;      ///< per device: std over ops of its logit (no priors)
  std::vector<std::int64_t> argmax_ops;  ///< per device: ops whose most likely device it is
  /// With GoPolicyOptions::unit_gate: the gate's mean over ops and the share of ops that
  /// weigh their unit's distribution above their own (gate > 1/2). Absent without a gate.
  std::optional<double> unit_gate_mean;
  std::optional<double> ops_following_unit;
};

/// Loads the policy of a GO checkpoint (go_pretrain) or training snapshot (`gopt run`'s
/// `<results>.snapshots/`) and measures its placement distribution on `graph` for a
/// cluster of `devices` devices, without the multi-task priors (the head's own logits).
/// A file that is neither, or a policy that does not decide placement, is an InputError
/// naming the file.
[[nodiscard]] PlacementSpread placement_spread(const std::string& path,
                                               const core::CompiledGraph& graph,
                                               std::int32_t devices);

}  // namespace gopt::agents::go
