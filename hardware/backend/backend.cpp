#include "hardware/backend/backend.h"

#include <torch/torch.h>

#include <sched.h>

#include <algorithm>

#include "core/strings.h"
#include "hardware/backend/torch_backend.h"

namespace gopt::hardware::backend {

std::string_view to_string(BackendKind kind) {
  switch (kind) {
    case BackendKind::kCpu:
      return "cpu";
    case BackendKind::kCuda:
      return "cuda";
  }
  return "cpu";
}

BackendKind backend_kind_from_string(const std::string& name, const std::string& field) {
  if (name == "cpu") return BackendKind::kCpu;
  if (name == "cuda") return BackendKind::kCuda;
  throw core::InputError(field, "'" + name + "'", "unknown backend; expected one of cpu, cuda");
}

double ExecutionResult::spread() const {
  if (step_times_s.empty() || !(step_time_s > 0)) return 0;
  auto [lo, hi] = std::minmax_element(step_times_s.begin(), step_times_s.end());
  return (*hi - *lo) / step_time_s;
}

std::optional<std::string> cuda_unavailable_reason() {
  // torch::cuda::is_available() is false both for a CPU-only LibTorch (Debian's) and for a
  // CUDA LibTorch on a machine without a GPU; say which.
  if (torch::cuda::is_available()) return std::nullopt;
  if (!at::Context::hasCUDART()) {
    return std::string(
        "the CUDA backend needs a CUDA-enabled LibTorch (this gopt is linked against a "
        "CPU-only LibTorch, e.g. Debian's libtorch-dev); rebuild with "
        "-DCMAKE_PREFIX_PATH=<a CUDA PyTorch's cmake prefix>");
  }
  return std::string(
      "the CUDA backend found no GPU (LibTorch is CUDA-enabled but "
      "torch::cuda::device_count() is 0)");
}

std::unique_ptr<Backend> make_backend(BackendKind kind, DeviceId num_devices,
                                      const BackendOptions& options) {
  return std::make_unique<TorchBackend>(kind, num_devices, options);
}

std::vector<int> usable_cpus() {
  std::vector<int> cpus;
#if defined(__linux__)
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof(set), &set) != 0) return cpus;
  for (int c = 0; c < CPU_SETSIZE; ++c) {
    if (CPU_ISSET(c, &set)) cpus.push_back(c);
  }
#endif
  return cpus;
}

}  // namespace gopt::hardware::backend
