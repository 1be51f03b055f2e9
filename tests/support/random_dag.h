// Random layered DAGs with plausible op sizes, for tests and benchmarks that need graphs
// of a given size without a real workload. Deterministic for a given seed.
#pragma once

#include <cstdint>

#include "core/graph.h"
#include "core/options.h"

namespace gopt::testing {

struct RandomDagOptions {
  GOPT_OPTION(core::NodeId, nodes, 1000)
  /// Average number of inputs per non-source node (1 .. max_fan_in).
  GOPT_OPTION(double, mean_fan_in, 1.5)
  GOPT_OPTION(int, max_fan_in, 4)
  /// Inputs are drawn from the previous `window` nodes: smaller means longer paths.
  GOPT_OPTION(core::NodeId, window, 64)
  GOPT_OPTION(std::uint64_t, seed, 1)
};

/// A validated, completed DAG: node i only consumes outputs of nodes i-window .. i-1.
[[nodiscard]] core::Graph random_dag(const RandomDagOptions& options);

}  // namespace gopt::testing
