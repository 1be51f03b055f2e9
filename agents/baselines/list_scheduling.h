// List-scheduling baselines with communication costs. Both place and order ops (they set
// the decision's placement and priority):
// - `heft`: Heterogeneous Earliest Finish Time (Topcuoglu, Hariri & Wu, IEEE TPDS 2002):
//   ops in decreasing upward rank, each on the device where it finishes earliest.
// - `m_etf`: memory-constrained Earliest Task First (Hwang et al., SIAM J. Comput. 1989;
//   memory constraint as in Baechi, Jeon et al., SoCC 2020): repeatedly schedule the ready
//   (op, device) pair that starts earliest, among devices with memory left for the op.
#pragma once

#include "agents/registry.h"

namespace gopt::agents {

/// Registers `heft` and `m_etf`.
void register_list_scheduling_agents(AgentRegistry& registry);

}  // namespace gopt::agents
