#include "hardware/device_spec.h"

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
DeviceSpec& DeviceSpec::streams(int count) {
  compute_streams = count;
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
         launch_overhead_s == other.launch_overhead_s && compute_streams == other.compute_streams &&
         compute_efficiency == other.compute_efficiency &&
         memory_efficiency == other.memory_efficiency && no_kernel == other.no_kernel;
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
