// The GO policy's view of a graph: per-node features and edge index tensors, with nodes
// in a depth-first topological order (position p holds node order[p]; chains of
// dependent ops are contiguous), built once per graph and reused by every forward pass.
//
// Features per node (docs/agents.md "GO"): the op kind (an index, embedded by the policy);
// log-scaled FLOPs, bytes read, output bytes and parameter bytes, log in/out degree and
// the layer index, standardised per graph so that graphs of very different sizes look
// alike; the phase (forward/backward/update) one-hot; the topological position in
// [0, 1] with sinusoids of it at four frequencies, which let a linear head express
// contiguous, pipeline-like partitions; and two memory columns that are not standardised,
// the graph's total memory (log2 of 1 + GiB, / 4) and the op's own (log2 of 1 + MiB, / 8),
// so that a graph larger than the training graphs, or an op heavier than its neighbours
// in absolute terms, looks it (docs/design-decisions.md "GO: learning": memory features).
#pragma once

#include <torch/torch.h>

#include <cstdint>
#include <memory>

#include "core/compiled_graph.h"

namespace gopt::agents::go {

/// Number of numeric feature columns per node.
inline constexpr std::int64_t kNumericFeatures = 7 + 4 + 1 + 8 + 2;
/// The two memory columns (not standardised): the graph's total and the op's own.
inline constexpr std::int64_t kGraphMemoryColumn = kNumericFeatures - 2;
inline constexpr std::int64_t kOpMemoryColumn = kNumericFeatures - 1;

struct GraphTensors;

/// GraphTensors' copy on the policy's device when that is not the CPU (GraphTensors::on).
/// A copy of GraphTensors starts without one, so that a copy changed after (a prior set)
/// never reuses a stale one.
struct DeviceCopy {
  DeviceCopy() = default;
  DeviceCopy(const DeviceCopy&) {}
  DeviceCopy& operator=(const DeviceCopy&) {
    tensors.reset();
    return *this;
  }
  DeviceCopy(DeviceCopy&&) = default;
  DeviceCopy& operator=(DeviceCopy&&) = default;
  ~DeviceCopy() = default;
  std::shared_ptr<const GraphTensors> tensors;
};

struct GraphTensors {
  std::int64_t num_nodes = 0;
  torch::Tensor kinds;          ///< [N] int64, OpKind index, topological order
  torch::Tensor numeric;        ///< [N, kNumericFeatures] float
  torch::Tensor edge_src;       ///< [E] int64, positions (data and control edges)
  torch::Tensor edge_dst;       ///< [E] int64
  torch::Tensor inv_in_deg;     ///< [N, 1] 1 / max(1, in-degree)
  torch::Tensor inv_out_deg;    ///< [N, 1] 1 / max(1, out-degree)
  torch::Tensor order;          ///< [N] int64: position -> NodeId
  torch::Tensor layer;          ///< [N] int64: the op's layer attribute (-1: none)
  std::int64_t num_layers = 0;  ///< 1 + the largest layer attribute (0: no layers)
  /// [N] int64: the op's (top-level name scope, layer attribute) pair as an index (-1: no
  /// layer); the top-level scope ignores a leading `gradients/`, so an encoder layer and the
  /// decoder layer with the same index differ, and a layer's gradients join it.
  torch::Tensor scope_layer;
  std::int64_t num_scope_layers = 0;  ///< distinct scope_layer indices
  /// Decision units (GoPolicyOptions::unit_decisions): [N] int64, the op's unit by position.
  /// A unit is the ops of one (top-level name scope, layer attribute) pair, the gradients
  /// with their layer (outside attention scopes), or else of one two-level name scope (an
  /// attention, an embedding, an Inception block); ops whose unit would have fewer than
  /// kMinUnitOps ops form units of consecutive topological positions instead (so that a
  /// graph with flat op names still has many units). A graph of few units can split off
  /// their weight gradients (make_graph_tensors' split_below). Ids follow the first position.
  torch::Tensor unit;
  std::int64_t num_units = 0;
  torch::Tensor unit_rows;   ///< [U] int64: a position of each unit that decides its device
  torch::Tensor unit_sizes;  ///< [U, 1] float: ops per unit
  /// [N] float: 1 where the node's own action decides its device, 0 for colocated ops
  /// that follow their group's first op (their sampled action is overridden).
  torch::Tensor action_mask;
  /// Optional [N, max_devices] float, by position: added to the placement logits before
  /// the softmax. The multi-task agents' `placement_prior` puts a bonus on the device the
  /// default pipeline gives each op, so that placement starts near the default instead of
  /// at random (docs/agents.md "Multi-task GO"). Undefined: no prior.
  torch::Tensor placement_prior;
  /// Optional [N, priority_levels] and [N, fusion_levels] float, by position: the same for
  /// the scheduling and fusion logits (`priority_prior`, `fusion_prior`: the default
  /// pipeline's FIFO schedule and rule-based fusion). Undefined: no prior.
  torch::Tensor priority_prior;
  torch::Tensor fusion_prior;

  /// These tensors on `device`: themselves on the CPU, else a copy made at the first call
  /// and kept (the GO policy's forward pass on a GPU). Call it once the tensors are final.
  /// A tensor member added above must be added to the copy's list in go_features.cpp.
  [[nodiscard]] const GraphTensors& on(torch::Device device) const;

 private:
  mutable DeviceCopy device_copy_;
};

/// Units of fewer ops than this are split into blocks of consecutive positions.
inline constexpr std::int64_t kMinUnitOps = 20;

/// Builds the tensors of `graph`. `split_below` > 0: when fewer than this many decision units
/// have kMinUnitOps ops or more, each unit whose weight gradients (weight_gradient_tail in
/// agents/placement_utils.h) and other ops both number at least kMinUnitOps becomes two
/// units, so that the weight gradients can run beside the layer's chain of input gradients
/// (GoOptions::weight_gradient_units). 0: never.
[[nodiscard]] GraphTensors make_graph_tensors(const core::CompiledGraph& graph,
                                              std::int64_t split_below = 0);

/// The mean of `values` ([N, C], by position) over each decision unit's ops: [U, C].
[[nodiscard]] torch::Tensor unit_means(const torch::Tensor& values, const GraphTensors& g);

}  // namespace gopt::agents::go
