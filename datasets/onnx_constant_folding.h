// Partial evaluation of small tensors during ONNX import: the contents of shape-like values
// (Shape -> Gather -> Concat -> Reshape chains, Range, Where, ...) so that shape inference
// resolves ops whose output shape depends on an input's values. Private to datasets/
// (onnx_importer.cpp); see docs/onnx-import.md for the ops that fold.
#pragma once

#include <onnx/onnx_pb.h>

#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/graph.h"

namespace gopt::datasets::onnx_folding {

/// Largest tensor whose contents are tracked, in elements. Bigger tensors (weights) are
/// never copied; their contents stay unknown.
inline constexpr std::int64_t kMaxFoldedElements = 4096;

/// The contents of a small tensor, row-major. Integer and boolean types keep exact int64
/// values (so INT64_MAX slice ends survive), floating types doubles.
struct KnownTensor {
  std::int32_t elem_type = 0;  ///< onnx::TensorProto_DataType
  core::Shape shape;
  std::vector<std::int64_t> ints;  ///< integer and bool types
  std::vector<double> reals;       ///< float and double

  [[nodiscard]] bool floating() const;
  [[nodiscard]] std::size_t size() const { return floating() ? reals.size() : ints.size(); }
  [[nodiscard]] double real(std::size_t i) const;
  [[nodiscard]] std::int64_t integer(std::size_t i) const;
};

/// An output's inferred type: element type and shape (nullopt when not fully known).
struct OutputType {
  std::int32_t elem_type = 0;
  std::optional<core::Shape> shape;
};

/// A bad value met while folding, e.g. a Gather index out of range. `field` names the
/// input or attribute ("input 'indices'"), `what()` says what was expected and found.
class FoldError : public std::runtime_error {
 public:
  FoldError(std::string field, const std::string& problem)
      : std::runtime_error(problem), field_(std::move(field)) {}
  [[nodiscard]] const std::string& field() const { return field_; }

 private:
  std::string field_;
};

/// True for the element types whose contents are tracked (integers, bool, float, double).
[[nodiscard]] bool foldable_type(std::int32_t elem_type);

/// The contents of an initializer or a Constant's tensor: nullopt when the data is
/// external, the tensor has more than kMaxFoldedElements elements or its type is not
/// tracked. Throws FoldError when the stored values do not match the dims.
[[nodiscard]] std::optional<KnownTensor> read_tensor(const onnx::TensorProto& tensor);

/// The tensor as a TensorProto (for ONNX's shape-inference functions, which read the
/// values of Reshape's shape, Slice's starts, ...).
[[nodiscard]] onnx::TensorProto to_proto(const KnownTensor& tensor);

/// Folds one node: the contents of each output when the inputs it reads are known and the
/// output has a known shape of at most kMaxFoldedElements elements; nullopt otherwise.
/// `inputs[i]` is null for an unknown or omitted input; `input_shapes[i]` null for an
/// omitted one. Ops that are not folded give nullopt for every output.
[[nodiscard]] std::vector<std::optional<KnownTensor>> fold_node(
    const onnx::NodeProto& node, std::int64_t opset, const std::vector<const KnownTensor*>& inputs,
    const std::vector<const core::Shape*>& input_shapes, const std::vector<OutputType>& outputs);

}  // namespace gopt::datasets::onnx_folding
