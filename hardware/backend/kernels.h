// Internal to gopt_hardware_backend: the LibTorch kernel that runs one graph op, chosen by
// op type and kind so that its shape and arithmetic match the op (docs/hardware-backend.md
// lists the mapping and the proxies). Operands are prepared once per (op, device) so a
// step measures kernels, not allocation of inputs.
#pragma once

#include <torch/torch.h>

#include <functional>
#include <string>
#include <vector>

#include "core/graph.h"

namespace gopt::hardware::backend {

/// What a kernel needs to know about an op: its attributes and the bytes of its data
/// inputs (one entry per data in-edge, in edge order).
struct OpView {
  const core::NodeAttrs* attrs = nullptr;
  std::vector<core::Bytes> input_bytes;
  /// 4-D activations are [N, H, W, C] (TensorFlow graphs) rather than [N, C, H, W] (ONNX).
  bool channels_last = true;
};

/// A prepared kernel: `run(operands)` computes the op's output from `operands`.
struct Kernel {
  std::vector<torch::Tensor> operands;
  std::function<torch::Tensor(std::vector<torch::Tensor>&)> run;
  bool no_work = false;  ///< input, variable, control: nothing is computed
  bool proxy = false;    ///< no faithful kernel: same FLOPs and bytes with another kernel
  std::string what;      ///< "mm [64x512]x[512x256]", for reports and tests
};

/// Builds the kernel of `op` with its operands on `device`. Never throws for odd shapes:
/// every dimension is clamped to at least 1 and derived sizes are rounded.
[[nodiscard]] Kernel make_kernel(const OpView& op, const torch::Device& device);

/// The op's kernel output shape(s) follow the graph's first output shape; this is it
/// (or [bytes_written / element size] when the op lists none).
[[nodiscard]] core::Shape primary_shape(const core::NodeAttrs& attrs);

}  // namespace gopt::hardware::backend
