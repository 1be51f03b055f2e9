// Helpers for simulator tests: a lookup-table cost model (FlexFlow-style, so makespans can
// be computed by hand) and small clusters built in code.
#pragma once

#include <cmath>
#include <map>
#include <string>
#include <vector>

#include "core/compiled_graph.h"
#include "hardware/cluster.h"
#include "hardware/cost_model.h"

namespace gopt::simulator::testing {

/// Op times from a table (by op id, same on every device); a fused kernel costs
/// `launch_s` plus the sum of its members' (time - launch_s); links cost latency + bytes /
/// bandwidth from the cluster.
class LookupCostModel final : public hardware::CostModel {
 public:
  LookupCostModel(const hardware::Cluster& cluster, std::vector<double> times_s,
                  double launch_s = 0)
      : CostModel(cluster), times_s_(std::move(times_s)), launch_s_(launch_s) {}

  std::string name() const override { return "lookup"; }
  Seconds op_time(const core::CompiledGraph& /*graph*/, core::NodeId op,
                  core::DeviceId /*device*/) const override {
    return times_s_.at(static_cast<std::size_t>(op));
  }
  Seconds fused_time(const core::CompiledGraph& /*graph*/, const core::NodeId* members,
                     const Seconds* /*member_op_times_s*/, std::size_t count,
                     core::Bytes /*traffic*/, core::DeviceId /*device*/) const override {
    double total = launch_s_;
    for (std::size_t i = 0; i < count; ++i) {
      total += times_s_.at(static_cast<std::size_t>(members[i])) - launch_s_;
    }
    return total;
  }
  hardware::LinkCost link_cost(hardware::LinkId link) const override {
    const auto& spec = cluster().link(link);
    return {spec.latency_s, 1.0 / spec.bandwidth_bytes_per_s};
  }

 private:
  std::vector<double> times_s_;
  double launch_s_;
};

/// A device whose numbers do not matter to a lookup cost model.
inline hardware::DeviceSpec test_device(const std::string& name,
                                        core::Bytes capacity_bytes = 1LL << 40, int streams = 1) {
  return hardware::DeviceSpec(name, "test")
      .peak_flops(core::DType::kFloat32, 1e3)
      .memory_bandwidth(100)
      .memory_capacity(capacity_bytes)
      .streams(streams);
}

/// `num_devices` devices with a direct link between every pair (a full mesh), each link
/// with the given bandwidth and latency.
/// `copy_engine` false: every device performs its incoming copies on a compute stream.
inline hardware::Cluster mesh_cluster(int num_devices, double bandwidth_bytes_per_s,
                                      double latency_s, core::Bytes capacity_bytes = 1LL << 40,
                                      int streams = 1, bool copy_engine = true) {
  hardware::ClusterSpec spec;
  spec.with_name("mesh");
  for (int d = 0; d < num_devices; ++d) {
    spec.add_device(
        test_device("gpu" + std::to_string(d), capacity_bytes, streams).copy_engine(copy_engine));
  }
  for (int a = 0; a < num_devices; ++a) {
    for (int b = a + 1; b < num_devices; ++b) {
      spec.add_link(hardware::LinkSpec("gpu" + std::to_string(a), "gpu" + std::to_string(b))
                        .bandwidth(bandwidth_bytes_per_s)
                        .latency(latency_s));
    }
  }
  return hardware::Cluster::build(spec, "test");
}

}  // namespace gopt::simulator::testing
