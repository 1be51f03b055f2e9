// CUDA Toolkit probes (built only when nvcc is found, GOPT_WITH_CUDA): the interconnect and
// launch numbers a GPU hardware profile needs, measured with the CUDA runtime directly
// (no LibTorch): host<->GPU and GPU<->GPU (peer) copy bandwidth and latency for every pair,
// kernel launch overhead, device-memory bandwidth and FP32 FMA throughput. The result is
// written as a `kind: measured` hardware profile (cuda_profile.h).
//
//   if (auto why = cuda_probe_unavailable_reason()) skip(*why);    // no driver / no GPU
//   CudaProbeResult r = run_cuda_probes(CudaProbeOptions());
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "core/options.h"

namespace gopt::hardware::cuda {

/// Options of the probes; defaults here and nowhere else.
struct CudaProbeOptions {
  GOPT_OPTION(int, repeats, 10)  ///< timed repetitions per size
  GOPT_OPTION(std::vector<std::int64_t>, copy_sizes_bytes,
              (std::vector<std::int64_t>{4096, 65536, 1 << 20, 16 << 20, 64 << 20}))
  GOPT_OPTION(int, launches, 2000)  ///< empty kernels timed for the overhead
};

/// One timed copy size between two endpoints (median over the repeats).
struct CopyTiming {
  std::int64_t bytes = 0;
  double seconds = 0;
};

/// Copies from `src` to `dst`; -1 is the host (pinned memory).
struct PairTimings {
  int src = -1;
  int dst = -1;
  bool peer_access = false;  ///< GPU pairs: cudaDeviceCanAccessPeer (else staged via host)
  std::vector<CopyTiming> timings;
};

struct GpuInfo {
  int index = 0;
  std::string name;
  std::int64_t memory_bytes = 0;
  double memory_bandwidth_bytes_per_s = 0;  ///< measured device-to-device copy rate
  double fp32_flops_per_s = 0;              ///< measured FMA throughput
  double launch_overhead_s = 0;             ///< measured per empty kernel, back to back
};

struct CudaProbeResult {
  int driver_version = 0;
  int runtime_version = 0;
  std::vector<GpuInfo> gpus;
  std::vector<PairTimings> pairs;  ///< host->gpu, gpu->host, and every ordered gpu pair
};

/// Why the probes cannot run (no CUDA driver, no GPU), or nullopt when they can.
[[nodiscard]] std::optional<std::string> cuda_probe_unavailable_reason();

/// Runs every probe. Throws gopt::hardware::backend-independent core::Error on a CUDA error
/// (naming the call) and when no GPU is present.
[[nodiscard]] CudaProbeResult run_cuda_probes(const CudaProbeOptions& options = {});

}  // namespace gopt::hardware::cuda
