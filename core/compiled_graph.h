// CompiledGraph: the immutable, array-only form of a validated Graph that simulators,
// cost models and agents read millions of times. Built once per graph; every per-op or
// per-edge quantity is a contiguous array indexed by NodeId or edge index, so hot loops
// touch no maps, no strings and allocate nothing.
//
//   CompiledGraph cg = CompiledGraph::compile(graph);
//   for (NodeId v : cg.topological_order())
//     for (auto e = cg.out_begin(v); e < cg.out_end(v); ++e) use(cg.out_target(e),
//     cg.edge_bytes(e));
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/graph.h"

namespace gopt::core {

/// Index of an edge in a CompiledGraph: edges are numbered in out-CSR order (by source
/// node, then in the source's insertion order).
using EdgeIndex = std::int32_t;

class CompiledGraph {
 public:
  /// Compiles a graph. Completes derived sizes on a copy if the graph was not completed,
  /// and throws GraphError if it has a cycle (so a CompiledGraph is always a DAG).
  [[nodiscard]] static CompiledGraph compile(const Graph& graph);

  [[nodiscard]] const std::string& name() const { return name_; }
  [[nodiscard]] const std::string& family() const { return family_; }
  [[nodiscard]] NodeId num_nodes() const { return static_cast<NodeId>(flops_.size()); }
  [[nodiscard]] EdgeIndex num_edges() const { return static_cast<EdgeIndex>(out_target_.size()); }

  // --- Adjacency (CSR). Out-edges of v are [out_begin(v), out_end(v)); in-edges of v are
  // in-slots [in_begin(v), in_end(v)), each naming its source and its edge index.
  [[nodiscard]] EdgeIndex out_begin(NodeId v) const { return out_offset_[idx(v)]; }
  [[nodiscard]] EdgeIndex out_end(NodeId v) const { return out_offset_[idx(v) + 1]; }
  [[nodiscard]] NodeId out_target(EdgeIndex e) const { return out_target_[idx(e)]; }
  [[nodiscard]] EdgeIndex in_begin(NodeId v) const { return in_offset_[idx(v)]; }
  [[nodiscard]] EdgeIndex in_end(NodeId v) const { return in_offset_[idx(v) + 1]; }
  [[nodiscard]] NodeId in_source(EdgeIndex slot) const { return in_source_[idx(slot)]; }
  /// The edge index (into out-order arrays) of in-slot `slot`.
  [[nodiscard]] EdgeIndex in_edge(EdgeIndex slot) const { return in_edge_[idx(slot)]; }
  [[nodiscard]] EdgeIndex out_degree(NodeId v) const { return out_end(v) - out_begin(v); }
  [[nodiscard]] EdgeIndex in_degree(NodeId v) const { return in_end(v) - in_begin(v); }

  /// Tensor bytes carried by edge e (0 for control edges).
  [[nodiscard]] Bytes edge_bytes(EdgeIndex e) const { return edge_bytes_[idx(e)]; }
  [[nodiscard]] bool edge_is_control(EdgeIndex e) const { return edge_control_[idx(e)] != 0; }
  /// The source node of edge e.
  [[nodiscard]] NodeId edge_source(EdgeIndex e) const { return edge_source_[idx(e)]; }

  /// Nodes in a deterministic topological order: Kahn's algorithm with a FIFO queue seeded
  /// with the sources in id order, as TensorFlow's executor schedules ready ops.
  [[nodiscard]] const std::vector<NodeId>& topological_order() const { return topo_order_; }
  /// Position of each node in topological_order().
  [[nodiscard]] const std::vector<NodeId>& topological_rank() const { return topo_rank_; }

  // --- Per-node arrays, indexed by NodeId.
  [[nodiscard]] const std::vector<Flops>& flops() const { return flops_; }
  [[nodiscard]] const std::vector<Bytes>& bytes_read() const { return bytes_read_; }
  [[nodiscard]] const std::vector<Bytes>& bytes_written() const { return bytes_written_; }
  [[nodiscard]] const std::vector<Bytes>& output_bytes() const { return output_bytes_; }
  [[nodiscard]] const std::vector<Bytes>& param_bytes() const { return param_bytes_; }
  [[nodiscard]] const std::vector<OpKind>& kind() const { return kind_; }
  [[nodiscard]] const std::vector<Phase>& phase() const { return phase_; }
  [[nodiscard]] const std::vector<std::int32_t>& layer() const { return layer_; }
  [[nodiscard]] const std::vector<std::int32_t>& branch() const { return branch_; }
  /// Colocation group id per node (index into colocation_groups()), -1 for none.
  [[nodiscard]] const std::vector<std::int32_t>& colocation() const { return colocation_; }
  [[nodiscard]] const std::vector<std::string>& colocation_groups() const { return coloc_names_; }

  // --- For reports and errors (not for hot loops).
  [[nodiscard]] const std::vector<std::string>& node_names() const { return names_; }
  [[nodiscard]] const std::vector<std::string>& op_types() const { return op_types_; }

 private:
  CompiledGraph() = default;
  template <typename I>
  static std::size_t idx(I i) {
    return static_cast<std::size_t>(i);
  }

  std::string name_;
  std::string family_;
  std::vector<EdgeIndex> out_offset_;
  std::vector<NodeId> out_target_;
  std::vector<NodeId> edge_source_;
  std::vector<Bytes> edge_bytes_;
  std::vector<std::uint8_t> edge_control_;
  std::vector<EdgeIndex> in_offset_;
  std::vector<NodeId> in_source_;
  std::vector<EdgeIndex> in_edge_;
  std::vector<NodeId> topo_order_;
  std::vector<NodeId> topo_rank_;
  std::vector<Flops> flops_;
  std::vector<Bytes> bytes_read_;
  std::vector<Bytes> bytes_written_;
  std::vector<Bytes> output_bytes_;
  std::vector<Bytes> param_bytes_;
  std::vector<OpKind> kind_;
  std::vector<Phase> phase_;
  std::vector<std::int32_t> layer_;
  std::vector<std::int32_t> branch_;
  std::vector<std::int32_t> colocation_;
  std::vector<std::string> coloc_names_;
  std::vector<std::string> names_;
  std::vector<std::string> op_types_;
};

}  // namespace gopt::core
