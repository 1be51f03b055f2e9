// Whole-graph figures for reports and `gopt graph info`: sizes, totals, op types and the
// longest paths, computed in one pass over a CompiledGraph.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "core/compiled_graph.h"

namespace gopt::core {

struct GraphSummary {
  std::string name;
  std::string family;
  NodeId num_nodes = 0;
  EdgeIndex num_edges = 0;
  EdgeIndex num_control_edges = 0;
  Flops total_flops = 0;
  Bytes total_param_bytes = 0;
  Bytes total_output_bytes = 0;  ///< sum of every op's output (activation) bytes
  Bytes total_edge_bytes = 0;    ///< sum of tensor bytes over all edges
  /// (op type, count), most frequent first, ties by name.
  std::vector<std::pair<std::string, std::int64_t>> ops_by_type;
  /// (op kind name, count) in OpKind order, kinds with no op left out.
  std::vector<std::pair<std::string, std::int64_t>> ops_by_kind;
  /// The path with the most ops (the graph's depth), source to sink, as node ids.
  std::vector<NodeId> longest_path;
  /// The path with the most FLOPs, and its FLOPs (a zero-communication critical path on a
  /// device that runs at one FLOP per second).
  std::vector<NodeId> heaviest_path;
  Flops heaviest_path_flops = 0;
};

/// Computes the summary in O(nodes + edges).
[[nodiscard]] GraphSummary summarize(const CompiledGraph& graph);

/// The longest path under a per-node weight, as node ids from a source to a sink.
/// Ties prefer the earlier predecessor in in-edge order, so the result is deterministic.
[[nodiscard]] std::vector<NodeId> longest_path(const CompiledGraph& graph,
                                               const std::vector<double>& node_weight,
                                               double* total_weight = nullptr);

}  // namespace gopt::core
