#include "hardware/backend/fused_loop.h"

#include <cmath>
#include <map>

// -O3 -ffast-math for this file only (hardware/backend/CMakeLists.txt): fast-math lets GCC
// call libmvec's vector exp/tanh/erf, and the AVX2 clone below vectorises 8 floats wide on
// every CPU with AVX2 (AVX-512 CPUs included, so that a fused loop does the same work on
// both). The values are timing operands, never results anyone reads.
#if defined(__GNUC__) && defined(__x86_64__) && !defined(__clang__)
#define GOPT_LOOP_CLONES __attribute__((target_clones("avx2", "default")))
#else
#define GOPT_LOOP_CLONES
#endif

namespace gopt::hardware::backend {

int loop_op_arity(LoopOp op) {
  switch (op) {
    case LoopOp::kCopy:
    case LoopOp::kSigmoid:
    case LoopOp::kTanh:
    case LoopOp::kRelu:
    case LoopOp::kExp:
    case LoopOp::kLog:
    case LoopOp::kSqrt:
    case LoopOp::kRsqrt:
    case LoopOp::kSquare:
    case LoopOp::kNeg:
    case LoopOp::kErf:
      return 1;
    case LoopOp::kSelect:
      return 3;
    default:
      return 2;
  }
}

bool loop_op_of(const std::string& op_type, LoopOp& op) {
  static const std::map<std::string, LoopOp> kOps = {
      {"Sigmoid", LoopOp::kSigmoid},
      {"Tanh", LoopOp::kTanh},
      {"Relu", LoopOp::kRelu},
      {"Exp", LoopOp::kExp},
      {"Log", LoopOp::kLog},
      {"Sqrt", LoopOp::kSqrt},
      {"Rsqrt", LoopOp::kRsqrt},
      {"Square", LoopOp::kSquare},
      {"Neg", LoopOp::kNeg},
      {"Erf", LoopOp::kErf},
      {"Cast", LoopOp::kCopy},
      {"SigmoidGrad", LoopOp::kSigmoidGrad},
      {"TanhGrad", LoopOp::kTanhGrad},
      {"ReluGrad", LoopOp::kReluGrad},
      {"Mul", LoopOp::kMul},
      {"Sub", LoopOp::kSub},
      {"RealDiv", LoopOp::kDiv},
      {"Div", LoopOp::kDiv},
      {"Maximum", LoopOp::kMaximum},
      {"Max", LoopOp::kMaximum},
      {"Minimum", LoopOp::kMinimum},
      {"Min", LoopOp::kMinimum},
      {"GreaterEqual", LoopOp::kGreaterEqual},
      {"Greater", LoopOp::kGreaterEqual},
      {"Less", LoopOp::kGreaterEqual},
      {"Equal", LoopOp::kGreaterEqual},
      {"Pow", LoopOp::kPow},
      {"SquaredDifference", LoopOp::kSquaredDifference},
      {"AddN", LoopOp::kAddN},
      {"Sum", LoopOp::kAddN},
      {"Add", LoopOp::kAdd},
      {"AddV2", LoopOp::kAdd},
      {"BiasAdd", LoopOp::kAdd},
      {"Where", LoopOp::kSelect},
      {"Select", LoopOp::kSelect},
      {"SelectV2", LoopOp::kSelect},
  };
  auto it = kOps.find(op_type);
  if (it == kOps.end()) return false;
  op = it->second;
  return true;
}

GOPT_LOOP_CLONES
void run_tile(LoopOp op, const float* const* in, int num_inputs, float* out, std::int64_t n) {
  const float* a = in[0];
  const float* b = num_inputs > 1 ? in[1] : nullptr;
  const float* c = num_inputs > 2 ? in[2] : nullptr;
  switch (op) {
    case LoopOp::kCopy:
      for (std::int64_t i = 0; i < n; ++i) out[i] = a[i];
      return;
    case LoopOp::kAdd:
      for (std::int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
      return;
    case LoopOp::kSub:
      for (std::int64_t i = 0; i < n; ++i) out[i] = a[i] - b[i];
      return;
    case LoopOp::kMul:
      for (std::int64_t i = 0; i < n; ++i) out[i] = a[i] * b[i];
      return;
    case LoopOp::kDiv:
      for (std::int64_t i = 0; i < n; ++i) out[i] = a[i] / b[i];
      return;
    case LoopOp::kMaximum:
      for (std::int64_t i = 0; i < n; ++i) out[i] = a[i] > b[i] ? a[i] : b[i];
      return;
    case LoopOp::kMinimum:
      for (std::int64_t i = 0; i < n; ++i) out[i] = a[i] < b[i] ? a[i] : b[i];
      return;
    case LoopOp::kGreaterEqual:
      for (std::int64_t i = 0; i < n; ++i) out[i] = a[i] >= b[i] ? 1.0F : 0.0F;
      return;
    case LoopOp::kPow:
      for (std::int64_t i = 0; i < n; ++i) out[i] = std::pow(a[i], b[i]);
      return;
    case LoopOp::kSquaredDifference:
      for (std::int64_t i = 0; i < n; ++i) {
        float d = a[i] - b[i];
        out[i] = d * d;
      }
      return;
    case LoopOp::kSigmoidGrad:
      for (std::int64_t i = 0; i < n; ++i) out[i] = b[i] * a[i] * (1.0F - a[i]);
      return;
    case LoopOp::kTanhGrad:
      for (std::int64_t i = 0; i < n; ++i) out[i] = b[i] * (1.0F - a[i] * a[i]);
      return;
    case LoopOp::kReluGrad:
      for (std::int64_t i = 0; i < n; ++i) out[i] = b[i] > 0.0F ? a[i] : 0.0F;
      return;
    case LoopOp::kSigmoid:
      for (std::int64_t i = 0; i < n; ++i) out[i] = 1.0F / (1.0F + std::exp(-a[i]));
      return;
    case LoopOp::kTanh:
      for (std::int64_t i = 0; i < n; ++i) out[i] = std::tanh(a[i]);
      return;
    case LoopOp::kRelu:
      for (std::int64_t i = 0; i < n; ++i) out[i] = a[i] > 0.0F ? a[i] : 0.0F;
      return;
    case LoopOp::kExp:
      for (std::int64_t i = 0; i < n; ++i) out[i] = std::exp(a[i]);
      return;
    case LoopOp::kLog:
      for (std::int64_t i = 0; i < n; ++i) out[i] = std::log(a[i]);
      return;
    case LoopOp::kSqrt:
      for (std::int64_t i = 0; i < n; ++i) out[i] = std::sqrt(a[i]);
      return;
    case LoopOp::kRsqrt:
      for (std::int64_t i = 0; i < n; ++i) out[i] = 1.0F / std::sqrt(a[i]);
      return;
    case LoopOp::kSquare:
      for (std::int64_t i = 0; i < n; ++i) out[i] = a[i] * a[i];
      return;
    case LoopOp::kNeg:
      for (std::int64_t i = 0; i < n; ++i) out[i] = -a[i];
      return;
    case LoopOp::kErf:
      for (std::int64_t i = 0; i < n; ++i) out[i] = std::erf(a[i]);
      return;
    case LoopOp::kAddN:
      for (std::int64_t i = 0; i < n; ++i) out[i] = a[i] + b[i];
      for (int k = 2; k < num_inputs; ++k) {
        const float* x = in[k];
        for (std::int64_t i = 0; i < n; ++i) out[i] += x[i];
      }
      return;
    case LoopOp::kSelect:
      for (std::int64_t i = 0; i < n; ++i) out[i] = a[i] > 0.5F ? b[i] : c[i];
      return;
  }
}

}  // namespace gopt::hardware::backend
