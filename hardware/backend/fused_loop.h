// Internal to gopt_hardware_backend: the arithmetic of a fused elementwise loop, one tile
// of one member op at a time. A fused group's elementwise members run tile by tile
// (fused_kernel.h), each tile through every member before the next, so that intermediate
// values stay in the first-level cache instead of going to memory between ops: the loop
// fusion a compiler (XLA, TorchScript's NNC) generates, written once here for every
// elementwise op type the backend runs. Plain C++, no LibTorch: fused_loop.cpp is compiled
// with -O3 -ffast-math and an AVX2 clone of run_tile (libmvec's vector exp, tanh, erf), so
// the loops are vectorised like LibTorch's own kernels.
#pragma once

#include <cstdint>
#include <string>

namespace gopt::hardware::backend {

/// One elementwise operation of a fused loop.
enum class LoopOp : std::uint8_t {
  kCopy,  ///< out = a (Cast, Reshape that must be written, identity-like ops)
  kAdd,
  kSub,
  kMul,
  kDiv,
  kMaximum,
  kMinimum,
  kGreaterEqual,       ///< 1 where a >= b, else 0
  kPow,                ///< a^b
  kSquaredDifference,  ///< (a - b)^2
  kSigmoidGrad,        ///< b * a * (1 - a): a = sigmoid output, b = incoming gradient
  kTanhGrad,           ///< b * (1 - a^2)
  kReluGrad,           ///< a where b > 0, else 0: a = incoming gradient, b = input
  kSigmoid,
  kTanh,
  kRelu,
  kExp,
  kLog,
  kSqrt,
  kRsqrt,
  kSquare,
  kNeg,
  kErf,
  kAddN,    ///< sum of every input (at least two)
  kSelect,  ///< b where a > 0.5, else c
};

/// Inputs `op` reads (kAddN: at least 2; the caller may pass more).
[[nodiscard]] int loop_op_arity(LoopOp op);

/// The loop operation of an elementwise op type (TensorFlow and ONNX names, as the
/// unfused kernels of kernels.cpp map them); false for a type without one, which the
/// backend runs as an addition (a proxy, as unfused).
[[nodiscard]] bool loop_op_of(const std::string& op_type, LoopOp& op);

/// out[i] = op(in[0][i], in[1][i], ...) for i in [0, n). `in` holds `num_inputs` pointers
/// of n floats each (loop_op_arity(op) of them, or more for kAddN); `out` may alias none
/// of them except for element-for-element reads of in[0].
void run_tile(LoopOp op, const float* const* in, int num_inputs, float* out, std::int64_t n);

}  // namespace gopt::hardware::backend
