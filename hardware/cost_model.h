// CostModel: how long an op, a fused kernel or a transfer takes on a cluster. The
// simulator takes one as a parameter (so tests can pass a lookup table of costs) and asks
// it once per (graph, cluster), caching the answers; it never computes times itself.
// RooflineCostModel is the default: launch overhead + max(compute time, memory time) with
// per-op-kind efficiency factors from the hardware profile.
//
//   Cluster cluster = load_profile("p100x4_pcie");
//   RooflineCostModel model(cluster);
//   Seconds t = model.op_time(graph, op, /*device=*/0);
//   Seconds x = model.transfer_time(1 << 20, /*src=*/0, /*dst=*/1);
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/compiled_graph.h"
#include "core/options.h"
#include "hardware/cluster.h"

namespace gopt::hardware {

/// Cost of moving data over one directed link: `latency_s + bytes * seconds_per_byte`.
struct LinkCost {
  Seconds latency_s = 0;
  double seconds_per_byte = 0;
};

/// Interface of every cost model. A model is built for one cluster and keeps a reference
/// to it: the cluster must outlive the model.
///
/// Contract: times are deterministic, finite and >= 0, and depend on the device only
/// through its type (Cluster::device_type_index), because the simulator caches one column
/// per device type.
class CostModel {
 public:
  explicit CostModel(const Cluster& cluster) : cluster_(&cluster) {}
  virtual ~CostModel() = default;
  CostModel(const CostModel&) = default;
  CostModel& operator=(const CostModel&) = default;

  /// Short name for reports ("roofline", "lookup").
  [[nodiscard]] virtual std::string name() const = 0;

  /// Time of op `op` run alone as one kernel on `device`, in seconds.
  [[nodiscard]] virtual Seconds op_time(const core::CompiledGraph& graph, core::NodeId op,
                                        DeviceId device) const = 0;

  /// Time of a fused kernel running `count` ops (`members`, in topological order) as one
  /// launch on `device`. `memory_traffic_bytes` is what the kernel reads and writes in
  /// device memory: the members' traffic without the intermediate tensors that stay
  /// on chip (the simulator computes it, see docs/simulator.md). `member_op_times_s` holds
  /// each member's op_time on `device` as the caller has it (the simulator's cached
  /// column), so that a model building on op times need not compute them again.
  [[nodiscard]] virtual Seconds fused_time(const core::CompiledGraph& graph,
                                           const core::NodeId* members,
                                           const Seconds* member_op_times_s, std::size_t count,
                                           Bytes memory_traffic_bytes, DeviceId device) const = 0;

  /// Latency and per-byte cost of one direction of link `link`.
  [[nodiscard]] virtual LinkCost link_cost(LinkId link) const = 0;

  /// Uncontended time to send `bytes` from device `src` to device `dst` over the route,
  /// with the route held end to end (cut-through): the sum of the hops' latencies plus
  /// `bytes` at the slowest hop's rate, as NetworkModel composes it. 0 when src == dst.
  [[nodiscard]] Seconds transfer_time(Bytes bytes, DeviceId src, DeviceId dst) const;

  [[nodiscard]] const Cluster& cluster() const { return *cluster_; }

 private:
  const Cluster* cluster_;
};

/// Options of the roofline model; defaults come from the cluster's profile.
struct RooflineOptions {
  /// Element type FLOPs are charged at; empty = the profile's `compute_dtype`.
  GOPT_OPTION(std::optional<core::DType>, compute_dtype, {})
};

/// The roofline model:
///   op_time    = executor_overhead_s + launch_overhead_s
///                + max(flops / (peak[dtype] * compute_efficiency[kind]),
///                      (bytes_read + bytes_written) / (memory_bandwidth *
///                      memory_efficiency[kind]))
///   fused_time = executor_overhead_s + launch_overhead_s
///                + max(sum of the members' compute times,
///                      memory_traffic / (bandwidth * min member memory efficiency))
/// Ops whose kind launches no kernel (DeviceSpec::no_kernel) take only the executor
/// overhead (0 in datasheet profiles) and add nothing to a fused kernel, which pays the
/// executor overhead once. A link's cost is its latency and 1 / bandwidth.
class RooflineCostModel final : public CostModel {
 public:
  /// Throws InputError if the compute dtype has no positive peak on some device.
  explicit RooflineCostModel(const Cluster& cluster, RooflineOptions options = {});

  [[nodiscard]] std::string name() const override { return "roofline"; }
  [[nodiscard]] Seconds op_time(const core::CompiledGraph& graph, core::NodeId op,
                                DeviceId device) const override;
  [[nodiscard]] Seconds fused_time(const core::CompiledGraph& graph, const core::NodeId* members,
                                   const Seconds* member_op_times_s, std::size_t count,
                                   Bytes memory_traffic_bytes, DeviceId device) const override;
  [[nodiscard]] LinkCost link_cost(LinkId link) const override;

  /// The op's kernel alone: op_time without the executor overhead (0 for no-kernel kinds),
  /// in seconds.
  [[nodiscard]] Seconds kernel_time(const core::CompiledGraph& graph, core::NodeId op,
                                    DeviceId device) const;

  /// Compute-bound part of an op's time (no launch overhead), in seconds.
  [[nodiscard]] Seconds compute_time(const core::CompiledGraph& graph, core::NodeId op,
                                     DeviceId device) const;

 private:
  core::DType dtype_;
};

/// The calibrated model: an op's time is read from the measured time curve of its op type
/// on the device (DeviceSpec::op_type_curves), else of its kind (kind_curves), at the op's
/// roofline work (the roofline time without launch overhead, see TimeCurve); ops with
/// neither fall back to the roofline. Every op, no-kernel kinds included, also pays the
/// device's executor overhead (DeviceSpec::executor_overhead_s): curves hold kernel times
/// without it (calibration subtracts it, see calibration.h). An op type with a table of
/// measured shapes (DeviceSpec::op_type_shapes) has its curve time scaled by the measured
/// over curve ratio of the nearest measured shapes in (log FLOPs, log bytes), weighted by
/// inverse squared distance against a prior of no correction at distance kShapeReach: at a
/// measured shape the model returns the measured time, far from every one the curve's.
/// Curves capture what one roofline per kind cannot on a CPU: cache effects that make time
/// non-linear in size and very different kernels under one kind (tanh vs add). A fused
/// kernel, on a device with a measured FusedLoopRatio, costs as the CPU backend runs it: one
/// executor overhead plus each member's kernel time, those of members in fused loops
/// (runs_in_fused_loop) times the ratio at the bytes they write; without one, and links
/// always, as by the roofline.
class CalibratedCostModel final : public CostModel {
 public:
  explicit CalibratedCostModel(const Cluster& cluster, RooflineOptions options = {});

  [[nodiscard]] std::string name() const override { return "calibrated"; }
  [[nodiscard]] Seconds op_time(const core::CompiledGraph& graph, core::NodeId op,
                                DeviceId device) const override;
  [[nodiscard]] Seconds fused_time(const core::CompiledGraph& graph, const core::NodeId* members,
                                   const Seconds* member_op_times_s, std::size_t count,
                                   Bytes memory_traffic_bytes, DeviceId device) const override;
  [[nodiscard]] LinkCost link_cost(LinkId link) const override;

  /// Distance in natural-log units of (FLOPs, bytes) at which a measured shape's correction
  /// weighs as much as no correction (2: a factor e^2 in size).
  static constexpr double kShapeReach = 2.0;
  /// Measured shapes that correct one op's time: the nearest this many.
  static constexpr int kShapeNeighbours = 4;

 private:
  /// A measured shape: log(1 + FLOPs), log(1 + bytes), log(measured / curve time).
  struct ShapePoint {
    double log_flops = 0;
    double log_bytes = 0;
    double log_ratio = 0;
  };
  /// The op type's curve (or kind curve, or roofline) time of a kernel, no correction.
  [[nodiscard]] Seconds curve_time(const DeviceSpec& spec, const std::string& op_type,
                                   core::OpKind kind, core::Flops flops, Bytes bytes) const;

  RooflineCostModel roofline_;
  core::DType dtype_;
  /// Per device: op type -> its measured shapes.
  std::vector<std::map<std::string, std::vector<ShapePoint>>> shapes_;
};

/// The cost model a profile calls for: CalibratedCostModel when some device has measured
/// time curves (a `gopt calibrate` profile), RooflineCostModel otherwise.
[[nodiscard]] std::unique_ptr<CostModel> make_cost_model(const Cluster& cluster);

}  // namespace gopt::hardware
