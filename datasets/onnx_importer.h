// ONNX import: turns an ONNX ModelProto (an inference graph exported from PyTorch,
// TensorFlow, ...) into a gopt Graph with shapes, FLOPs and bytes, and optionally into a
// training step (gradient and update ops), so that placement can be studied on real models.
// Initializers become parameter bytes from their declared dims alone, so models saved with
// external data import without their data files; shape arithmetic on small tensors (the
// Shape -> Gather -> Concat -> Reshape chains of PyTorch's exports) is evaluated at import.
// See docs/onnx-import.md.
//
//   OnnxImportResult r = import_onnx("resnet50.onnx", OnnxImportOptions().with_batch(32));
//   if (!r.warning.empty()) std::cerr << r.warning << "\n";
//   core::write_graph_file(r.graph, "resnet50.json");
#pragma once

#include <cstdint>
#include <filesystem>
#include <string>
#include <string_view>
#include <vector>

#include "core/graph.h"
#include "core/options.h"
#include "datasets/training_step.h"

namespace gopt::datasets {

struct OnnxImportOptions {
  /// Value substituted for the dynamic leading (batch) dimension of graph inputs; 0: a
  /// dynamic dimension is an error.
  GOPT_OPTION(std::int64_t, batch, 0)
  /// Append gradient ops for every op that depends on a trainable initializer, one update
  /// op per initializer and a `train_op` NoOp.
  GOPT_OPTION(bool, training, false)
  GOPT_OPTION(Optimizer, optimizer, Optimizer::kAdam)
};

struct OnnxImportResult {
  core::Graph graph;
  /// Op types that have no FLOPs rule; their ops are costed by bytes only. Sorted.
  std::vector<std::string> uncosted_op_types;
  /// One line listing uncosted_op_types, empty when there are none.
  std::string warning;
};

/// Imports an ONNX file. Throws core::InputError naming the file (and the node or input
/// where it applies) for an unreadable, truncated or corrupt file, a dynamic dimension
/// without `batch`, an op whose output shape cannot be inferred, or a bad value in shape
/// arithmetic (a Gather index out of range, an integer division by zero).
[[nodiscard]] OnnxImportResult import_onnx(const std::filesystem::path& path,
                                           const OnnxImportOptions& options = {});

/// Imports a serialized ModelProto; `source` names it in errors and becomes the graph name
/// (its file stem).
[[nodiscard]] OnnxImportResult import_onnx_bytes(std::string_view serialized,
                                                 const std::string& source,
                                                 const OnnxImportOptions& options = {});

}  // namespace gopt::datasets
