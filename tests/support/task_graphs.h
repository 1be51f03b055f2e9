// Small graphs on which exactly one of the three tasks of GO (placement, scheduling,
// fusion) pays off, each with the default decision for it and a known-good one. They check
// that the simulator's models make every task meaningful, and are the toy problems of the
// multi-task GO tests (issue #9). Sizes are chosen for the shipped P100 profiles
// (p100x2_pcie, p100x4_pcie) under the roofline cost model; the step times they give there
// are in docs/agents.md ("Task graphs").
//
//   TaskGraph t = fusion_task_graph();
//   CompiledGraph cg = CompiledGraph::compile(t.graph);
//   EXPECT_LT(sim.simulate(t.improved).step_time_s, sim.simulate(t.baseline).step_time_s);
#pragma once

#include <cstdint>

#include "core/decision.h"
#include "core/graph.h"

namespace gopt::testing {

/// A graph with the baseline decision for its task and a decision known to beat it.
struct TaskGraph {
  core::Graph graph;
  core::Decision baseline;  ///< TensorFlow's default for the task (FIFO, no fusion, ...)
  core::Decision improved;  ///< same as baseline except in the one field the task decides
};

/// Only the schedule matters (2 devices, placement fixed, nothing to fuse): on device 0 a
/// long matmul `big` (2048^3) and a short one `feeder` (1024^3) are both ready at time 0;
/// `feeder`'s 4 MiB output goes to device 1, where the long matmul `consumer` needs it.
/// FIFO runs `big` first (lower topological rank) and `consumer` waits for it; the improved
/// decision gives `feeder` a higher priority, so `consumer` overlaps `big`.
/// Nodes: big = 0, feeder = 1, consumer = 2.
[[nodiscard]] TaskGraph scheduling_task_graph();

/// Only fusion matters (1 device): a placeholder `x` (4 Mi floats) feeding a chain of
/// `length` elementwise ops and a final Sum, all memory-bound. Unfused, every op pays a
/// launch and reads and writes 16 MiB; the improved decision fuses the chain and the Sum
/// into one kernel that reads x once. There is no parallelism for placement or priorities
/// to use. Nodes: x = 0, chain ops 1..length, sum = length + 1.
[[nodiscard]] TaskGraph fusion_task_graph(std::int32_t length = 6);

/// Only placement matters: `branches` independent compute-bound matmuls (2048^3 each) with
/// no edges, so there is nothing to fuse and, on one device, nothing a schedule can change.
/// Baseline: all on device 0; improved: branch b on device b (needs `branches` devices).
/// Node b is branch b.
[[nodiscard]] TaskGraph placement_task_graph(std::int32_t branches = 4);

}  // namespace gopt::testing
