#include <cuda_runtime.h>

#include <algorithm>
#include <chrono>
#include <string>
#include <vector>

#include "core/errors.h"
#include "hardware/cuda/cuda_probes.h"

namespace gopt::hardware::cuda {
namespace {

void check(cudaError_t status, const char* call) {
  if (status != cudaSuccess) {
    throw core::Error(std::string("CUDA probe: ") + call +
                      " failed: " + cudaGetErrorString(status));
  }
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0 : v[v.size() / 2];
}

__global__ void empty_kernel() {}

__global__ void fma_kernel(float* out, int iterations) {
  float a = threadIdx.x * 1e-3f, b = 0.999f, c = 1e-4f, d = 0.5f;
  for (int i = 0; i < iterations; ++i) {
    a = fmaf(a, b, c);
    d = fmaf(d, b, c);
  }
  out[blockIdx.x * blockDim.x + threadIdx.x] = a + d;
}

// Median seconds of `repeats` copies of `bytes` from src to dst (-1 = pinned host memory).
double time_copy(int src, int dst, std::int64_t bytes, int repeats, bool peer) {
  void* from = nullptr;
  void* to = nullptr;
  auto alloc = [&](int where, void** p) {
    if (where < 0) {
      check(cudaMallocHost(p, static_cast<size_t>(bytes)), "cudaMallocHost");
    } else {
      check(cudaSetDevice(where), "cudaSetDevice");
      check(cudaMalloc(p, static_cast<size_t>(bytes)), "cudaMalloc");
    }
  };
  alloc(src, &from);
  alloc(dst, &to);
  int timing_device = dst >= 0 ? dst : src;
  check(cudaSetDevice(timing_device), "cudaSetDevice");
  cudaStream_t stream;
  check(cudaStreamCreate(&stream), "cudaStreamCreate");
  cudaEvent_t start, stop;
  check(cudaEventCreate(&start), "cudaEventCreate");
  check(cudaEventCreate(&stop), "cudaEventCreate");
  std::vector<double> times;
  for (int r = 0; r < repeats + 1; ++r) {
    check(cudaEventRecord(start, stream), "cudaEventRecord");
    if (src >= 0 && dst >= 0) {
      check(cudaMemcpyPeerAsync(to, dst, from, src, static_cast<size_t>(bytes), stream),
            "cudaMemcpyPeerAsync");
    } else {
      check(cudaMemcpyAsync(to, from, static_cast<size_t>(bytes), cudaMemcpyDefault, stream),
            "cudaMemcpyAsync");
    }
    check(cudaEventRecord(stop, stream), "cudaEventRecord");
    check(cudaEventSynchronize(stop), "cudaEventSynchronize");
    float ms = 0;
    check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
    if (r > 0) times.push_back(ms * 1e-3);  // the first copy is a warm-up
  }
  (void)peer;
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cudaStreamDestroy(stream);
  auto release = [](int where, void* p) {
    if (where < 0) {
      cudaFreeHost(p);
    } else {
      cudaSetDevice(where);
      cudaFree(p);
    }
  };
  release(src, from);
  release(dst, to);
  return median(times);
}

GpuInfo probe_gpu(int d, const CudaProbeOptions& o) {
  GpuInfo g;
  g.index = d;
  cudaDeviceProp prop{};
  check(cudaGetDeviceProperties(&prop, d), "cudaGetDeviceProperties");
  g.name = prop.name;
  g.memory_bytes = static_cast<std::int64_t>(prop.totalGlobalMem);
  check(cudaSetDevice(d), "cudaSetDevice");

  // Launch overhead: back-to-back empty kernels on one stream, per launch.
  empty_kernel<<<1, 1>>>();
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < o.launches; ++i) empty_kernel<<<1, 1>>>();
  check(cudaDeviceSynchronize(), "cudaDeviceSynchronize");
  g.launch_overhead_s =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() / o.launches;

  // Memory bandwidth: a device-to-device copy reads and writes every byte.
  const std::int64_t bytes = std::int64_t{256} << 20;
  g.memory_bandwidth_bytes_per_s =
      2.0 * static_cast<double>(bytes) / time_copy(d, d, bytes, o.repeats, false);

  // FP32 throughput: 2 FMAs per iteration per thread, enough blocks to fill every SM.
  const int threads = 256, blocks = prop.multiProcessorCount * 8, iterations = 1 << 14;
  float* out = nullptr;
  check(cudaMalloc(&out, sizeof(float) * threads * blocks), "cudaMalloc");
  cudaEvent_t start, stop;
  check(cudaEventCreate(&start), "cudaEventCreate");
  check(cudaEventCreate(&stop), "cudaEventCreate");
  fma_kernel<<<blocks, threads>>>(out, iterations);
  check(cudaEventRecord(start), "cudaEventRecord");
  fma_kernel<<<blocks, threads>>>(out, iterations);
  check(cudaEventRecord(stop), "cudaEventRecord");
  check(cudaEventSynchronize(stop), "cudaEventSynchronize");
  float ms = 0;
  check(cudaEventElapsedTime(&ms, start, stop), "cudaEventElapsedTime");
  g.fp32_flops_per_s = 4.0 * threads * blocks * static_cast<double>(iterations) / (ms * 1e-3);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  cudaFree(out);
  return g;
}

}  // namespace

std::optional<std::string> cuda_probe_unavailable_reason() {
  int count = 0;
  cudaError_t status = cudaGetDeviceCount(&count);
  if (status != cudaSuccess) {
    return std::string("no usable CUDA GPU: cudaGetDeviceCount failed (") +
           cudaGetErrorString(status) + ")";
  }
  if (count == 0) return std::string("no CUDA GPU present (cudaGetDeviceCount = 0)");
  return std::nullopt;
}

CudaProbeResult run_cuda_probes(const CudaProbeOptions& options) {
  if (auto why = cuda_probe_unavailable_reason()) throw core::Error(*why);
  CudaProbeResult r;
  check(cudaDriverGetVersion(&r.driver_version), "cudaDriverGetVersion");
  check(cudaRuntimeGetVersion(&r.runtime_version), "cudaRuntimeGetVersion");
  int count = 0;
  check(cudaGetDeviceCount(&count), "cudaGetDeviceCount");
  for (int d = 0; d < count; ++d) r.gpus.push_back(probe_gpu(d, options));
  auto measure = [&](int src, int dst, bool peer) {
    PairTimings p{src, dst, peer, {}};
    for (auto bytes : options.copy_sizes_bytes) {
      p.timings.push_back(CopyTiming{bytes, time_copy(src, dst, bytes, options.repeats, peer)});
    }
    r.pairs.push_back(std::move(p));
  };
  for (int d = 0; d < count; ++d) {
    measure(-1, d, false);
    measure(d, -1, false);
  }
  for (int a = 0; a < count; ++a) {
    for (int b = 0; b < count; ++b) {
      if (a == b) continue;
      int can = 0;
      check(cudaDeviceCanAccessPeer(&can, b, a), "cudaDeviceCanAccessPeer");
      if (can) {
        check(cudaSetDevice(b), "cudaSetDevice");
        cudaError_t e = cudaDeviceEnablePeerAccess(a, 0);
        if (e != cudaSuccess && e != cudaErrorPeerAccessAlreadyEnabled)
          check(e, "cudaDeviceEnablePeerAccess");
        cudaGetLastError();  // clear "already enabled"
      }
      measure(a, b, can != 0);
    }
  }
  return r;
}

}  // namespace gopt::hardware::cuda
