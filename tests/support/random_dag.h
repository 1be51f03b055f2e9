// Random layered DAGs with plausible op sizes, for tests and benchmarks that need graphs
// of a given size without a real workload. Deterministic for a given seed.
#pragma once

#include <cstdint>

#include "core/graph.h"

namespace gopt::testing {

struct RandomDagOptions {
  core::NodeId nodes = 1000;
  /// Average number of inputs per non-source node (1 .. max_fan_in).
  double mean_fan_in = 1.5;
  int max_fan_in = 4;
  /// Inputs are drawn from the previous `window` nodes: smaller means longer paths.
  core::NodeId window = 64;
  std::uint64_t seed = 1;

  RandomDagOptions& with_nodes(core::NodeId n) {
    nodes = n;
    return *this;
  }
  RandomDagOptions& with_seed(std::uint64_t s) {
    seed = s;
    return *this;
  }
  RandomDagOptions& with_window(core::NodeId w) {
    window = w;
    return *this;
  }
};

/// A validated, completed DAG: node i only consumes outputs of nodes i-window .. i-1.
[[nodiscard]] core::Graph random_dag(const RandomDagOptions& options);

}  // namespace gopt::testing
