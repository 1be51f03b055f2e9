#include "hardware/profiled_cost_model.h"

#include <algorithm>
#include <cmath>
#include <utility>

#include "core/errors.h"

namespace gopt::hardware {

ProfiledCostModel::ProfiledCostModel(const CostModel& base, std::vector<Seconds> measured_op_time_s,
                                     DeviceId measured_device)
    : CostModel(base.cluster()),
      base_(&base),
      measured_op_time_s_(std::move(measured_op_time_s)),
      measured_type_(0) {
  GOPT_ASSERT(measured_device >= 0 && measured_device < base.cluster().num_devices(),
              "the measured device " + std::to_string(measured_device) +
                  " is not a device of cluster '" + base.cluster().name() + "'");
  measured_type_ = base.cluster().device_type_index(measured_device);
  for (Seconds& t : measured_op_time_s_) {
    if (!std::isfinite(t) || t < 0) t = -1;
  }
}

bool ProfiledCostModel::measured(core::NodeId op) const {
  return op >= 0 && op < num_nodes() && measured_op_time_s_[static_cast<std::size_t>(op)] >= 0;
}

core::NodeId ProfiledCostModel::num_measured() const {
  return static_cast<core::NodeId>(std::count_if(
      measured_op_time_s_.begin(), measured_op_time_s_.end(), [](Seconds t) { return t >= 0; }));
}

Seconds ProfiledCostModel::op_time(const core::CompiledGraph& graph, core::NodeId op,
                                   DeviceId device) const {
  GOPT_ASSERT(graph.num_nodes() == num_nodes(),
              "ProfiledCostModel was built from the op times of a graph of " +
                  std::to_string(num_nodes()) + " ops but was asked about graph '" + graph.name() +
                  "' of " + std::to_string(graph.num_nodes()) + " ops");
  Seconds measured_s = measured_op_time_s_[static_cast<std::size_t>(op)];
  if (measured_s < 0 || cluster().device_type_index(device) != measured_type_) {
    return base_->op_time(graph, op, device);
  }
  return cluster().device(device).executor_overhead_s + measured_s;
}

Seconds ProfiledCostModel::fused_time(const core::CompiledGraph& graph, const core::NodeId* members,
                                      const Seconds* member_op_times_s, std::size_t count,
                                      Bytes memory_traffic_bytes, DeviceId device) const {
  return base_->fused_time(graph, members, member_op_times_s, count, memory_traffic_bytes, device);
}

LinkCost ProfiledCostModel::link_cost(LinkId link) const { return base_->link_cost(link); }

}  // namespace gopt::hardware
