// LibTorch helpers shared by the learned agents (HDP, GO): deterministic initialisation
// and generators seeded from the agent's own Rng, so that runs never touch LibTorch's
// global generator and parallel jobs stay reproducible.
#pragma once

#include <ATen/CPUGeneratorImpl.h>
#include <torch/torch.h>

#include "core/rng.h"

namespace gopt::agents {

/// A CPU generator seeded from `rng`.
[[nodiscard]] at::Generator make_generator(core::Rng& rng);

/// Initialises every parameter of `module` from `rng`: matrices U(-1/sqrt(fan_in),
/// 1/sqrt(fan_in)), one-dimensional `weight`s (normalisation gains) 1, other vectors 0.
void initialise(torch::nn::Module& module, core::Rng& rng);

/// One categorical sample per row of `probs` [R, C].
[[nodiscard]] torch::Tensor sample_rows(const torch::Tensor& probs, at::Generator& gen);

}  // namespace gopt::agents
