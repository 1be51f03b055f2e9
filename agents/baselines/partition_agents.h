// Graph-partitioning baselines: METIS k-way partitioning (Karypis & Kumar, SIAM J. Sci.
// Comput. 1998), as used for device placement by e.g. Baechi (SoCC 2020) and the
// partitioning baselines of the HDP and GO papers.
#pragma once

#include "agents/registry.h"

namespace gopt::agents {

/// Registers `metis`.
void register_partition_agents(AgentRegistry& registry);

}  // namespace gopt::agents
