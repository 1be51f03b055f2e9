#include "core/graph_summary.h"

#include <algorithm>
#include <map>

namespace gopt::core {

std::vector<NodeId> longest_path(const CompiledGraph& graph, const std::vector<double>& weight,
                                 double* total_weight) {
  const auto n = static_cast<std::size_t>(graph.num_nodes());
  std::vector<double> best(n, 0.0);
  std::vector<NodeId> parent(n, -1);
  for (NodeId v : graph.topological_order()) {
    auto vi = static_cast<std::size_t>(v);
    double from = 0.0;
    for (auto s = graph.in_begin(v); s < graph.in_end(v); ++s) {
      auto u = graph.in_source(s);
      if (parent[vi] < 0 || best[static_cast<std::size_t>(u)] > from) {
        from = best[static_cast<std::size_t>(u)];
        parent[vi] = u;
      }
    }
    best[vi] = from + weight[vi];
  }
  std::vector<NodeId> path;
  if (n == 0) {
    if (total_weight) *total_weight = 0.0;
    return path;
  }
  auto end = static_cast<NodeId>(std::max_element(best.begin(), best.end()) - best.begin());
  if (total_weight) *total_weight = best[static_cast<std::size_t>(end)];
  for (NodeId v = end; v >= 0; v = parent[static_cast<std::size_t>(v)]) path.push_back(v);
  std::reverse(path.begin(), path.end());
  return path;
}

GraphSummary summarize(const CompiledGraph& graph) {
  GraphSummary s;
  s.name = graph.name();
  s.family = graph.family();
  s.num_nodes = graph.num_nodes();
  s.num_edges = graph.num_edges();
  std::map<std::string, std::int64_t> by_type;
  std::vector<std::int64_t> by_kind(kNumOpKinds, 0);
  for (NodeId v = 0; v < graph.num_nodes(); ++v) {
    auto i = static_cast<std::size_t>(v);
    s.total_flops += graph.flops()[i];
    s.total_param_bytes += graph.param_bytes()[i];
    s.total_output_bytes += graph.output_bytes()[i];
    by_type[graph.op_types()[i]]++;
    by_kind[static_cast<std::size_t>(graph.kind()[i])]++;
  }
  for (EdgeIndex e = 0; e < graph.num_edges(); ++e) {
    s.total_edge_bytes += graph.edge_bytes(e);
    if (graph.edge_is_control(e)) s.num_control_edges++;
  }
  s.ops_by_type.assign(by_type.begin(), by_type.end());
  std::stable_sort(s.ops_by_type.begin(), s.ops_by_type.end(),
                   [](const auto& a, const auto& b) { return a.second > b.second; });
  for (int k = 0; k < kNumOpKinds; ++k) {
    if (by_kind[static_cast<std::size_t>(k)] > 0) {
      s.ops_by_kind.emplace_back(std::string(to_string(static_cast<OpKind>(k))),
                                 by_kind[static_cast<std::size_t>(k)]);
    }
  }
  std::vector<double> ones(static_cast<std::size_t>(graph.num_nodes()), 1.0);
  s.longest_path = longest_path(graph, ones);
  s.heaviest_path = longest_path(graph, graph.flops(), &s.heaviest_path_flops);
  return s;
}

}  // namespace gopt::core
