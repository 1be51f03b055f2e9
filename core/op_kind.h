// The op catalogue: coarse op kinds the cost model, features and baselines reason about,
// the mapping from framework op type names (TensorFlow 1.x and ONNX spellings) to kinds,
// tensor element types, and the forward/backward/update phase of a training graph.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace gopt::core {

/// What an op does, at the granularity a roofline cost model distinguishes. The cost
/// model holds one efficiency factor per kind; features embed the kind.
enum class OpKind : std::uint8_t {
  kInput,          ///< placeholder, constant, iterator: produces data, no compute
  kVariable,       ///< a resident parameter (reads it)
  kMatMul,         ///< dense matrix products: MatMul, BatchMatMul, Gemm, Einsum
  kConv,           ///< convolutions and their gradients
  kPool,           ///< max / average pooling and their gradients
  kElementwise,    ///< unary and binary pointwise arithmetic and activations
  kReduction,      ///< sums, means, max over axes; bias gradients
  kNormalization,  ///< batch / layer normalisation and their gradients
  kSoftmax,        ///< softmax, log-softmax, cross-entropy
  kEmbedding,      ///< gathers and scatters over an embedding table
  kDataMovement,   ///< concat, split, slice, transpose, pad, tile: copies bytes
  kReshape,        ///< reshape, identity, squeeze: metadata only, no data copied
  kRecurrent,      ///< a whole fused RNN layer (ONNX LSTM/GRU/RNN)
  kUpdate,         ///< optimizer update of a parameter (ApplyAdam, ApplyGradientDescent)
  kControl,        ///< NoOp, control dependencies, assertions
  kOther,          ///< anything else: costed by bytes moved
};

/// Number of OpKind values; kinds index arrays `[0, kNumOpKinds)`.
inline constexpr int kNumOpKinds = static_cast<int>(OpKind::kOther) + 1;

/// Lower-case snake_case name used in files and profiles, e.g. "matmul", "data_movement".
[[nodiscard]] std::string_view to_string(OpKind kind);
/// Inverse of to_string; std::nullopt for an unknown name.
[[nodiscard]] std::optional<OpKind> op_kind_from_string(std::string_view name);
/// Every kind name, in enum order (for error messages listing valid values).
[[nodiscard]] std::vector<std::string> op_kind_names();

/// Maps a framework op type ("MatMul", "Conv2DBackpropFilter", "Relu", "Gemm", ...) to its
/// kind. Unknown types map to OpKind::kOther. Case-sensitive, as the frameworks are.
[[nodiscard]] OpKind classify_op_type(std::string_view op_type);

/// Element type of a tensor.
enum class DType : std::uint8_t {
  kFloat32,
  kFloat16,
  kBFloat16,
  kFloat64,
  kInt8,
  kUInt8,
  kInt32,
  kInt64,
  kBool
};

[[nodiscard]] std::string_view to_string(DType dtype);  ///< "float32", "int64", ...
[[nodiscard]] std::optional<DType> dtype_from_string(std::string_view name);
[[nodiscard]] std::vector<std::string> dtype_names();
/// Size of one element in bytes.
[[nodiscard]] int dtype_size_bytes(DType dtype);

/// Which part of a training step an op belongs to.
enum class Phase : std::uint8_t { kUnknown, kForward, kBackward, kUpdate };

[[nodiscard]] std::string_view to_string(Phase phase);  ///< "unknown", "forward", ...
[[nodiscard]] std::optional<Phase> phase_from_string(std::string_view name);
[[nodiscard]] std::vector<std::string> phase_names();

}  // namespace gopt::core
