// PackedGraph: what the simulator reads of a graph, a cluster and a cost model, fixed for
// a Simulator's life and packed for the dispatch loop. Out-edges carry their consumer's
// in-slot and bytes, in-slots their source and whether they carry data; op times are
// asked from the cost model once per device type (devices with identical numbers share
// one) and cached.
#pragma once

#include <cstdint>
#include <vector>

#include "core/compiled_graph.h"
#include "hardware/cluster.h"
#include "hardware/cost_model.h"
#include "simulator/indexing.h"

namespace gopt::simulator {

using core::Bytes;
using core::DeviceId;
using core::NodeId;
using core::Seconds;

/// An out-edge: its target, the target's in-slot for it, and the bytes it carries.
struct OutEdge {
  NodeId target;
  core::EdgeIndex slot;
  Bytes bytes;
};
/// An in-slot: its source and whether the edge carries data (control edges carry none).
struct InEdge {
  NodeId source;
  std::int32_t has_bytes;
};

class PackedGraph {
 public:
  /// Asks `cost_model` for every op's time on one device of each type. A negative or
  /// infinite time breaks the CostModel contract: an internal error.
  PackedGraph(const core::CompiledGraph& graph, const hardware::Cluster& cluster,
              const hardware::CostModel& cost_model);

  [[nodiscard]] const core::CompiledGraph& graph() const { return graph_; }
  [[nodiscard]] NodeId num_nodes() const { return n_; }

  /// The cached time of `op` on a device of type `type`, in seconds.
  [[nodiscard]] Seconds op_time(NodeId op, int type) const {
    return op_time_[at(op) * at(num_types_) + at(type)];
  }
  /// The cached time of `op` on `device`, in seconds.
  [[nodiscard]] Seconds op_time_on(NodeId op, DeviceId device) const {
    return op_time(op, device_type_[at(device)]);
  }
  [[nodiscard]] int num_device_types() const { return num_types_; }
  [[nodiscard]] int device_type(DeviceId device) const { return device_type_[at(device)]; }

  [[nodiscard]] const OutEdge* out_begin(NodeId op) const {
    return out_edges_.data() + out_offset_[at(op)];
  }
  [[nodiscard]] const OutEdge* out_end(NodeId op) const {
    return out_edges_.data() + out_offset_[at(op) + 1];
  }
  [[nodiscard]] core::EdgeIndex in_begin(NodeId op) const { return in_offset_[at(op)]; }
  [[nodiscard]] core::EdgeIndex in_end(NodeId op) const { return in_offset_[at(op) + 1]; }
  [[nodiscard]] const InEdge* in_edges() const { return in_edges_.data(); }
  [[nodiscard]] core::EdgeIndex max_out_degree() const { return max_out_degree_; }

  /// Ops without inputs, in topological order.
  [[nodiscard]] const std::vector<NodeId>& sources() const { return sources_; }
  [[nodiscard]] const NodeId* topological_order() const { return topo_order_; }
  [[nodiscard]] const NodeId* topological_rank() const { return topo_rank_; }
  [[nodiscard]] const Bytes* output_bytes() const { return output_bytes_; }

 private:
  const core::CompiledGraph& graph_;
  NodeId n_;
  int num_types_;
  std::vector<int> device_type_;
  std::vector<Seconds> op_time_;  // [op * num_types + type]
  std::vector<core::EdgeIndex> out_offset_;
  std::vector<OutEdge> out_edges_;
  std::vector<core::EdgeIndex> in_offset_;
  std::vector<InEdge> in_edges_;
  core::EdgeIndex max_out_degree_ = 0;
  std::vector<NodeId> sources_;
  const NodeId* topo_order_;
  const NodeId* topo_rank_;
  const Bytes* output_bytes_;
};

}  // namespace gopt::simulator
