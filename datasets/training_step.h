// The tail of a training step, written once for the workload generators
// (training_graph_builder.cpp) and the ONNX importer (onnx_importer.cpp --training): the
// op that sums a value's partial gradients, one optimizer update per variable with its
// FLOPs and memory traffic, and the train_op every update feeds. Each caller adds the ops
// to its own graph with its own naming and edges; what the ops are and cost is here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "core/graph.h"

namespace gopt::datasets {

/// Optimizer whose update ops end the training step.
enum class Optimizer : std::uint8_t {
  kAdam,             ///< ApplyAdam; two slot tensors per variable (param_bytes 3x weights)
  kGradientDescent,  ///< ApplyGradientDescent; no slots
};

/// Parses "adam" / "sgd"; std::nullopt otherwise.
[[nodiscard]] std::optional<Optimizer> optimizer_from_string(std::string_view name);
/// "adam" or "sgd", the graph attribute `optimizer`.
[[nodiscard]] std::string_view optimizer_name(Optimizer optimizer);

/// The op summing `parts` partial gradients of a value of `shape` produced by `owner`
/// (AddN, one addition per element and extra part).
struct GradientSum {
  std::string name;  ///< "gradients/<owner>_grad/AddN", before the caller makes it unique
  std::string_view op_type = "AddN";
  core::Flops flops = 0;
};
[[nodiscard]] GradientSum gradient_sum(const std::string& owner, const core::Shape& shape,
                                       std::size_t parts);

/// The update op of a variable of `shape` holding `bytes`. ApplyAdam reads the variable,
/// its two slots and the gradient and writes all three back; the slots are resident with
/// the update op. ApplyGradientDescent reads the variable and the gradient and writes the
/// variable.
struct VariableUpdate {
  std::string name;  ///< "<variable>/ApplyAdam", before the caller makes it unique
  std::string_view op_type;
  core::Flops flops = 0;
  core::Bytes param_bytes = 0;
  core::Bytes bytes_read = 0;
  core::Bytes bytes_written = 0;
};
[[nodiscard]] VariableUpdate variable_update(const std::string& variable, Optimizer optimizer,
                                             const core::Shape& shape, core::Bytes bytes);

/// The op that ends the step: every update feeds it by a control edge.
inline constexpr std::string_view kTrainOpName = "train_op";
inline constexpr std::string_view kTrainOpType = "NoOp";

}  // namespace gopt::datasets
