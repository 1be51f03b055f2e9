// Op fusion: turns per-op fusion priorities into fused groups, each run by the simulator as
// one kernel. The procedure is deterministic and never creates a cycle between groups:
//
//   1. Candidates are the data edges u -> v (not control edges) with both ops on the same
//      device and fusion[u] > 0 and fusion[v] > 0, neither of them an input or a variable
//      (fusable_kind): their data is in device memory before the step, so a fused kernel
//      reads it like any operand (XLA's fusion parameters) rather than taking it over.
//   2. They are visited in decreasing min(fusion[u], fusion[v]), ties by edge index.
//   3. The groups A (holding u) and B (holding v) are merged (union-find) when A != B, at
//      most one of them holds a library call (library_kind: a matrix product, convolution
//      or recurrent layer, which a GPU runs as a cuBLAS / cuDNN kernel; a fused kernel can
//      wrap one such call with elementwise prologues and epilogues, as XLA's output fusion
//      and cuBLASLt epilogues do, never two), and
//      either every edge leaving A enters B, or every edge entering B leaves A (control
//      edges included). Either condition rules out a path A -> X -> ... -> B through a
//      third group, so the merged group keeps the group graph acyclic. The rule is
//      sufficient, not necessary: a few safe merges (e.g. A with two successors, B and a
//      group that does not reach B) are skipped. It fuses chains, fan-ins into a single
//      consumer and fan-outs from a single producer completely.
//   4. Groups are numbered by their first member in topological order; members are listed
//      in topological order.
//
// Cost: O(E log E) for sorting candidates plus near-linear union-find and list work (each
// group keeps linked lists of its boundary edges; lists are concatenated on merge and
// internal edges dropped lazily).
#pragma once

#include <cstdint>
#include <vector>

#include "core/compiled_graph.h"
#include "core/decision.h"

namespace gopt::simulator {

using core::DeviceId;
using core::NodeId;

/// False for the kinds that are never fused whatever their fusion priority: inputs and
/// variables, whose outputs are in memory before the step (folding them into a consumer's
/// kernel would make the consumer's read of them free).
[[nodiscard]] constexpr bool fusable_kind(core::OpKind kind) {
  return kind != core::OpKind::kInput && kind != core::OpKind::kVariable;
}

/// True for the kinds a GPU runs as a library call (cuBLAS, cuDNN): at most one per fused
/// group.
[[nodiscard]] constexpr bool library_kind(core::OpKind kind) {
  return kind == core::OpKind::kMatMul || kind == core::OpKind::kConv ||
         kind == core::OpKind::kRecurrent;
}

/// Fused groups of a graph under one decision.
struct FusionGroups {
  std::vector<std::int32_t> group_of;       ///< op -> group
  std::vector<std::int32_t> member_offset;  ///< group g's members: [offset[g], offset[g+1])
  std::vector<NodeId> members;              ///< by group, each group in topological order

  [[nodiscard]] std::int32_t num_groups() const {
    return member_offset.empty() ? 0 : static_cast<std::int32_t>(member_offset.size() - 1);
  }
  [[nodiscard]] std::int32_t group_size(std::int32_t g) const {
    return member_offset[static_cast<std::size_t>(g) + 1] -
           member_offset[static_cast<std::size_t>(g)];
  }
};

/// Reusable scratch buffers, so that repeated fusion does not allocate in steady state.
class FusionWorkspace {
 public:
  /// Forms the groups of `graph` for `placement` (nullptr = every op on device 0) and
  /// per-op `fusion` priorities (size num_nodes, values >= 0) into `out`.
  void form_groups(const core::CompiledGraph& graph, const DeviceId* placement,
                   const std::int32_t* fusion, FusionGroups& out);

 private:
  std::int32_t find(std::int32_t v);
  bool all_out_edges_enter(const core::CompiledGraph& graph, std::int32_t a, std::int32_t b);
  bool all_in_edges_leave(const core::CompiledGraph& graph, std::int32_t a, std::int32_t b);

  std::vector<std::int32_t> parent_;
  std::vector<std::int32_t> size_;
  std::vector<std::int32_t> library_;  ///< per group root: library calls among its members
  std::vector<std::pair<std::int64_t, core::EdgeIndex>> candidates_;
  // Per group: singly linked lists of boundary out-edges (edge indices) and in-slots.
  std::vector<std::int32_t> next_out_;
  std::vector<std::int32_t> head_out_;
  std::vector<std::int32_t> tail_out_;
  std::vector<std::int32_t> next_in_;
  std::vector<std::int32_t> head_in_;
  std::vector<std::int32_t> tail_in_;
  std::vector<std::int32_t> root_group_;
};

/// Convenience: the groups for a decision (placement absent = device 0, fusion absent =
/// every op alone).
[[nodiscard]] FusionGroups form_fusion_groups(const core::CompiledGraph& graph,
                                              const core::Decision& decision);

/// True when the graph contracted by `groups` has no cycle (a test of the procedure).
[[nodiscard]] bool groups_are_acyclic(const core::CompiledGraph& graph, const FusionGroups& groups);

}  // namespace gopt::simulator
