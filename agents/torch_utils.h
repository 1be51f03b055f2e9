// LibTorch helpers shared by the learned agents (HDP, GO): deterministic initialisation
// and generators seeded from the agent's own Rng, so that runs never touch LibTorch's
// global generator and parallel jobs stay reproducible.
#pragma once

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include <string>

#include "core/rng.h"

namespace gopt::agents {

/// Where a learned agent's network runs (the GO agents' option `device`).
enum class ComputeDevice { kAuto, kCpu, kCuda };

/// The LibTorch device for `choice`: kAuto is the first CUDA GPU when LibTorch was built with
/// CUDA and a GPU is visible, else the CPU; kCuda without them is an InputError naming
/// `option`. Choosing a GPU also turns on LibTorch's deterministic algorithms (process-wide;
/// GraphSAGE's index_add otherwise sums with atomics in a varying order), so that a seed
/// reproduces a run on the same GPU.
[[nodiscard]] torch::Device resolve_compute_device(ComputeDevice choice, const std::string& option);

/// A CPU generator seeded from `rng`.
[[nodiscard]] at::Generator make_generator(core::Rng& rng);

/// Initialises every parameter of `module` from `rng`: matrices U(-1/sqrt(fan_in),
/// 1/sqrt(fan_in)), one-dimensional `weight`s (normalisation gains) 1, other vectors 0.
void initialise(torch::nn::Module& module, core::Rng& rng);

/// Flushes subnormal floats to zero in the calling thread while it lives, and restores the
/// thread's previous floating-point mode after. A trained policy's tensors hold subnormal
/// values (products of near-zero gates, probabilities and gradients), and on x86 every
/// arithmetic instruction that meets one takes a slow microcode path: a forward and
/// backward pass of a Table 3 policy after 600 updates took 2.5 s with them and 0.41 s
/// flushed. Values below 1.2e-38 become 0, which changes no result that matters. Only the
/// calling thread is affected (each of `gopt run`'s job threads trains in its own); a no-op
/// on other architectures.
///
///   { SubnormalsFlushed flushed; run_ppo(...); }
class SubnormalsFlushed {
 public:
  SubnormalsFlushed();
  ~SubnormalsFlushed();
  SubnormalsFlushed(const SubnormalsFlushed&) = delete;
  SubnormalsFlushed& operator=(const SubnormalsFlushed&) = delete;

 private:
  unsigned int saved_ = 0;  // the thread's MXCSR register on entry
};

/// One categorical sample per row of `probs` [R, C].
[[nodiscard]] torch::Tensor sample_rows(const torch::Tensor& probs, at::Generator& gen);

}  // namespace gopt::agents
