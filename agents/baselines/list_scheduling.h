// List-scheduling baselines with communication costs. Both place and order ops (they set
// the decision's placement and priority):
// - `heft`: Heterogeneous Earliest Finish Time (Topcuoglu, Hariri & Wu, IEEE TPDS 2002):
//   ops in decreasing upward rank, each on the device where it finishes earliest.
// - `m_etf`: memory-constrained Earliest Task First (Hwang et al., SIAM J. Comput. 1989;
//   memory constraint as in Baechi, Jeon et al., SoCC 2020): repeatedly schedule the ready
//   (op, device) pair that starts earliest, among devices with memory left for the op.
// And critical-path priorities for a placement someone else chose (`gopt simulate
// --schedule critical_path`).
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "agents/registry.h"

namespace gopt::agents {

/// Priorities that run the ready op with the longest path to the step's end first, for
/// `placement` (op -> device): an op's path counts its time on its own device, and a
/// transfer's uncontended time where a consumer is on another device. Ties go to the op
/// earlier in topological order. List scheduling by this rank is what HEFT does for its
/// own placement; applied to any placement, it shows what the order of ready ops costs
/// beside what the placement does (docs/design-decisions.md, "gnmt_8 and the paper's +21.7%").
std::vector<std::int32_t> critical_path_priorities(const Problem& p,
                                                   const std::vector<DeviceId>& placement);
/// The same for `decision`'s placement (every op on device 0 when it has none).
std::vector<std::int32_t> critical_path_priorities(const Problem& p,
                                                   const core::Decision& decision);

/// The values of the learners' `order` option (GO, HDP, annealing): whether every placement
/// they simulate runs in critical-path order instead of the executor's.
inline const std::vector<std::pair<std::string, bool>> kOrderChoices = {{"executor", false},
                                                                        {"critical_path", true}};

/// Registers `heft` and `m_etf`.
void register_list_scheduling_agents(AgentRegistry& registry);

}  // namespace gopt::agents
