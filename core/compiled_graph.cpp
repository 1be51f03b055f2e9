#include "core/compiled_graph.h"

#include <limits>
#include <unordered_map>

#include "core/errors.h"

namespace gopt::core {

CompiledGraph CompiledGraph::compile(const Graph& source) {
  // Derived sizes must be concrete; complete a copy only when needed.
  bool needs_completion = false;
  for (NodeId v = 0; v < source.num_nodes() && !needs_completion; ++v) {
    const auto& n = source.node(v);
    needs_completion = n.output_bytes == kDerivedBytes || n.bytes_read == kDerivedBytes ||
                       n.bytes_written == kDerivedBytes;
  }
  source.for_each_edge([&](NodeId, NodeId, const EdgeAttrs& e) {
    needs_completion = needs_completion || e.bytes == kDerivedBytes;
  });
  if (needs_completion) {
    Graph completed = source;
    completed.complete();
    return compile(completed);
  }
  source.validate();
  if (source.num_edges() > std::numeric_limits<EdgeIndex>::max()) {
    throw GraphError("", "graph '" + source.name() + "'", "too many edges for 32-bit indices");
  }

  CompiledGraph cg;
  const auto n = static_cast<std::size_t>(source.num_nodes());
  const auto m = static_cast<std::size_t>(source.num_edges());
  cg.name_ = source.name();
  cg.family_ = source.family();

  cg.flops_.resize(n);
  cg.bytes_read_.resize(n);
  cg.bytes_written_.resize(n);
  cg.output_bytes_.resize(n);
  cg.param_bytes_.resize(n);
  cg.kind_.resize(n);
  cg.phase_.resize(n);
  cg.layer_.resize(n);
  cg.branch_.resize(n);
  cg.colocation_.resize(n);
  cg.names_.resize(n);
  cg.op_types_.resize(n);
  std::unordered_map<std::string, std::int32_t> groups;
  for (std::size_t v = 0; v < n; ++v) {
    const auto& a = source.node(static_cast<NodeId>(v));
    cg.flops_[v] = a.flops;
    cg.bytes_read_[v] = a.bytes_read;
    cg.bytes_written_[v] = a.bytes_written;
    cg.output_bytes_[v] = a.output_bytes;
    cg.param_bytes_[v] = a.param_bytes;
    cg.kind_[v] = a.kind;
    cg.phase_[v] = a.phase;
    cg.layer_[v] = a.layer;
    cg.branch_[v] = a.branch;
    cg.names_[v] = a.name;
    cg.op_types_[v] = a.op_type;
    if (a.colocation_group.empty()) {
      cg.colocation_[v] = -1;
    } else {
      auto [it, inserted] =
          groups.emplace(a.colocation_group, static_cast<std::int32_t>(cg.coloc_names_.size()));
      if (inserted) cg.coloc_names_.push_back(a.colocation_group);
      cg.colocation_[v] = it->second;
    }
  }

  // Out-CSR in for_each_edge order; in-CSR by counting sort over destinations, which keeps
  // each node's in-edges in out-edge index order.
  cg.out_offset_.assign(n + 1, 0);
  cg.in_offset_.assign(n + 1, 0);
  cg.out_target_.reserve(m);
  cg.edge_source_.reserve(m);
  cg.edge_bytes_.reserve(m);
  cg.edge_control_.reserve(m);
  source.for_each_edge([&](NodeId s, NodeId d, const EdgeAttrs& e) {
    cg.out_offset_[static_cast<std::size_t>(s) + 1]++;
    cg.in_offset_[static_cast<std::size_t>(d) + 1]++;
    cg.out_target_.push_back(d);
    cg.edge_source_.push_back(s);
    cg.edge_bytes_.push_back(e.bytes);
    cg.edge_control_.push_back(e.control ? 1 : 0);
  });
  for (std::size_t v = 0; v < n; ++v) {
    cg.out_offset_[v + 1] += cg.out_offset_[v];
    cg.in_offset_[v + 1] += cg.in_offset_[v];
  }
  cg.in_source_.resize(m);
  cg.in_edge_.resize(m);
  std::vector<EdgeIndex> fill(cg.in_offset_.begin(), cg.in_offset_.end() - 1);
  for (std::size_t e = 0; e < m; ++e) {
    auto d = static_cast<std::size_t>(cg.out_target_[e]);
    auto slot = static_cast<std::size_t>(fill[d]++);
    cg.in_source_[slot] = cg.edge_source_[e];
    cg.in_edge_[slot] = static_cast<EdgeIndex>(e);
  }

  // Kahn's algorithm with a FIFO queue; the order vector doubles as the queue.
  std::vector<EdgeIndex> pending(n);
  cg.topo_order_.reserve(n);
  for (std::size_t v = 0; v < n; ++v) {
    pending[v] = cg.in_offset_[v + 1] - cg.in_offset_[v];
    if (pending[v] == 0) cg.topo_order_.push_back(static_cast<NodeId>(v));
  }
  for (std::size_t head = 0; head < cg.topo_order_.size(); ++head) {
    auto v = static_cast<std::size_t>(cg.topo_order_[head]);
    for (auto e = cg.out_offset_[v]; e < cg.out_offset_[v + 1]; ++e) {
      auto w = static_cast<std::size_t>(cg.out_target_[static_cast<std::size_t>(e)]);
      if (--pending[w] == 0) cg.topo_order_.push_back(static_cast<NodeId>(w));
    }
  }
  GOPT_ASSERT(cg.topo_order_.size() == n, "validated graph has no topological order");
  cg.topo_rank_.resize(n);
  for (std::size_t i = 0; i < n; ++i) {
    cg.topo_rank_[static_cast<std::size_t>(cg.topo_order_[i])] = static_cast<NodeId>(i);
  }
  return cg;
}

}  // namespace gopt::core
