// The attention core of the GO policy's segment-level recurrent attention layer: each
// segment's queries attend to the keys of the previous segment (its gradient-stopped
// memory) and of their own segment, with a learned relative-position bias. A fused CPU
// kernel (scores, softmax and weighted sum per segment and head while the segment's keys
// sit in cache, no permuted copies) with its own backward pass, and the same computation
// in plain LibTorch ops as the reference for tests and for other devices and dtypes.
#pragma once

#include <torch/torch.h>

#include <cstdint>

namespace gopt::agents::go {

/// A finite "minus infinity" for masked logits (devices a cluster lacks, masked attention
/// keys): exp() underflows to 0 and p * log p stays 0 (true -inf would make an entropy NaN).
inline constexpr double kMaskedLogit = -1e9;

/// softmax(q k^T + bias) v over segments. q, k, v: [S, L, hidden] projections of S segments
/// of L nodes in topological order, node s * L + i at [s][i]; the first `valid` nodes are
/// real and the rest padding. `heads` split hidden into contiguous column blocks of
/// hidden / heads. Query i of segment s attends to key j of [segment s - 1, segment s]
/// (j in [0, 2L)) with score q_i . k_j + rel_bias[head][j - i + L - 1] (rel_bias: [heads, 3L]);
/// the keys of segment -1 and of padding nodes are masked. The previous segment's keys and
/// values are detached: no gradient reaches k or v through a segment's memory. Returns
/// [S, L, hidden], zero on padding rows. Scale q beforehand (1 / sqrt(head size)).
///
/// CPU float tensors take the fused kernel, compiled for the instruction set that
/// agents::cpu_kernel_path() names (deterministic on one path and independent of the thread
/// count); anything else takes segment_attention_reference.
///
///   auto out = segment_attention(q_(seg) / std::sqrt(32.0), k_(seg), v_(seg), bias, 2, n);
[[nodiscard]] torch::Tensor segment_attention(const torch::Tensor& q, const torch::Tensor& k,
                                              const torch::Tensor& v, const torch::Tensor& rel_bias,
                                              std::int64_t heads, std::int64_t valid);

/// segment_attention in plain LibTorch ops (batched matmul, softmax, autograd): any device
/// and dtype, and the reference the fused kernel is tested against.
[[nodiscard]] torch::Tensor segment_attention_reference(const torch::Tensor& q,
                                                        const torch::Tensor& k,
                                                        const torch::Tensor& v,
                                                        const torch::Tensor& rel_bias,
                                                        std::int64_t heads, std::int64_t valid);

}  // namespace gopt::agents::go
