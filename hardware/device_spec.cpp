#include "hardware/device_spec.h"

#include <algorithm>
#include <cmath>

#include <utility>

namespace gopt::hardware {

DeviceSpec::DeviceSpec(std::string device_name, std::string device_type)
    : name(std::move(device_name)), type(std::move(device_type)) {
  compute_efficiency.fill(1.0);
  memory_efficiency.fill(1.0);
}

DeviceSpec& DeviceSpec::peak_flops(core::DType dtype, FlopsPerSecond flops_per_s) {
  peak_flops_per_s[static_cast<std::size_t>(dtype)] = flops_per_s;
  return *this;
}
DeviceSpec& DeviceSpec::memory_bandwidth(BytesPerSecond bytes_per_s) {
  memory_bandwidth_bytes_per_s = bytes_per_s;
  return *this;
}
DeviceSpec& DeviceSpec::memory_capacity(Bytes bytes) {
  memory_capacity_bytes = bytes;
  return *this;
}
DeviceSpec& DeviceSpec::launch_overhead(Seconds seconds) {
  launch_overhead_s = seconds;
  return *this;
}
DeviceSpec& DeviceSpec::executor_overhead(Seconds seconds) {
  executor_overhead_s = seconds;
  return *this;
}
DeviceSpec& DeviceSpec::streams(int count) {
  compute_streams = count;
  return *this;
}
DeviceSpec& DeviceSpec::copy_engine(bool present) {
  has_copy_engine = present;
  return *this;
}
DeviceSpec& DeviceSpec::efficiency(core::OpKind kind, double compute, double memory) {
  compute_efficiency[static_cast<std::size_t>(kind)] = compute;
  memory_efficiency[static_cast<std::size_t>(kind)] = memory;
  return *this;
}
DeviceSpec& DeviceSpec::efficiency_all(double compute, double memory) {
  compute_efficiency.fill(compute);
  memory_efficiency.fill(memory);
  return *this;
}
DeviceSpec& DeviceSpec::without_kernel(core::OpKind kind, bool no_kernel_launch) {
  no_kernel[static_cast<std::size_t>(kind)] = no_kernel_launch;
  return *this;
}

bool DeviceSpec::same_numbers(const DeviceSpec& other) const {
  return peak_flops_per_s == other.peak_flops_per_s &&
         memory_bandwidth_bytes_per_s == other.memory_bandwidth_bytes_per_s &&
         memory_capacity_bytes == other.memory_capacity_bytes &&
         launch_overhead_s == other.launch_overhead_s &&
         executor_overhead_s == other.executor_overhead_s &&
         compute_streams == other.compute_streams && has_copy_engine == other.has_copy_engine &&
         compute_efficiency == other.compute_efficiency &&
         memory_efficiency == other.memory_efficiency && no_kernel == other.no_kernel &&
         op_type_curves == other.op_type_curves && kind_curves == other.kind_curves &&
         op_type_shapes == other.op_type_shapes && fused_loop_ratio == other.fused_loop_ratio;
}

Seconds TimeCurve::at(double w) const {
  if (work.empty()) return 0;
  if (w <= work.front()) return time_s.front();
  if (w >= work.back()) return time_s.back() * w / work.back();
  auto hi = static_cast<std::size_t>(std::upper_bound(work.begin(), work.end(), w) - work.begin());
  std::size_t lo = hi - 1;
  double t0 = std::max(time_s[lo], 1e-12), t1 = std::max(time_s[hi], 1e-12);
  if (work[lo] <= 0) {
    // No logarithm of zero work: linear between the two points.
    return t0 + (t1 - t0) * (w - work[lo]) / (work[hi] - work[lo]);
  }
  double f = std::log(w / work[lo]) / std::log(work[hi] / work[lo]);
  return std::exp(std::log(t0) + f * (std::log(t1) - std::log(t0)));
}

double FusedLoopRatio::at(Bytes written) const {
  if (bytes.empty()) return 1.0;
  if (written <= bytes.front()) return ratio.front();
  if (written >= bytes.back()) return ratio.back();
  auto hi = static_cast<std::size_t>(std::upper_bound(bytes.begin(), bytes.end(), written) -
                                     bytes.begin());
  std::size_t lo = hi - 1;
  double f = std::log(static_cast<double>(written) / static_cast<double>(bytes[lo])) /
             std::log(static_cast<double>(bytes[hi]) / static_cast<double>(bytes[lo]));
  return ratio[lo] + f * (ratio[hi] - ratio[lo]);
}

LinkSpec::LinkSpec(std::string end_a, std::string end_b)
    : a(std::move(end_a)), b(std::move(end_b)) {
  name = a + "-" + b;
}
LinkSpec& LinkSpec::bandwidth(BytesPerSecond bytes_per_s) {
  bandwidth_bytes_per_s = bytes_per_s;
  return *this;
}
LinkSpec& LinkSpec::latency(Seconds seconds) {
  latency_s = seconds;
  return *this;
}
LinkSpec& LinkSpec::with_name(std::string link_name) {
  name = std::move(link_name);
  return *this;
}
LinkSpec& LinkSpec::with_type(std::string link_type) {
  type = std::move(link_type);
  return *this;
}

}  // namespace gopt::hardware
