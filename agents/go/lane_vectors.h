// Sixteen floats as one vector for the fused attention kernel (segment_attention.cpp): a
// GCC vector extension (F16, one AVX-512 register) or the same lanes split into native
// vectors (Split<F8, 2>, Split<F4, 4>), with the arithmetic, exp, lane sums and maxima the
// kernel uses. Internal to the kernel: included by segment_attention.cpp and lane_rows.h only.
#pragma once

#include <cstring>

namespace gopt::agents::go::lanes {

// --- The vector kernel: sixteen floats at a time. A vector V is either one GCC vector
// extension of sixteen floats (F16: one AVX-512 register) or sixteen floats split into
// native vectors (Split<F8, 2>: two AVX2 registers; Split<F4, 4>: four SSE registers). GCC
// has no 64-byte machine mode without AVX-512, so an F16 variable there lives in memory
// and every operation on it goes through the stack; split, each part stays in a register.
// Every operation is lane by lane, so a lane computes the same numbers either way. Values
// are passed by reference: by value, a 64-byte vector changes the calling convention
// between instruction sets.
typedef float F16 __attribute__((vector_size(64)));
typedef float F8 __attribute__((vector_size(32)));
typedef float F4 __attribute__((vector_size(16)));
constexpr int kLanes = 16;

template <class P, int N>
struct Split {
  static constexpr int kPartLanes = kLanes / N;
  P part[N];
  [[gnu::always_inline]] float operator[](int lane) const {
    return part[lane / kPartLanes][lane % kPartLanes];
  }
};

template <class P, int N>
[[gnu::always_inline]] inline void load(Split<P, N>& v, const float* p) {
  for (int i = 0; i < N; ++i) std::memcpy(&v.part[i], p + i * v.kPartLanes, sizeof(P));
}
template <class P, int N>
[[gnu::always_inline]] inline void store(float* p, const Split<P, N>& v) {
  for (int i = 0; i < N; ++i) std::memcpy(p + i * v.kPartLanes, &v.part[i], sizeof(P));
}
[[gnu::always_inline]] inline void load(F16& v, const float* p) { std::memcpy(&v, p, sizeof v); }
[[gnu::always_inline]] inline void store(float* p, const F16& v) { std::memcpy(p, &v, sizeof v); }

// Split's arithmetic, part by part: what the kernel uses of a vector's operators.
#define GOPT_SPLIT_OPERATOR(op)                                                           \
  template <class P, int N>                                                               \
  [[gnu::always_inline]] inline Split<P, N> operator op(const Split<P, N>& a,             \
                                                        const Split<P, N>& b) {           \
    Split<P, N> r;                                                                        \
    for (int i = 0; i < N; ++i) r.part[i] = a.part[i] op b.part[i];                       \
    return r;                                                                             \
  }                                                                                       \
  template <class P, int N>                                                               \
  [[gnu::always_inline]] inline Split<P, N> operator op(const Split<P, N>& a, float b) {  \
    Split<P, N> r;                                                                        \
    for (int i = 0; i < N; ++i) r.part[i] = a.part[i] op b;                               \
    return r;                                                                             \
  }                                                                                       \
  template <class P, int N>                                                               \
  [[gnu::always_inline]] inline Split<P, N> operator op(float a, const Split<P, N>& b) {  \
    Split<P, N> r;                                                                        \
    for (int i = 0; i < N; ++i) r.part[i] = a op b.part[i];                               \
    return r;                                                                             \
  }                                                                                       \
  template <class P, int N, class B>                                                      \
  [[gnu::always_inline]] inline Split<P, N>& operator op##=(Split<P, N>& a, const B& b) { \
    return a = a op b;                                                                    \
  }
GOPT_SPLIT_OPERATOR(+)
GOPT_SPLIT_OPERATOR(-)
GOPT_SPLIT_OPERATOR(*)
#undef GOPT_SPLIT_OPERATOR

// exp(x) for x <= 0 in every lane (softmax arguments less the row maximum), as Cephes'
// expf computes it: x = n ln 2 + r with |r| <= ln 2 / 2, exp(r) by a degree-7 polynomial
// (about 2 ulp), 2^n through the exponent bits. Arguments below -87 give exactly 0, as an
// underflowing exp does: a subnormal weight would make every product with it take the
// CPU's slow path. N: a native vector (F16, F8, F4).
template <class N>
[[gnu::always_inline]] inline void exp_nonpositive(N& x) {
  using I = decltype(x < x);  // the int vector of N's width
  const I underflow = x < -87.0F;
  x = underflow ? N{} - 87.0F : x;
  const N y = x * 1.44269504088896341F + 0.5F;
  I n = __builtin_convertvector(y, I);
  n += __builtin_convertvector(n, N) > y;  // -1 where truncation rounded up: floor
  const N nf = __builtin_convertvector(n, N);
  N r = x - nf * 0.693359375F;
  r = r + nf * 2.12194440e-4F;
  N p = N{} + 1.9875691500e-4F;
  p = p * r + 1.3981999507e-3F;
  p = p * r + 8.3334519073e-3F;
  p = p * r + 4.1665795894e-2F;
  p = p * r + 1.6666665459e-1F;
  p = p * r + 5.0000001201e-1F;
  p = p * r * r + r + 1.0F;
  const I bits = (n + 127) * (1 << 23);
  N scale;
  std::memcpy(&scale, &bits, sizeof scale);
  x = underflow ? N{} : p * scale;
}
template <class P, int N>
[[gnu::always_inline]] inline void exp_nonpositive(Split<P, N>& x) {
  for (int i = 0; i < N; ++i) exp_nonpositive(x.part[i]);
}

// m = the lane-wise maximum of x and m.
[[gnu::always_inline]] inline void keep_max(F16& m, const F16& x) { m = x > m ? x : m; }
template <class P, int N>
[[gnu::always_inline]] inline void keep_max(Split<P, N>& m, const Split<P, N>& x) {
  for (int i = 0; i < N; ++i) m.part[i] = x.part[i] > m.part[i] ? x.part[i] : m.part[i];
}

// The lanes' sum and maximum, in one fixed order.
template <class V>
[[gnu::always_inline]] inline float lane_sum(const V& v) {
  float r = v[0];
  for (int t = 1; t < kLanes; ++t) r += v[t];
  return r;
}
template <class V>
[[gnu::always_inline]] inline float lane_max(const V& v) {
  float r = v[0];
  for (int t = 1; t < kLanes; ++t) r = v[t] > r ? v[t] : r;
  return r;
}

// exp of one float through the vector code (the same numbers as the vector lanes give).
template <class V>
[[gnu::always_inline]] inline float exp_nonpositive_one(float x) {
  V v = V{} + x;
  exp_nonpositive(v);
  return v[0];
}

}  // namespace gopt::agents::go::lanes
