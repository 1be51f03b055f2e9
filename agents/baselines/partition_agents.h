// Graph-partitioning baselines: METIS k-way partitioning (Karypis & Kumar, SIAM J. Sci.
// Comput. 1998), as used for device placement by e.g. Baechi (SoCC 2020) and the
// partitioning baselines of the HDP and GO papers.
#pragma once

#include <cstdint>

#include "agents/registry.h"
#include "core/options.h"

namespace gopt::agents {

/// Every option of `metis`, with its default.
struct MetisOptions {
  GOPT_OPTION(double, imbalance,
              0.05)  ///< allowed load imbalance per constraint (METIS's ubvec - 1)
  GOPT_OPTION(std::uint64_t, seed, 0)  ///< METIS seed, mixed with the problem seed
  /// Out-of-memory repair rounds, each moving ops off the full devices (0: METIS's
  /// partition as it is).
  GOPT_OPTION(std::int64_t, repair_rounds, 20)
};

/// Registers `metis`.
void register_partition_agents(AgentRegistry& registry);

}  // namespace gopt::agents
