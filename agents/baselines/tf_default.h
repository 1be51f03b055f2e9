// TensorFlow's default pipeline as the GO paper's Table 3 baseline ("TF default"): a
// placement (the human expert's, or one device), the executor's FIFO schedule, and
// rule-based fusion as XLA's instruction fusion does it, expressed as per-op fusion
// priorities that the simulator's documented procedure (simulator/fusion.h) turns into
// groups. The rules and their approximations are in docs/agents.md ("tf_default").
//
//   auto fusion = xla_fusion_priorities(graph, &placement, XlaFusionOptions());
//   core::Decision d;
//   d.placement = placement;
//   d.fusion = fusion;
#pragma once

#include <cstdint>
#include <vector>

#include "agents/registry.h"
#include "core/compiled_graph.h"
#include "core/options.h"

namespace gopt::agents {

/// Limits XLA puts on one fusion. Defaults here and nowhere else.
struct XlaFusionOptions {
  /// Most operands (distinct producers outside the group) plus outputs (members whose
  /// result leaves the group or is a graph output) of one fused kernel; 0 = no limit.
  /// Default 64: kMaxOperandsAndOutputsPerFusion of XLA's GPU backend
  /// (tensorflow/compiler/xla/service/gpu/gpu_fusible.h, 2020).
  GOPT_OPTION(std::int32_t, max_operands_and_outputs, 64)
  /// Most ops in one fused kernel; 0 = no limit (XLA has none of its own).
  GOPT_OPTION(std::int32_t, max_ops, 0)
};

/// Every option of `tf_default`, with its default.
struct TfDefaultOptions {
  GOPT_OPTION(bool, single_device,
              false)               ///< every op on device 0, not the human expert's placement
  GOPT_OPTION(bool, fusion, true)  ///< XLA-style rule-based fusion; false: TensorFlow without XLA
  GOPT_OPTION(XlaFusionOptions, xla, {})  ///< XLA's limits on one fusion
};

/// True for op kinds XLA's GPU backend fuses (loop and input fusion): elementwise
/// (broadcasts included), reductions, softmax and normalisation (XLA expands them into
/// elementwise ops and reductions), data movement (transpose, slice, concat, pad) and
/// reshapes. Library calls (matmul, conv, recurrent layers: cuBLAS / cuDNN), pooling,
/// embeddings, optimizer updates, inputs, variables and control ops are never fused.
[[nodiscard]] bool xla_fusible(core::OpKind kind);

/// Per-op fusion priorities (for core::Decision::fusion) that make the simulator's fusion
/// procedure form XLA-like groups under `placement` (nullptr = every op on device 0):
/// fusible ops get 1 + their topological rank (so producer->consumer pairs nearest the
/// graph's outputs merge first, as XLA walks from the root towards the inputs), the others
/// 0. An op that alone reads more tensors than the operand limit allows gets 0. Then, while
/// a group breaks a limit of `options`, members from the middle of the group (in
/// topological order, never its last) are set to 0, one for too many ops and as many as the
/// excess for too many operands and outputs, and the groups are formed again; each round
/// removes at least one op from fusion, so this terminates.
[[nodiscard]] std::vector<std::int32_t> xla_fusion_priorities(const core::CompiledGraph& graph,
                                                              const core::DeviceId* placement,
                                                              const XlaFusionOptions& options);

/// TensorFlow's default placement for `problem`: the human expert's, or every op on device 0
/// with `single_device`.
[[nodiscard]] std::vector<core::DeviceId> tf_default_placement(const Problem& problem,
                                                               bool single_device);

/// Registers `tf_default`.
void register_tf_default(AgentRegistry& registry);

}  // namespace gopt::agents
