#include "agents/go/segment_attention.h"

#include <ATen/Parallel.h>

#include <algorithm>
#include <vector>

#include "agents/cpu_numerics.h"
#include "agents/go/lane_rows.h"
#include "agents/go/lane_vectors.h"

namespace gopt::agents::go {
namespace {

using namespace lanes;  // NOLINT(google-build-using-namespace): the kernel's vector type

// [memory, segment] along dim 1: the memory of segment s is segment s - 1 (zeros for the
// first), detached.
torch::Tensor with_memory(const torch::Tensor& segments) {
  auto memory = torch::cat({torch::zeros_like(segments.slice(0, 0, 1)),
                            segments.slice(0, 0, segments.size(0) - 1)},
                           0)
                    .detach();
  return torch::cat({memory, segments}, 1);
}

void check_arguments(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
                     const torch::Tensor& rel_bias, std::int64_t heads, std::int64_t valid) {
  TORCH_CHECK(q.dim() == 3, "segment_attention: q must be [segments, length, hidden], got ",
              q.sizes());
  TORCH_CHECK(k.sizes() == q.sizes() && v.sizes() == q.sizes(),
              "segment_attention: q, k and v must have one shape, got ", q.sizes(), ", ", k.sizes(),
              " and ", v.sizes());
  const auto segments = q.size(0);
  const auto length = q.size(1);
  TORCH_CHECK(heads >= 1 && q.size(2) % heads == 0, "segment_attention: hidden (", q.size(2),
              ") must be a multiple of heads (", heads, ")");
  TORCH_CHECK(rel_bias.dim() == 2 && rel_bias.size(0) == heads && rel_bias.size(1) == 3 * length,
              "segment_attention: rel_bias must be [heads, 3 * length] = [", heads, ", ",
              3 * length, "], got ", rel_bias.sizes());
  TORCH_CHECK(valid > (segments - 1) * length && valid <= segments * length,
              "segment_attention: ", valid, " valid nodes do not fill ", segments, " segments of ",
              length);
}

// --- The fused CPU kernel.

// What one call reads and writes, as raw float arrays in the [S, L, hidden] layout.
struct Views {
  std::int64_t segments, length, hidden, heads, head_size, valid;
  const float* q;
  const float* k;
  const float* v;
  const float* bias;  // [heads, 3L]
  float* probs;       // [S, heads, L, 2L]: attention weights, zero where masked
  float* out;         // forward: [S, L, hidden]
  const float* grad;  // backward: d out
  float* grad_q;      // backward: [S, L, hidden], zeroed
  float* grad_k;      // backward: [S, L, hidden], zeroed
  float* grad_v;      // backward: [S, L, hidden], zeroed
  float* grad_bias;   // backward: [S, heads, 3L] per segment, zeroed

  // Segment s's keys are j in [first_key(s), 2L): the first has no memory. Key j of
  // segment s is node s * L + j - L.
  [[nodiscard]] std::int64_t first_key(std::int64_t s) const { return s == 0 ? length : 0; }
  // Real nodes of segment s (queries that are not padding; keys of its second half).
  [[nodiscard]] std::int64_t own(std::int64_t s) const {
    return std::min(length, valid - s * length);
  }
  [[nodiscard]] std::int64_t row(std::int64_t node, std::int64_t h) const {
    return node * hidden + h * head_size;
  }
};

// Segment s of the forward pass, head size kD (a multiple of 16): per head, the keys'
// transpose kt [kD, 2L] (a score row is then a vector-matrix product over contiguous
// keys), then per real query its score row in place in `probs`, the softmax, and the
// weighted sum of values.
template <class V, int kD>
[[gnu::always_inline]] inline void forward_segment(const Views& a, std::int64_t s, float* kt) {
  static_assert(kD % kLanes == 0, "the vector kernel takes head sizes that are multiples of 16");
  const std::int64_t l = a.length;
  const std::int64_t width2 = 2 * l;
  const std::int64_t j0 = a.first_key(s);
  const std::int64_t own = a.own(s);
  const std::int64_t j1 = l + own;
  const std::int64_t width = j1 - j0;
  const std::int64_t first_node = s * l - l;  // key j is node first_node + j
  for (std::int64_t h = 0; h < a.heads; ++h) {
    for (std::int64_t w = 0; w < width; ++w) {
      const float* key = a.k + a.row(first_node + j0 + w, h);
      for (int d = 0; d < kD; ++d) kt[d * width2 + w] = key[d];
    }
    const float* bias = a.bias + h * 3 * l;
    for (std::int64_t i = 0; i < own; ++i) {
      float* p = a.probs + ((s * a.heads + h) * l + i) * width2;
      std::fill(p, p + j0, 0.0F);
      std::fill(p + j1, p + width2, 0.0F);
      float* row = p + j0;
      std::copy_n(bias + (j0 - i + l - 1), width, row);  // offset j - i for key j0 + w
      add_product<V, kD>(row, a.q + a.row(s * l + i, h), kt, width2, width);
      softmax_row<V>(row, width);
      weighted_rows<V, kD>(a.out + a.row(s * l + i, h), row, a.v + a.row(first_node + j0, h),
                           a.hidden, width);
    }
    for (std::int64_t i = own; i < l; ++i) {  // padding queries
      float* p = a.probs + ((s * a.heads + h) * l + i) * width2;
      std::fill(p, p + width2, 0.0F);
      float* out = a.out + a.row(s * l + i, h);
      std::fill(out, out + kD, 0.0F);
    }
  }
}

// Segment s of the backward pass, head size kD (a multiple of 16), per head and real
// query i (P: its attention weights, dO: the gradient of its output):
//   dP_j = dO . v_j,   dS_j = P_j (dP_j - sum_j' P_j' dP_j'),
//   dq_i = sum_j dS_j k_j,   d bias[j - i + L - 1] += dS_j,
// and for the keys of the segment itself (not the detached memory)
//   dk_j += dS_j q_i,   dv_j += P_j dO.
template <class V, int kD>
[[gnu::always_inline]] inline void backward_segment(const Views& a, std::int64_t s, float* vt,
                                                    float* ds) {
  static_assert(kD % kLanes == 0, "the vector kernel takes head sizes that are multiples of 16");
  constexpr int kVectors = kD / kLanes;
  const std::int64_t l = a.length;
  const std::int64_t width2 = 2 * l;
  const std::int64_t j0 = a.first_key(s);
  const std::int64_t own = a.own(s);
  const std::int64_t width = l + own - j0;
  const std::int64_t blocks = width - width % kLanes;
  const std::int64_t first_node = s * l - l;
  const std::int64_t first_own = l - j0;  // index w of key j = L
  for (std::int64_t h = 0; h < a.heads; ++h) {
    for (std::int64_t w = 0; w < width; ++w) {
      const float* value = a.v + a.row(first_node + j0 + w, h);
      for (int d = 0; d < kD; ++d) vt[d * width2 + w] = value[d];
    }
    float* grad_bias = a.grad_bias + (s * a.heads + h) * 3 * l;
    for (std::int64_t i = 0; i < own; ++i) {
      const float* p = a.probs + ((s * a.heads + h) * l + i) * width2 + j0;
      const float* grad_out = a.grad + a.row(s * l + i, h);
      std::fill(ds, ds + width, 0.0F);
      add_product<V, kD>(ds, grad_out, vt, width2, width);  // dP
      V dot = {};
      for (std::int64_t w = 0; w < blocks; w += kLanes) {
        V pw;
        V dw;
        load(pw, p + w);
        load(dw, ds + w);
        dot += pw * dw;
      }
      float c = lane_sum(dot);
      for (std::int64_t w = blocks; w < width; ++w) c += p[w] * ds[w];
      float* gb = grad_bias + (j0 - i + l - 1);
      for (std::int64_t w = 0; w < blocks; w += kLanes) {
        V pw;
        V dw;
        V bw;
        load(pw, p + w);
        load(dw, ds + w);
        load(bw, gb + w);
        dw = pw * (dw - c);  // dS
        store(ds + w, dw);
        store(gb + w, bw + dw);
      }
      for (std::int64_t w = blocks; w < width; ++w) {
        ds[w] = p[w] * (ds[w] - c);
        gb[w] += ds[w];
      }
      weighted_rows<V, kD>(a.grad_q + a.row(s * l + i, h), ds, a.k + a.row(first_node + j0, h),
                           a.hidden, width);
      V query[kVectors];
      V grad[kVectors];
      for (int c2 = 0; c2 < kVectors; ++c2) {
        load(query[c2], a.q + a.row(s * l + i, h) + c2 * kLanes);
        load(grad[c2], grad_out + c2 * kLanes);
      }
      for (std::int64_t w = first_own; w < width; ++w) {
        const float dsw = ds[w];
        const float pw = p[w];
        float* grad_k = a.grad_k + a.row(first_node + j0 + w, h);
        float* grad_v = a.grad_v + a.row(first_node + j0 + w, h);
        for (int c2 = 0; c2 < kVectors; ++c2) {
          V x;
          load(x, grad_k + c2 * kLanes);
          store(grad_k + c2 * kLanes, x + dsw * query[c2]);
          load(x, grad_v + c2 * kLanes);
          store(grad_v + c2 * kLanes, x + pw * grad[c2]);
        }
      }
    }
  }
}

// Whether the vector kernel serves heads of this size (others take the reference path).
bool kernel_serves(std::int64_t head_size) {
  return head_size == 16 || head_size == 32 || head_size == 64 || head_size == 128;
}

// Segments [begin, end) forward or backward: the body, compiled below once per instruction
// set.
template <class V, int kD>
[[gnu::always_inline]] inline void run_segments(const Views& a, std::int64_t begin,
                                                std::int64_t end, bool backward) {
  std::vector<float> transposed(static_cast<std::size_t>(kD * 2 * a.length));
  std::vector<float> ds(static_cast<std::size_t>(2 * a.length));
  for (std::int64_t s = begin; s < end; ++s) {
    if (backward) {
      backward_segment<V, kD>(a, s, transposed.data(), ds.data());
    } else {
      forward_segment<V, kD>(a, s, transposed.data());
    }
  }
}

template <class V>
[[gnu::always_inline]] inline void run_segments(const Views& a, std::int64_t begin,
                                                std::int64_t end, bool backward) {
  switch (a.head_size) {
    case 16:
      return run_segments<V, 16>(a, begin, end, backward);
    case 32:
      return run_segments<V, 32>(a, begin, end, backward);
    case 64:
      return run_segments<V, 64>(a, begin, end, backward);
    default:
      return run_segments<V, 128>(a, begin, end, backward);
  }
}

// The kernel for an instruction set (the policy's hot loop: 4x wider vectors with AVX-512
// than with the x86-64 baseline). Results differ between instruction sets in the last bits
// (fused multiply-adds), never between runs on one path: cpu_kernel_path() picks the
// widest this CPU runs unless GOPT_CPU_KERNEL or a test forces another.
using SegmentsKernel = void (*)(const Views&, std::int64_t, std::int64_t, bool);

using Sse = Split<F4, 4>;
using Avx2 = Split<F8, 2>;
#define GOPT_SEGMENTS_KERNEL(name, vector, attributes)                                        \
  attributes void name(const Views& a, std::int64_t begin, std::int64_t end, bool backward) { \
    run_segments<vector>(a, begin, end, backward);                                            \
  }
GOPT_SEGMENTS_KERNEL(segments_baseline, Sse, )
#if defined(__x86_64__) && defined(__GNUC__)
GOPT_SEGMENTS_KERNEL(segments_avx2, Avx2, __attribute__((target("avx2,fma"))))
GOPT_SEGMENTS_KERNEL(segments_avx512, F16, __attribute__((target("avx512f,avx512vl,avx2,fma"))))
#endif
#undef GOPT_SEGMENTS_KERNEL

SegmentsKernel segments_kernel(CpuKernelPath path) {
#if defined(__x86_64__) && defined(__GNUC__)
  switch (path) {
    case CpuKernelPath::kAvx512:
      return segments_avx512;
    case CpuKernelPath::kAvx2:
      return segments_avx2;
    case CpuKernelPath::kBaseline:
      break;
  }
#else
  (void)path;
#endif
  return segments_baseline;
}

Views views_of(const torch::Tensor& q, const torch::Tensor& k, const torch::Tensor& v,
               const torch::Tensor& rel_bias, std::int64_t heads, std::int64_t valid) {
  Views a{};
  a.segments = q.size(0);
  a.length = q.size(1);
  a.hidden = q.size(2);
  a.heads = heads;
  a.head_size = a.hidden / heads;
  a.valid = valid;
  a.q = q.data_ptr<float>();
  a.k = k.data_ptr<float>();
  a.v = v.data_ptr<float>();
  a.bias = rel_bias.data_ptr<float>();
  return a;
}

// The fused kernel under autograd. Saved for backward: q, k, v, the bias and the attention
// weights ([S, heads, L, 2L], as the reference's softmax output would be).
class SegmentAttentionFunction : public torch::autograd::Function<SegmentAttentionFunction> {
 public:
  static torch::Tensor forward(torch::autograd::AutogradContext* ctx, const torch::Tensor& q_in,
                               const torch::Tensor& k_in, const torch::Tensor& v_in,
                               const torch::Tensor& bias_in, std::int64_t heads,
                               std::int64_t valid) {
    auto q = q_in.contiguous();
    auto k = k_in.contiguous();
    auto v = v_in.contiguous();
    auto bias = bias_in.contiguous();
    Views a = views_of(q, k, v, bias, heads, valid);
    auto probs = torch::empty({a.segments, heads, a.length, 2 * a.length}, q.options());
    auto out = torch::empty_like(q);
    a.probs = probs.data_ptr<float>();
    a.out = out.data_ptr<float>();
    const SegmentsKernel kernel = segments_kernel(cpu_kernel_path());
    at::parallel_for(0, a.segments, 1, [&](std::int64_t begin, std::int64_t end) {
      kernel(a, begin, end, /*backward=*/false);
    });
    ctx->save_for_backward({q, k, v, bias, probs});
    ctx->saved_data["heads"] = heads;
    ctx->saved_data["valid"] = valid;
    return out;
  }

  static torch::autograd::variable_list backward(torch::autograd::AutogradContext* ctx,
                                                 torch::autograd::variable_list grad_outputs) {
    const auto saved = ctx->get_saved_variables();
    const auto& q = saved[0];
    const auto& k = saved[1];
    const auto& v = saved[2];
    const auto& bias = saved[3];
    const auto& probs = saved[4];
    const std::int64_t heads = ctx->saved_data["heads"].toInt();
    const std::int64_t valid = ctx->saved_data["valid"].toInt();
    auto grad = grad_outputs[0].contiguous();
    Views a = views_of(q, k, v, bias, heads, valid);
    auto grad_q = torch::zeros_like(q);
    auto grad_k = torch::zeros_like(k);
    auto grad_v = torch::zeros_like(v);
    auto grad_bias_per_segment = torch::zeros({a.segments, heads, 3 * a.length}, q.options());
    a.probs = probs.data_ptr<float>();
    a.grad = grad.data_ptr<float>();
    a.grad_q = grad_q.data_ptr<float>();
    a.grad_k = grad_k.data_ptr<float>();
    a.grad_v = grad_v.data_ptr<float>();
    a.grad_bias = grad_bias_per_segment.data_ptr<float>();
    const SegmentsKernel kernel = segments_kernel(cpu_kernel_path());
    at::parallel_for(0, a.segments, 1, [&](std::int64_t begin, std::int64_t end) {
      kernel(a, begin, end, /*backward=*/true);
    });
    // Summed over segments in one fixed order: the same whatever the thread count.
    auto grad_bias = torch::zeros_like(bias);
    float* total = grad_bias.data_ptr<float>();
    const float* part = grad_bias_per_segment.data_ptr<float>();
    const std::int64_t size = heads * 3 * a.length;
    for (std::int64_t s = 0; s < a.segments; ++s) {
      for (std::int64_t x = 0; x < size; ++x) total[x] += part[s * size + x];
    }
    return {grad_q, grad_k, grad_v, grad_bias, torch::Tensor(), torch::Tensor()};
  }
};

}  // namespace

torch::Tensor segment_attention(const torch::Tensor& q, const torch::Tensor& k,
                                const torch::Tensor& v, const torch::Tensor& rel_bias,
                                std::int64_t heads, std::int64_t valid) {
  check_arguments(q, k, v, rel_bias, heads, valid);
  const bool fused = q.device().is_cpu() && q.scalar_type() == torch::kFloat &&
                     k.scalar_type() == torch::kFloat && v.scalar_type() == torch::kFloat &&
                     rel_bias.scalar_type() == torch::kFloat && rel_bias.device().is_cpu() &&
                     kernel_serves(q.size(2) / heads);
  if (!fused) return segment_attention_reference(q, k, v, rel_bias, heads, valid);
  return SegmentAttentionFunction::apply(q, k, v, rel_bias, heads, valid);
}

torch::Tensor segment_attention_reference(const torch::Tensor& q, const torch::Tensor& k,
                                          const torch::Tensor& v, const torch::Tensor& rel_bias,
                                          std::int64_t heads, std::int64_t valid) {
  check_arguments(q, k, v, rel_bias, heads, valid);
  const auto s = q.size(0);
  const auto l = q.size(1);
  const auto hidden = q.size(2);
  const auto dh = hidden / heads;
  const auto pad = s * l - valid;
  auto qh = q.reshape({s, l, heads, dh}).permute({0, 2, 1, 3});
  auto kh = with_memory(k).view({s, 2 * l, heads, dh}).permute({0, 2, 1, 3});
  auto vh = with_memory(v).view({s, 2 * l, heads, dh}).permute({0, 2, 1, 3});
  auto scores = torch::matmul(qh, kh.transpose(-1, -2));  // [S, heads, L, 2L]
  // Query i and key j of [memory, segment]: offset (j - L) - i in [-2L + 1, L - 1], at
  // offset + 2L - 1 in the bias.
  auto index_options = torch::TensorOptions().dtype(torch::kLong).device(q.device());
  auto i = torch::arange(l, index_options).unsqueeze(1);
  auto j = torch::arange(2 * l, index_options).unsqueeze(0);
  auto rel_index = (j - l) - i + (2 * l - 1);
  scores.add_(rel_bias.index_select(1, rel_index.flatten()).view({1, heads, l, 2 * l}));
  // Masked keys: the first segment has no memory; the last one's padding.
  scores.select(0, 0).slice(-1, 0, l).fill_(kMaskedLogit);
  if (pad > 0) scores.select(0, s - 1).slice(-1, 2 * l - pad, 2 * l).fill_(kMaskedLogit);
  auto out =
      torch::matmul(torch::softmax(scores, -1), vh).permute({0, 2, 1, 3}).reshape({s, l, hidden});
  if (pad == 0) return out;
  auto real = torch::arange(s * l, index_options).lt(valid).view({s, l, 1}).to(out.scalar_type());
  return out * real;
}

}  // namespace gopt::agents::go
