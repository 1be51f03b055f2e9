#include "simulator/packed_graph.h"

#include <algorithm>
#include <limits>

#include "core/errors.h"

namespace gopt::simulator {

PackedGraph::PackedGraph(const core::CompiledGraph& graph, const hardware::Cluster& cluster,
                         const hardware::CostModel& cost_model)
    : graph_(graph),
      n_(graph.num_nodes()),
      num_types_(cluster.num_device_types()),
      topo_order_(graph.topological_order().data()),
      topo_rank_(graph.topological_rank().data()),
      output_bytes_(graph.output_bytes().data()) {
  GOPT_ASSERT(&cost_model.cluster() == &cluster ||
                  cost_model.cluster().num_devices() == cluster.num_devices(),
              "the cost model was built for another cluster");
  // Op times, once per device type.
  std::vector<DeviceId> representative(at(num_types_), -1);
  for (DeviceId d = 0; d < cluster.num_devices(); ++d) {
    device_type_.push_back(cluster.device_type_index(d));
    if (representative[at(device_type_.back())] < 0) representative[at(device_type_.back())] = d;
  }
  op_time_.resize(at(n_) * at(num_types_));
  for (NodeId v = 0; v < n_; ++v) {
    for (int t = 0; t < num_types_; ++t) {
      const Seconds time = cost_model.op_time(graph, v, representative[at(t)]);
      GOPT_ASSERT(time >= 0 && time < std::numeric_limits<Seconds>::infinity(),
                  "cost model returned a negative or infinite op time");
      op_time_[at(v) * at(num_types_) + at(t)] = time;
    }
  }

  const auto num_edges = at(graph.num_edges());
  out_offset_.resize(at(n_) + 1);
  in_offset_.resize(at(n_) + 1);
  for (NodeId v = 0; v <= n_; ++v) {
    out_offset_[at(v)] = v < n_ ? graph.out_begin(v) : graph.num_edges();
    in_offset_[at(v)] = v < n_ ? graph.in_begin(v) : graph.num_edges();
  }
  out_edges_.resize(num_edges);
  in_edges_.resize(num_edges);
  std::vector<core::EdgeIndex> slot_of_edge(num_edges);
  for (core::EdgeIndex s = 0; s < graph.num_edges(); ++s) slot_of_edge[at(graph.in_edge(s))] = s;
  for (core::EdgeIndex e = 0; e < graph.num_edges(); ++e) {
    out_edges_[at(e)] = OutEdge{graph.out_target(e), slot_of_edge[at(e)], graph.edge_bytes(e)};
  }
  for (core::EdgeIndex s = 0; s < graph.num_edges(); ++s) {
    in_edges_[at(s)] = InEdge{graph.in_source(s), graph.edge_bytes(graph.in_edge(s)) > 0};
  }
  for (NodeId v = 0; v < n_; ++v) max_out_degree_ = std::max(max_out_degree_, graph.out_degree(v));
  for (const NodeId v : graph.topological_order()) {
    if (graph.in_degree(v) == 0) sources_.push_back(v);
  }
}

}  // namespace gopt::simulator
