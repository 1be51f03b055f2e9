#include "hardware/cost_model.h"

#include <algorithm>

#include "core/errors.h"

namespace gopt::hardware {

Seconds CostModel::transfer_time(Bytes bytes, DeviceId src, DeviceId dst) const {
  Seconds latency_s = 0;
  double seconds_per_byte = 0;
  for (Hop hop : cluster_->route(src, dst)) {
    LinkCost cost = link_cost(hop.link);
    latency_s += cost.latency_s;
    seconds_per_byte = std::max(seconds_per_byte, cost.seconds_per_byte);
  }
  return latency_s + static_cast<double>(bytes) * seconds_per_byte;
}

RooflineCostModel::RooflineCostModel(const Cluster& cluster, RooflineOptions options)
    : CostModel(cluster), dtype_(options.compute_dtype.value_or(cluster.compute_dtype())) {
  for (DeviceId d = 0; d < cluster.num_devices(); ++d) {
    if (!(cluster.device(d).peak_flops_per_s[static_cast<std::size_t>(dtype_)] > 0)) {
      throw core::InputError(cluster.name(),
                             "devices[" + std::to_string(d) + "].peak_flops_per_s." +
                                 std::string(core::to_string(dtype_)),
                             "the cost model charges FLOPs at " +
                                 std::string(core::to_string(dtype_)) + " but device '" +
                                 cluster.device(d).name + "' has no positive peak for it");
    }
  }
}

Seconds RooflineCostModel::compute_time(const core::CompiledGraph& graph, core::NodeId op,
                                        DeviceId device) const {
  const DeviceSpec& spec = cluster().device(device);
  auto v = static_cast<std::size_t>(op);
  auto kind = static_cast<std::size_t>(graph.kind()[v]);
  if (spec.no_kernel[kind]) return 0;
  return graph.flops()[v] /
         (spec.peak_flops_per_s[static_cast<std::size_t>(dtype_)] * spec.compute_efficiency[kind]);
}

Seconds RooflineCostModel::op_time(const core::CompiledGraph& graph, core::NodeId op,
                                   DeviceId device) const {
  const DeviceSpec& spec = cluster().device(device);
  auto v = static_cast<std::size_t>(op);
  auto kind = static_cast<std::size_t>(graph.kind()[v]);
  if (spec.no_kernel[kind]) return 0;
  double traffic = static_cast<double>(graph.bytes_read()[v] + graph.bytes_written()[v]);
  Seconds memory_s = traffic / (spec.memory_bandwidth_bytes_per_s * spec.memory_efficiency[kind]);
  return spec.launch_overhead_s + std::max(compute_time(graph, op, device), memory_s);
}

Seconds RooflineCostModel::fused_time(const core::CompiledGraph& graph, const core::NodeId* members,
                                      std::size_t count, Bytes memory_traffic_bytes,
                                      DeviceId device) const {
  const DeviceSpec& spec = cluster().device(device);
  Seconds compute_s = 0;
  double memory_efficiency = 1.0;
  bool any_kernel = false;
  for (std::size_t i = 0; i < count; ++i) {
    auto kind = static_cast<std::size_t>(graph.kind()[static_cast<std::size_t>(members[i])]);
    if (spec.no_kernel[kind]) continue;
    any_kernel = true;
    compute_s += compute_time(graph, members[i], device);
    memory_efficiency = std::min(memory_efficiency, spec.memory_efficiency[kind]);
  }
  if (!any_kernel) return 0;
  Seconds memory_s = static_cast<double>(memory_traffic_bytes) /
                     (spec.memory_bandwidth_bytes_per_s * memory_efficiency);
  return spec.launch_overhead_s + std::max(compute_s, memory_s);
}

LinkCost RooflineCostModel::link_cost(LinkId link) const {
  const LinkSpec& spec = cluster().link(link);
  return LinkCost{spec.latency_s, 1.0 / spec.bandwidth_bytes_per_s};
}

CalibratedCostModel::CalibratedCostModel(const Cluster& cluster, RooflineOptions options)
    : CostModel(cluster), roofline_(cluster, options) {}

Seconds CalibratedCostModel::op_time(const core::CompiledGraph& graph, core::NodeId op,
                                     DeviceId device) const {
  const DeviceSpec& spec = cluster().device(device);
  auto v = static_cast<std::size_t>(op);
  core::OpKind kind = graph.kind()[v];
  if (spec.no_kernel[static_cast<std::size_t>(kind)]) return 0;
  Seconds roofline = roofline_.op_time(graph, op, device);
  double work = roofline - spec.launch_overhead_s;
  auto it = spec.op_type_curves.find(graph.op_types()[v]);
  if (it != spec.op_type_curves.end()) return it->second.at(work);
  const TimeCurve& by_kind = spec.kind_curves[static_cast<std::size_t>(kind)];
  if (!by_kind.empty()) return by_kind.at(work);
  return roofline;
}

Seconds CalibratedCostModel::fused_time(const core::CompiledGraph& graph,
                                        const core::NodeId* members, std::size_t count,
                                        Bytes memory_traffic_bytes, DeviceId device) const {
  return roofline_.fused_time(graph, members, count, memory_traffic_bytes, device);
}

LinkCost CalibratedCostModel::link_cost(LinkId link) const { return roofline_.link_cost(link); }

std::unique_ptr<CostModel> make_cost_model(const Cluster& cluster) {
  for (DeviceId d = 0; d < cluster.num_devices(); ++d) {
    const auto& spec = cluster.device(d);
    bool curves = !spec.op_type_curves.empty() ||
                  std::any_of(spec.kind_curves.begin(), spec.kind_curves.end(),
                              [](const TimeCurve& c) { return !c.empty(); });
    if (curves) return std::make_unique<CalibratedCostModel>(cluster);
  }
  return std::make_unique<RooflineCostModel>(cluster);
}

}  // namespace gopt::hardware
