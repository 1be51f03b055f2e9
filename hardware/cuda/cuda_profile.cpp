#include "hardware/cuda/cuda_profile.h"

#include <cstdio>

#include "hardware/calibration.h"

namespace gopt::hardware::cuda {
namespace {

LinkFit fit_pair(const PairTimings& p) {
  std::vector<CopySample> samples;
  for (const auto& t : p.timings) samples.push_back(CopySample{t.bytes, t.seconds});
  return fit_link(samples);
}

std::string residual_text(const LinkFit& f) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "rms %.1f%%, max %.1f%%", 100 * f.residuals.rms_rel_error,
                100 * f.residuals.max_rel_error);
  return buf;
}

}  // namespace

ClusterSpec cuda_profile_spec(const CudaProbeResult& probes, const std::string& name,
                              const std::string& machine) {
  ClusterSpec spec;
  spec.name = name;
  spec.description = "Measured by the gopt CUDA probes (hardware/cuda)";
  spec.provenance.kind = "measured";
  spec.provenance.machine = machine;
  spec.provenance.sources.push_back(
      "gopt CUDA probes: cudaMemcpyPeerAsync / cudaMemcpyAsync timed with CUDA events, "
      "back-to-back empty kernel launches, FP32 FMA kernel (CUDA runtime " +
      std::to_string(probes.runtime_version) + ", driver " + std::to_string(probes.driver_version) +
      ")");
  std::string notes;
  for (const auto& g : probes.gpus) {
    DeviceSpec d("gpu" + std::to_string(g.index), "gpu_" + std::to_string(g.index));
    d.peak_flops(core::DType::kFloat32, g.fp32_flops_per_s)
        .memory_bandwidth(g.memory_bandwidth_bytes_per_s)
        .memory_capacity(g.memory_bytes)
        .launch_overhead(g.launch_overhead_s)
        .without_kernel(core::OpKind::kReshape)
        .without_kernel(core::OpKind::kControl);
    d.source = g.name +
               ": measured FMA throughput, copy bandwidth and launch overhead; "
               "efficiencies uncalibrated (1)";
    spec.add_device(d);
  }
  spec.add_switch("host");
  for (const auto& p : probes.pairs) {
    if (p.src >= 0 && p.dst >= 0 && !p.peer_access) continue;  // staged through the host
    if (p.src >= 0 && p.dst >= 0 && p.src > p.dst) continue;   // one full-duplex link a pair
    if (p.src < 0) continue;  // host->gpu: the gpu->host timing names the link
    LinkFit f = fit_pair(p);
    std::string a = "gpu" + std::to_string(p.src);
    std::string b = p.dst < 0 ? "host" : "gpu" + std::to_string(p.dst);
    LinkSpec l(a, b);
    l.bandwidth(f.bandwidth_bytes_per_s).latency(f.latency_s);
    l.source = "fitted from timed copies " + a + " -> " + b + " (" + residual_text(f) + ")";
    notes += l.source + "; ";
    spec.add_link(l);
  }
  spec.provenance.notes = notes;
  (void)Cluster::build(spec, name);
  return spec;
}

}  // namespace gopt::hardware::cuda
