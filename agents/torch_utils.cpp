#include "agents/torch_utils.h"

#if defined(__SSE__)
#include <xmmintrin.h>
#endif

#include <dlfcn.h>
#include <stdlib.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <string>

#include "agents/compute_threads.h"
#include "core/errors.h"

namespace gopt::agents {

torch::Device resolve_compute_device(ComputeDevice choice, const std::string& option) {
  if (choice == ComputeDevice::kCpu) return torch::kCPU;
  const bool gpu = torch::cuda::is_available();
  if (!gpu) {
    if (choice == ComputeDevice::kAuto) return torch::kCPU;
    throw core::InputError("", option,
                           "cuda, but this LibTorch has no CUDA or sees no GPU; use cpu, or auto "
                           "(a GPU when there is one)");
  }
  // cuBLAS is deterministic only with a fixed workspace, which must be chosen before its
  // first handle: the value PyTorch's reproducibility notes give.
  ::setenv("CUBLAS_WORKSPACE_CONFIG", ":4096:8", /*overwrite=*/0);
  at::globalContext().setDeterministicAlgorithms(true, /*warn_only=*/true);
  return {torch::kCUDA, 0};
}

at::Generator make_generator(core::Rng& rng) { return at::detail::createCPUGenerator(rng.next()); }

void initialise(torch::nn::Module& module, core::Rng& rng) {
  torch::NoGradGuard no_grad;
  for (auto& item : module.named_parameters()) {
    auto& p = item.value();
    if (p.dim() < 2) {
      const std::string& name = item.key();
      const bool gain = name.size() >= 6 && name.compare(name.size() - 6, 6, "weight") == 0;
      if (gain) {
        p.fill_(1.0);
      } else {
        p.zero_();
      }
      continue;
    }
    const double bound = 1.0 / std::sqrt(static_cast<double>(p.size(1)));
    auto values = torch::empty(p.sizes(), torch::kFloat);
    auto* data = values.data_ptr<float>();
    std::uniform_real_distribution<float> dist(static_cast<float>(-bound),
                                               static_cast<float>(bound));
    for (std::int64_t i = 0; i < values.numel(); ++i) data[i] = dist(rng.engine());
    p.copy_(values);
  }
}

void limit_compute_threads(int threads) {
  threads = std::max(1, threads);
  at::set_num_threads(threads);
  // OpenBLAS (Debian's LibTorch does its matrix products there) keeps its own pool; it is
  // looked up at run time because other BLAS builds have no such function.
  using SetThreads = void (*)(int);
  if (void* f = ::dlsym(RTLD_DEFAULT, "openblas_set_num_threads")) {
    reinterpret_cast<SetThreads>(f)(threads);
  }
}

#if defined(__SSE__)
// MXCSR bits: flush-to-zero (results) and denormals-are-zero (operands).
constexpr unsigned int kFlushToZero = 0x8000;
constexpr unsigned int kDenormalsAreZero = 0x0040;

SubnormalsFlushed::SubnormalsFlushed() : saved_(_mm_getcsr()) {
  _mm_setcsr(saved_ | kFlushToZero | kDenormalsAreZero);
}
SubnormalsFlushed::~SubnormalsFlushed() { _mm_setcsr(saved_); }
#else
SubnormalsFlushed::SubnormalsFlushed() = default;
SubnormalsFlushed::~SubnormalsFlushed() = default;
#endif

torch::Tensor sample_rows(const torch::Tensor& probs, at::Generator& gen) {
  return torch::multinomial(probs, 1, /*replacement=*/true, gen).squeeze(1);
}

}  // namespace gopt::agents
