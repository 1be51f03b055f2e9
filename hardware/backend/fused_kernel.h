// Internal to gopt_hardware_backend: the kernel of a fused group (simulator/fusion.h forms
// the groups from a decision's fusion priorities), run by the backend as one task.
//
// The group's members are split into stages, in an order that respects their edges: each
// elementwise member (and each reshape, a view) joins a fused loop of members with its
// element count, every other member (a library call: matrix product, convolution,
// recurrent layer; a reduction, softmax, normalisation, data movement) is a stage of its
// own that runs its unfused LibTorch kernel. A fused loop runs tile by tile
// (kFusedTileElements floats), each tile through all its members (fused_loop.h): values
// passed between them stay in a tile in cache, only outputs that leave the group (or feed
// a member outside the loop) are written to memory, and the group pays one dispatch. So
// matmul -> bias add -> relu runs as the product and one epilogue loop, XLA's output
// fusion; a softmax inside a group still runs as its own kernel. On CUDA every member runs
// its own kernel (no fused loops are generated for GPUs): the group is one task, unfused.
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <vector>

#include "core/compiled_graph.h"
#include "core/graph.h"
#include "hardware/backend/kernels.h"

namespace gopt::hardware::backend {

/// Floats per tile of a fused loop (8 KiB: a tile of every member of a long chain fits in
/// the first- and second-level caches).
inline constexpr std::int64_t kFusedTileElements = 2048;

/// One fused group to build a kernel for.
struct FusedGroupView {
  const core::Graph* graph = nullptr;
  const core::CompiledGraph* compiled = nullptr;
  std::vector<core::NodeId> members;                    ///< in topological order, at least 2
  const std::vector<std::int32_t>* group_of = nullptr;  ///< op -> group (FusionGroups)
  std::int32_t group = 0;                               ///< this group's index in group_of
  bool channels_last = true;                            ///< as OpView::channels_last
};

/// A fused group's kernel and what it is made of.
struct FusedKernel {
  Kernel kernel;              ///< runs the whole group; its operands are held inside `run`
  std::int32_t loop_ops = 0;  ///< members computed inside fused loops
  std::int32_t loops = 0;     ///< fused loops (stages of elementwise members)
  /// Members run as a documented proxy, by op type (as ExecutionResult::proxy_ops).
  std::vector<core::NodeId> proxy_members;
};

/// Builds the kernel of `group` with its operands on `device`.
[[nodiscard]] FusedKernel make_fused_kernel(const FusedGroupView& group,
                                            const torch::Device& device);

}  // namespace gopt::hardware::backend
