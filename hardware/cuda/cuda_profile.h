// Turns CUDA probe results into a measured hardware profile: one device per GPU (its
// measured FP32 throughput, memory bandwidth, launch overhead), a `host` switch linked to
// every GPU with the fitted host-copy bandwidth and latency, and a direct link per GPU pair
// with peer access (fitted peer bandwidth and latency).
#pragma once

#include "hardware/cluster.h"
#include "hardware/cuda/cuda_probes.h"

namespace gopt::hardware::cuda {

/// Builds the cluster spec (validated by Cluster::build before it is returned). `machine`
/// goes into the provenance.
[[nodiscard]] ClusterSpec cuda_profile_spec(const CudaProbeResult& probes, const std::string& name,
                                            const std::string& machine);

}  // namespace gopt::hardware::cuda
