// Lower bounds on the step time of a graph on a cluster: no placement or schedule of the
// unfused graph simulates faster. They turn a step time into an optimality gap (step time /
// bound) in the results tables. Each bound and its proof sketch is in docs/simulator.md
// ("Lower bounds"); tests/simulator/lower_bounds_test.cpp checks them against exhaustive
// optima of small graphs.
//
//   LowerBounds b = compute_lower_bounds(graph, cluster, cost_model);
//   double gap = step_time_s / b.best_s();   // >= 1 for every unfused decision
#pragma once

#include <limits>

#include "core/compiled_graph.h"
#include "hardware/cluster.h"
#include "hardware/cost_model.h"

namespace gopt::simulator {

using core::DeviceId;
using core::NodeId;
using core::Seconds;

/// Every bound in seconds. Op times are each op's time on its fastest device type, unfused.
struct LowerBounds {
  /// Longest path with zero communication (as SimulationResult::lower_bound_critical_path_s).
  Seconds critical_path_s = 0;
  /// Total op time over the cluster's compute streams (SimulationResult::lower_bound_work_s).
  Seconds work_s = 0;
  /// Placements on one device: the smallest, over devices that might hold the whole graph,
  /// of max(that device's critical path, its total op time over its streams); +inf when
  /// no device can (then every valid placement is split).
  Seconds single_device_s = std::numeric_limits<Seconds>::infinity();
  /// Placements over two or more devices: some tensor crosses every cut, so the step takes
  /// at least the longest path through the cheapest "bottleneck" cut edge plus its
  /// transfer (the cut-path bound, see cut_path_s), and at least critical_path_s and
  /// work_s. +inf when the cluster has one device or the graph one op.
  Seconds split_s = std::numeric_limits<Seconds>::infinity();
  /// min over two-way cuts of the graph of the largest, over edges e = (u, v) crossing the
  /// cut, of head(u) + transfer(bytes of e) + tail(v): the longest path through e when e
  /// crosses devices. 0 when the graph is not connected (a split can cut no edge).
  Seconds cut_path_s = 0;
  /// The forced-colocation bound. For a step time T, every edge whose cut-path weight
  /// (head + transfer + tail, as in cut_path_s) exceeds T cannot cross devices, so each
  /// connected component of those edges runs on one device: T >= its total op time over
  /// the most streams any device has, and its parameters plus largest output fit on the
  /// largest device. This is the smallest T consistent with that (found by Kruskal-style
  /// merging in decreasing weight), so it is at least min(single_device_s, cut_path_s)
  /// on a cluster of identical devices and much tighter when small cuts leave most of the
  /// work together. 0 when no T passes (nothing fits; then best_s uses the others).
  Seconds colocation_s = 0;
  /// The longest path with the transfers or the serialisation each op's neighbours force:
  /// an op starts after its producers end, plus a transfer for each producer on another
  /// device, while the producers beside it run one after another on its device's streams;
  /// and symmetrically for its consumers. At least critical_path_s; 0 on one device.
  Seconds communication_path_s = 0;
  /// Fill and drain: the work bound plus the idle time the start and the end of any
  /// schedule must hold because too few ops can run there to keep every stream busy (the
  /// ramp of a pipeline). 0 when it is not above the other bounds.
  Seconds fill_drain_s = 0;
  /// No device can hold the graph: its parameters plus the output of some op exceed every
  /// device's capacity, so every placement that fits in memory is split.
  bool split_forced = false;

  /// The bound: the largest of critical_path_s, work_s, colocation_s and
  /// min(single_device_s, split_s) (that one left out when both are infinite: one device
  /// that cannot hold the graph, where nothing fits).
  [[nodiscard]] Seconds best_s() const;
};

/// Computes every bound of `graph` on `cluster` with `cost_model`'s op and link times:
/// O(N x device types + E log E + E x device pairs), plus the communication path's
/// O(sum over ops of min(fan, 64)^3) for fan-in and fan-out, and fill and drain's
/// O(N log N) per round.
[[nodiscard]] LowerBounds compute_lower_bounds(const core::CompiledGraph& graph,
                                               const hardware::Cluster& cluster,
                                               const hardware::CostModel& cost_model);

}  // namespace gopt::simulator
