// The CUDA Toolkit probes: without a GPU they say why and this test skips; with one, every
// GPU and pair is measured and the profile built from them loads.
#include "hardware/cuda/cuda_probes.h"

#include <gtest/gtest.h>

#include "hardware/calibration.h"
#include "hardware/cuda/cuda_profile.h"
#include "hardware/profile.h"

namespace gopt::hardware::cuda {
namespace {

TEST(CudaProbesTest, MeasuresEveryGpuAndPairOrSkips) {
  if (auto why = cuda_probe_unavailable_reason()) {
    GTEST_SKIP() << "no GPU for the CUDA probes: " << *why;
  }
  CudaProbeOptions options;
  options.repeats = 3;
  options.copy_sizes_bytes = {4096, 1 << 20, 8 << 20};
  options.launches = 200;
  CudaProbeResult r = run_cuda_probes(options);
  ASSERT_FALSE(r.gpus.empty());
  const auto n = r.gpus.size();
  EXPECT_EQ(r.pairs.size(), 2 * n + n * (n - 1));
  for (const auto& g : r.gpus) {
    EXPECT_GT(g.fp32_flops_per_s, 0);
    EXPECT_GT(g.memory_bandwidth_bytes_per_s, 0);
    EXPECT_GT(g.launch_overhead_s, 0);
  }
  ClusterSpec spec = cuda_profile_spec(r, "probed", "test machine");
  spec.provenance.date = "2026-11-22";
  std::string yaml = profile_yaml(spec);
  ClusterSpec back = parse_profile_yaml(yaml, "probed.yaml");
  EXPECT_EQ(back.devices.size(), n);
}

}  // namespace
}  // namespace gopt::hardware::cuda
