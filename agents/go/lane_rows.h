// The row operations of the fused attention kernel (segment_attention.cpp) over the lane
// vectors of lane_vectors.h: a vector-matrix product, a weighted sum of rows and a softmax in
// place, each with independent chains of multiply-adds and sums added in one fixed order.
// Internal to the kernel: included by segment_attention.cpp only.
#pragma once

#include <cstdint>
#include <limits>

#include "agents/go/lane_vectors.h"

namespace gopt::agents::go::lanes {

// row[w] += sum_d x[d] * t[d * stride + w] for w in [0, width): a vector-matrix product
// with the matrix transposed (rows of t contiguous in w). Four vectors of the row at a
// time: four independent chains of multiply-adds (one would wait on each add's latency).
template <class V, int kD>
[[gnu::always_inline]] inline void add_product(float* row, const float* x, const float* t,
                                               std::int64_t stride, std::int64_t width) {
  constexpr int kChains = 4;
  const std::int64_t blocks = width - width % kLanes;
  std::int64_t w = 0;
  for (; w + kChains * kLanes <= blocks; w += kChains * kLanes) {
    V acc[kChains];
    for (int u = 0; u < kChains; ++u) load(acc[u], row + w + u * kLanes);
    for (int d = 0; d < kD; ++d) {
      const float xd = x[d];
      for (int u = 0; u < kChains; ++u) {
        V td;
        load(td, t + d * stride + w + u * kLanes);
        acc[u] += xd * td;
      }
    }
    for (int u = 0; u < kChains; ++u) store(row + w + u * kLanes, acc[u]);
  }
  for (; w < blocks; w += kLanes) {
    V acc;
    load(acc, row + w);
    for (int d = 0; d < kD; ++d) {
      V td;
      load(td, t + d * stride + w);
      acc += x[d] * td;
    }
    store(row + w, acc);
  }
  for (; w < width; ++w) {
    float acc = row[w];
    for (int d = 0; d < kD; ++d) acc += x[d] * t[d * stride + w];
    row[w] = acc;
  }
}

// out[0, kD) = sum_w weight[w] * rows(w)[0, kD), rows(w) = base + w * stride. Four rows at a
// time into separate sums (independent chains), added in a fixed order at the end.
template <class V, int kD>
[[gnu::always_inline]] inline void weighted_rows(float* out, const float* weight, const float* base,
                                                 std::int64_t stride, std::int64_t width) {
  constexpr int kVectors = kD / kLanes;
  constexpr int kChains = 4;
  V acc[kChains][kVectors] = {};
  std::int64_t w = 0;
  for (; w + kChains <= width; w += kChains) {
    for (int u = 0; u < kChains; ++u) {
      const float ww = weight[w + u];
      const float* row = base + (w + u) * stride;
      for (int c = 0; c < kVectors; ++c) {
        V x;
        load(x, row + c * kLanes);
        acc[u][c] += ww * x;
      }
    }
  }
  for (; w < width; ++w) {
    const float ww = weight[w];
    const float* row = base + w * stride;
    for (int c = 0; c < kVectors; ++c) {
      V x;
      load(x, row + c * kLanes);
      acc[0][c] += ww * x;
    }
  }
  for (int c = 0; c < kVectors; ++c) {
    store(out + c * kLanes, (acc[0][c] + acc[1][c]) + (acc[2][c] + acc[3][c]));
  }
}

// Softmax of row[0, width) in place.
template <class V>
[[gnu::always_inline]] inline void softmax_row(float* row, std::int64_t width) {
  const std::int64_t blocks = width - width % kLanes;
  float m = -std::numeric_limits<float>::infinity();
  if (blocks > 0) {
    V mv;
    load(mv, row);
    for (std::int64_t w = kLanes; w < blocks; w += kLanes) {
      V x;
      load(x, row + w);
      keep_max(mv, x);
    }
    m = lane_max(mv);
  }
  for (std::int64_t w = blocks; w < width; ++w) m = row[w] > m ? row[w] : m;
  V sum = {};
  for (std::int64_t w = 0; w < blocks; w += kLanes) {
    V x;
    load(x, row + w);
    x -= m;
    exp_nonpositive(x);
    store(row + w, x);
    sum += x;
  }
  float total = lane_sum(sum);
  for (std::int64_t w = blocks; w < width; ++w) {
    row[w] = exp_nonpositive_one<V>(row[w] - m);
    total += row[w];
  }
  const float inverse = 1.0F / total;
  for (std::int64_t w = 0; w < blocks; w += kLanes) {
    V x;
    load(x, row + w);
    store(row + w, x * inverse);
  }
  for (std::int64_t w = blocks; w < width; ++w) row[w] *= inverse;
}

}  // namespace gopt::agents::go::lanes
