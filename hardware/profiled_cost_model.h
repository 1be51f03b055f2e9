// ProfiledCostModel: a profile-driven ("trace-driven") cost model for one graph. Its op
// times are the graph's own ops measured on a real backend; the simulator then predicts
// what placement, scheduling and communication do with them. This is how profile-driven
// simulators (FlexFlow's, Daydream) are validated, and what `gopt validate --op-times
// profiled` uses: it separates the simulator's error from the analytical cost model's.
//
//   auto base = make_cost_model(cluster);                  // calibrated profile
//   auto r = backend->execute(graph, core::Decision{});    // every op on device 0
//   ProfiledCostModel model(*base, r.op_time_s);           // measured on device 0
//   Seconds t = model.op_time(compiled, op, /*device=*/1); // measured + executor overhead
#pragma once

#include <string>
#include <vector>

#include "hardware/cost_model.h"

namespace gopt::hardware {

/// Op times measured for one graph, with a base model for everything else.
///
/// `op_time(graph, op, device)` is the measured kernel time of `op` plus the device's
/// executor overhead (DeviceSpec::executor_overhead_s) when `op` was measured and `device`
/// has the type of the device it was measured on; otherwise the base model's time. The
/// measured times are what the backend reports per op (ExecutionResult::op_time_s): the
/// kernel alone, inside the graph's own step (so with the caches and neighbours it has
/// there), without the executor's work around it (taking the op from the ready queue,
/// counting down its consumers' inputs). Calibration measures that work as the step time
/// less the sum of these same per-op times (`executor_overhead_s`), so adding it here
/// charges the executor exactly once per op, as CalibratedCostModel does. No-kernel ops
/// measure 0 and take only the executor overhead.
///
/// Fused kernels and links are the base model's. A measured time applies to every device
/// of the measured device's type, which keeps the CostModel contract (times depend on the
/// device only through its type).
///
/// The model is built for one graph: op_time on a graph with another number of ops is a
/// bug (GOPT_ASSERT, std::logic_error). The base model (and its cluster) must outlive it.
class ProfiledCostModel final : public CostModel {
 public:
  /// `measured_op_time_s[op]`: kernel time of op `op` in seconds, measured on
  /// `measured_device`; NaN, infinite or negative = not measured (the base model's time).
  ProfiledCostModel(const CostModel& base, std::vector<Seconds> measured_op_time_s,
                    DeviceId measured_device = 0);

  [[nodiscard]] std::string name() const override { return "profiled"; }
  [[nodiscard]] Seconds op_time(const core::CompiledGraph& graph, core::NodeId op,
                                DeviceId device) const override;
  [[nodiscard]] Seconds fused_time(const core::CompiledGraph& graph, const core::NodeId* members,
                                   const Seconds* member_op_times_s, std::size_t count,
                                   Bytes memory_traffic_bytes, DeviceId device) const override;
  [[nodiscard]] LinkCost link_cost(LinkId link) const override;

  /// Whether op `op` has a measured time.
  [[nodiscard]] bool measured(core::NodeId op) const;
  /// Number of ops with a measured time.
  [[nodiscard]] core::NodeId num_measured() const;
  /// The number of ops of the graph the model was built for.
  [[nodiscard]] core::NodeId num_nodes() const {
    return static_cast<core::NodeId>(measured_op_time_s_.size());
  }
  [[nodiscard]] const CostModel& base() const { return *base_; }

 private:
  const CostModel* base_;
  std::vector<Seconds> measured_op_time_s_;  ///< < 0 = not measured
  int measured_type_;                        ///< Cluster::device_type_index of the measured device
};

}  // namespace gopt::hardware
