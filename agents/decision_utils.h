// Checks of a decision's fused groups, for multi-task agents (placement, scheduling and
// fusion decided together, issue #9) and their tests: the groups the simulator's fusion
// procedure forms from a decision must be acyclic and each on one device.
//
//   std::string problem = fused_group_problem(graph, decision);
//   EXPECT_EQ(problem, "");
#pragma once

#include <string>

#include "core/compiled_graph.h"
#include "core/decision.h"
#include "simulator/fusion.h"

namespace gopt::agents {

/// Forms the fused groups of `decision` with simulator::FusionWorkspace::form_groups and
/// checks them: every op in exactly one group, members in topological order, all members
/// of a group on one device, and the graph contracted by the groups acyclic. Returns ""
/// when they hold (always when the decision has no fusion), otherwise the first problem,
/// naming the group and its ops. The decision must have passed core::validate_decision.
[[nodiscard]] std::string fused_group_problem(const core::CompiledGraph& graph,
                                              const core::Decision& decision);

/// The checks of fused_group_problem on groups already formed (from `decision` or made
/// by hand); devices come from `decision.placement`.
[[nodiscard]] std::string fused_group_problem(const core::CompiledGraph& graph,
                                              const core::Decision& decision,
                                              const simulator::FusionGroups& groups);

}  // namespace gopt::agents
