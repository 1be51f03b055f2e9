#include "hardware/cost_model.h"

#include <algorithm>
#include <cmath>
#include <utility>
#include <vector>

#include "core/errors.h"
#include "hardware/network_model.h"

namespace gopt::hardware {

Seconds CostModel::transfer_time(Bytes bytes, DeviceId src, DeviceId dst) const {
  return compose_route(cluster_->route(src, dst), *this).transfer_time_s(bytes);
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

Seconds RooflineCostModel::kernel_time(const core::CompiledGraph& graph, core::NodeId op,
                                       DeviceId device) const {
  const DeviceSpec& spec = cluster().device(device);
  auto v = static_cast<std::size_t>(op);
  auto kind = static_cast<std::size_t>(graph.kind()[v]);
  if (spec.no_kernel[kind]) return 0;
  double traffic = static_cast<double>(graph.bytes_read()[v] + graph.bytes_written()[v]);
  Seconds memory_s = traffic / (spec.memory_bandwidth_bytes_per_s * spec.memory_efficiency[kind]);
  return spec.launch_overhead_s + std::max(compute_time(graph, op, device), memory_s);
}

Seconds RooflineCostModel::op_time(const core::CompiledGraph& graph, core::NodeId op,
                                   DeviceId device) const {
  return cluster().device(device).executor_overhead_s + kernel_time(graph, op, device);
}

Seconds RooflineCostModel::fused_time(const core::CompiledGraph& graph, const core::NodeId* members,
                                      const Seconds* /*member_op_times_s*/, std::size_t count,
                                      Bytes memory_traffic_bytes, DeviceId device) const {
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
  if (!any_kernel) return spec.executor_overhead_s;
  Seconds memory_s = static_cast<double>(memory_traffic_bytes) /
                     (spec.memory_bandwidth_bytes_per_s * memory_efficiency);
  return spec.executor_overhead_s + spec.launch_overhead_s + std::max(compute_s, memory_s);
}

LinkCost RooflineCostModel::link_cost(LinkId link) const {
  const LinkSpec& spec = cluster().link(link);
  return LinkCost{spec.latency_s, 1.0 / spec.bandwidth_bytes_per_s};
}

CalibratedCostModel::CalibratedCostModel(const Cluster& cluster, RooflineOptions options)
    : CostModel(cluster),
      roofline_(cluster, options),
      dtype_(options.compute_dtype.value_or(cluster.compute_dtype())) {
  shapes_.resize(static_cast<std::size_t>(cluster.num_devices()));
  for (DeviceId d = 0; d < cluster.num_devices(); ++d) {
    const DeviceSpec& spec = cluster.device(d);
    for (const auto& [type, table] : spec.op_type_shapes) {
      core::OpKind kind = core::classify_op_type(type);
      auto& points = shapes_[static_cast<std::size_t>(d)][type];
      for (std::size_t i = 0; i < table.time_s.size(); ++i) {
        Seconds curve = curve_time(spec, type, kind, table.flops[i], table.bytes[i]);
        if (!(curve > 0) || !(table.time_s[i] > 0)) continue;
        points.push_back(ShapePoint{std::log1p(table.flops[i]),
                                    std::log1p(static_cast<double>(table.bytes[i])),
                                    std::log(table.time_s[i] / curve)});
      }
    }
  }
}

Seconds CalibratedCostModel::curve_time(const DeviceSpec& spec, const std::string& op_type,
                                        core::OpKind kind, core::Flops flops, Bytes bytes) const {
  auto k = static_cast<std::size_t>(kind);
  Seconds compute_s = flops / (spec.peak_flops_per_s[static_cast<std::size_t>(dtype_)] *
                               spec.compute_efficiency[k]);
  Seconds memory_s =
      static_cast<double>(bytes) / (spec.memory_bandwidth_bytes_per_s * spec.memory_efficiency[k]);
  double work = std::max(compute_s, memory_s);
  auto it = spec.op_type_curves.find(op_type);
  if (it != spec.op_type_curves.end()) return it->second.at(work);
  const TimeCurve& by_kind = spec.kind_curves[k];
  if (!by_kind.empty()) return by_kind.at(work);
  return spec.launch_overhead_s + work;
}

Seconds CalibratedCostModel::op_time(const core::CompiledGraph& graph, core::NodeId op,
                                     DeviceId device) const {
  const DeviceSpec& spec = cluster().device(device);
  auto v = static_cast<std::size_t>(op);
  core::OpKind kind = graph.kind()[v];
  if (spec.no_kernel[static_cast<std::size_t>(kind)]) return spec.executor_overhead_s;
  core::Flops flops = graph.flops()[v];
  Bytes bytes = graph.bytes_read()[v] + graph.bytes_written()[v];
  const std::string& type = graph.op_types()[v];
  Seconds kernel = curve_time(spec, type, kind, flops, bytes);
  const auto& by_type = shapes_[static_cast<std::size_t>(device)];
  if (auto it = by_type.find(type); it != by_type.end() && !it->second.empty()) {
    // Inverse-squared-distance blend of the nearest measured shapes' corrections, against
    // a prior of none at distance kShapeReach.
    double x = std::log1p(flops), y = std::log1p(static_cast<double>(bytes));
    std::vector<std::pair<double, double>> near;  // squared distance, log ratio
    near.reserve(it->second.size());
    for (const auto& p : it->second) {
      double dx = p.log_flops - x, dy = p.log_bytes - y;
      near.emplace_back(dx * dx + dy * dy, p.log_ratio);
    }
    auto count = std::min<std::size_t>(near.size(), kShapeNeighbours);
    std::partial_sort(near.begin(), near.begin() + static_cast<std::ptrdiff_t>(count), near.end());
    double weights = 1.0 / (kShapeReach * kShapeReach), sum = 0;
    for (std::size_t i = 0; i < count; ++i) {
      double w = 1.0 / (near[i].first + 1e-6);
      weights += w;
      sum += w * near[i].second;
    }
    kernel *= std::exp(sum / weights);
  }
  return spec.executor_overhead_s + kernel;
}

Seconds CalibratedCostModel::fused_time(const core::CompiledGraph& graph,
                                        const core::NodeId* members,
                                        const Seconds* member_op_times_s, std::size_t count,
                                        Bytes memory_traffic_bytes, DeviceId device) const {
  const DeviceSpec& spec = cluster().device(device);
  if (spec.fused_loop_ratio.empty()) {
    return roofline_.fused_time(graph, members, member_op_times_s, count, memory_traffic_bytes,
                                device);
  }
  // As the CPU backend runs a group: one executor overhead, each member's kernel, the
  // members in fused loops at their measured ratio.
  Seconds t = spec.executor_overhead_s;
  for (std::size_t i = 0; i < count; ++i) {
    const auto v = static_cast<std::size_t>(members[i]);
    const core::OpKind kind = graph.kind()[v];
    if (spec.no_kernel[static_cast<std::size_t>(kind)]) continue;
    const Seconds kernel = member_op_times_s[i] - spec.executor_overhead_s;
    t += runs_in_fused_loop(kind) ? kernel * spec.fused_loop_ratio.at(graph.bytes_written()[v])
                                  : kernel;
  }
  return t;
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
