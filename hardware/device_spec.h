// What one accelerator and one interconnect link can do, as read from a hardware profile:
// the numbers a cost model needs (peak FLOP/s per dtype, memory bandwidth and capacity,
// launch overhead, per-op-kind efficiencies; link bandwidth and latency) and where they
// came from (provenance), so every simulated number can be traced to a datasheet or a
// measurement.
//
//   DeviceSpec gpu = DeviceSpec("gpu0", "p100").peak_flops(DType::kFloat32, 9.3e12)
//                        .memory_bandwidth(732e9).memory_capacity(16LL << 30);
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "core/op_kind.h"
#include "core/units.h"

namespace gopt::hardware {

using core::Bytes;
using core::BytesPerSecond;
using core::DeviceId;
using core::FlopsPerSecond;
using core::Seconds;

/// Number of core::DType values; dtypes index arrays `[0, kNumDTypes)`.
inline constexpr int kNumDTypes = static_cast<int>(core::DType::kBool) + 1;

/// Index of a link in a cluster: 0 .. num_links-1.
using LinkId = std::int32_t;

/// Where a profile's numbers come from.
struct Provenance {
  std::string kind;                  ///< "datasheet", "measured" or "estimate"
  std::string date;                  ///< when the numbers were taken, ISO 8601
  std::string machine;               ///< the machine measured or described
  std::vector<std::string> sources;  ///< datasheets, papers, tools (one per entry)
  std::string notes;                 ///< fitted constants, caveats
};

/// Measured time of one op type (or kind) as a function of its *roofline work*: the time
/// the device's roofline (peak, bandwidth, per-kind efficiencies, without the launch
/// overhead) gives the op, so the curve corrects the roofline per op type rather than
/// replacing it (one number carries both FLOPs and bytes). Points are sorted by strictly
/// increasing work. Between points the time is interpolated linearly in log-log space;
/// below the first point it is the first time (launch-bound), above the last it grows in
/// proportion to work (throughput-bound).
struct TimeCurve {
  std::vector<double> work;     ///< roofline seconds, > 0, strictly increasing
  std::vector<Seconds> time_s;  ///< measured seconds per op, >= 0

  [[nodiscard]] bool empty() const { return work.empty(); }
  /// The interpolated time at `w`.
  [[nodiscard]] Seconds at(double w) const;
  bool operator==(const TimeCurve& o) const { return work == o.work && time_s == o.time_s; }
};

/// Measured kernel times of one op type at the shapes calibration ran: a lookup table over
/// (FLOPs, bytes read + written), which two numbers tell apart the shapes of one op type
/// (a [16 x 512] x [512 x 1024] product from a [64 x 256] x [256 x 512] one of the same
/// FLOPs). The calibrated cost model reproduces these times at these shapes and blends
/// them into the op type's time curve nearby (cost_model.h). Entries are parallel arrays.
struct ShapeTable {
  std::vector<core::Flops> flops;
  std::vector<Bytes> bytes;
  std::vector<Seconds> time_s;  ///< kernel time, without the executor overhead

  [[nodiscard]] bool empty() const { return time_s.empty(); }
  bool operator==(const ShapeTable& o) const {
    return flops == o.flops && bytes == o.bytes && time_s == o.time_s;
  }
};

/// True for the op kinds the CPU backend computes inside a fused group's fused loops
/// (hardware/backend/fused_kernel.h): elementwise ops, and reshapes as views. The other
/// members of a fused group run their own kernels inside it. The calibrated cost model
/// charges FusedLoopRatio to these kinds only.
[[nodiscard]] constexpr bool runs_in_fused_loop(core::OpKind kind) {
  return kind == core::OpKind::kElementwise || kind == core::OpKind::kReshape;
}

/// Measured cost of an elementwise op inside a fused loop over its cost alone (kernel times,
/// without the executor overhead), against the bytes the op writes: below 1 where fusion
/// saves (one dispatch for the loop, intermediates kept in cache), above 1 where a fused
/// loop is slower than the library's own kernel. Calibrated profiles of the CPU backend
/// hold it (`gopt calibrate`, docs/hardware-backend.md "Fusion"); empty otherwise, and then
/// fused kernels are costed by the roofline. Interpolated linearly in log bytes, constant
/// beyond the first and last points.
struct FusedLoopRatio {
  std::vector<Bytes> bytes;   ///< bytes written by the op, > 0, strictly increasing
  std::vector<double> ratio;  ///< > 0

  [[nodiscard]] bool empty() const { return bytes.empty(); }
  /// The interpolated ratio at `written` bytes.
  [[nodiscard]] double at(Bytes written) const;
  bool operator==(const FusedLoopRatio& o) const { return bytes == o.bytes && ratio == o.ratio; }
};

/// One accelerator. Devices with the same `type` must have identical numbers: cost models
/// and the simulator compute op times once per type.
struct DeviceSpec {
  std::string name;  ///< unique in the cluster, e.g. "gpu0"
  std::string type;  ///< e.g. "p100_pcie_16gb"
  /// Peak arithmetic throughput per element type, FLOP/s; 0 = not supported.
  std::array<FlopsPerSecond, kNumDTypes> peak_flops_per_s{};
  BytesPerSecond memory_bandwidth_bytes_per_s = 0;  ///< peak device-memory bandwidth
  Bytes memory_capacity_bytes = 0;                  ///< usable device memory
  Seconds launch_overhead_s = 0;                    ///< fixed cost of every kernel
  /// Fixed cost the runtime's executor adds to every op, kernel or not (taking it from the
  /// ready queue, tracking its dependencies, waking its consumers), in seconds. Charged by
  /// every cost model on top of the op's own time, so ops without a kernel (reshape, inputs,
  /// control) cost this much rather than nothing. 0 (the default, and in datasheet profiles)
  /// when the profile does not measure it; `gopt calibrate` measures it on the CPU backend.
  Seconds executor_overhead_s = 0;
  int compute_streams = 1;  ///< kernels that may run concurrently
  /// Whether tensors arriving from other devices are moved by a copy engine (DMA) that runs
  /// alongside the compute streams, as on GPUs (the default). false: the device performs
  /// every incoming copy itself on one of its compute streams, ahead of its ready ops, so a
  /// copy takes compute time from it (a CPU worker thread; `gopt calibrate --backend cpu`
  /// writes false). docs/simulator.md "Transfers" has the model.
  bool has_copy_engine = true;
  /// Fraction of peak FLOP/s an op of each kind achieves, in (0, 1].
  std::array<double, core::kNumOpKinds> compute_efficiency{};
  /// Fraction of peak memory bandwidth an op of each kind achieves, in (0, 1].
  std::array<double, core::kNumOpKinds> memory_efficiency{};
  /// Kinds that launch no kernel (metadata-only ops such as reshape): they take no time.
  std::array<bool, core::kNumOpKinds> no_kernel{};
  /// Measured time curves (calibrated profiles): per framework op type ("MatMul"), and per
  /// kind for op types without their own. Empty in datasheet profiles. The calibrated cost
  /// model prefers them to the roofline (cost_model.h).
  std::map<std::string, TimeCurve> op_type_curves;
  std::array<TimeCurve, core::kNumOpKinds> kind_curves{};
  /// Measured shapes per op type (calibrated profiles; empty otherwise).
  std::map<std::string, ShapeTable> op_type_shapes;
  /// Elementwise ops in fused loops against alone (calibrated CPU profiles; empty otherwise).
  FusedLoopRatio fused_loop_ratio;
  std::string source;  ///< provenance of these numbers (datasheet, measurement)

  /// A device with every efficiency 1 and nothing else set.
  DeviceSpec(std::string device_name = "", std::string device_type = "");

  DeviceSpec& peak_flops(core::DType dtype, FlopsPerSecond flops_per_s);
  DeviceSpec& memory_bandwidth(BytesPerSecond bytes_per_s);
  DeviceSpec& memory_capacity(Bytes bytes);
  DeviceSpec& launch_overhead(Seconds seconds);
  DeviceSpec& executor_overhead(Seconds seconds);
  DeviceSpec& streams(int count);
  DeviceSpec& copy_engine(bool present);
  /// Sets the compute and memory efficiency of one kind.
  DeviceSpec& efficiency(core::OpKind kind, double compute, double memory);
  /// Sets the compute and memory efficiency of every kind.
  DeviceSpec& efficiency_all(double compute, double memory);
  DeviceSpec& without_kernel(core::OpKind kind, bool no_kernel_launch = true);

  /// True when the numbers (not the name) equal `other`'s.
  [[nodiscard]] bool same_numbers(const DeviceSpec& other) const;
};

/// A full-duplex point-to-point link between two topology nodes (devices or switches).
/// Each direction is a separate resource with the full bandwidth.
struct LinkSpec {
  std::string name;                          ///< unique; default "<a>-<b>"
  std::string a;                             ///< endpoint (device or switch name)
  std::string b;                             ///< other endpoint
  std::string type;                          ///< e.g. "pcie3_x16", "nvlink2_x2"
  BytesPerSecond bandwidth_bytes_per_s = 0;  ///< per direction, achievable
  Seconds latency_s = 0;                     ///< per hop
  std::string source;                        ///< provenance of the numbers

  LinkSpec(std::string end_a = "", std::string end_b = "");
  LinkSpec& bandwidth(BytesPerSecond bytes_per_s);
  LinkSpec& latency(Seconds seconds);
  LinkSpec& with_name(std::string link_name);
  LinkSpec& with_type(std::string link_type);
};

}  // namespace gopt::hardware
