#include "agents/decision_utils.h"

#include <vector>

#include "simulator/fusion.h"

namespace gopt::agents {
namespace {

std::string op_text(const core::CompiledGraph& graph, core::NodeId v) {
  return "op '" + graph.node_names()[static_cast<std::size_t>(v)] + "' (id " + std::to_string(v) +
         ")";
}

}  // namespace

std::string fused_group_problem(const core::CompiledGraph& graph, const core::Decision& decision) {
  if (!decision.fusion) return "";
  simulator::FusionWorkspace workspace;
  simulator::FusionGroups groups;
  workspace.form_groups(graph, decision.placement ? decision.placement->data() : nullptr,
                        decision.fusion->data(), groups);
  return fused_group_problem(graph, decision, groups);
}

std::string fused_group_problem(const core::CompiledGraph& graph, const core::Decision& decision,
                                const simulator::FusionGroups& groups) {
  const auto n = static_cast<std::size_t>(graph.num_nodes());
  if (groups.group_of.size() != n || groups.members.size() != n || groups.member_offset.empty() ||
      groups.member_offset.back() != static_cast<std::int32_t>(n)) {
    return "fusion formed groups over " + std::to_string(groups.members.size()) +
           " ops, expected " + std::to_string(n);
  }
  std::vector<int> seen(n, 0);
  const auto& rank = graph.topological_rank();
  for (std::int32_t g = 0; g < groups.num_groups(); ++g) {
    const auto begin = groups.member_offset[static_cast<std::size_t>(g)];
    const auto end = groups.member_offset[static_cast<std::size_t>(g) + 1];
    if (end <= begin) return "fused group " + std::to_string(g) + " is empty";
    const core::NodeId first = groups.members[static_cast<std::size_t>(begin)];
    for (auto i = begin; i < end; ++i) {
      const core::NodeId m = groups.members[static_cast<std::size_t>(i)];
      const std::string where = "fused group " + std::to_string(g) + ": " + op_text(graph, m);
      if (seen[static_cast<std::size_t>(m)]++ > 0) return where + " is listed twice";
      if (groups.group_of[static_cast<std::size_t>(m)] != g) {
        return where + " is listed here but group_of says group " +
               std::to_string(groups.group_of[static_cast<std::size_t>(m)]);
      }
      if (i > begin &&
          rank[static_cast<std::size_t>(m)] <=
              rank[static_cast<std::size_t>(groups.members[static_cast<std::size_t>(i - 1)])]) {
        return where + " is out of topological order";
      }
      if (decision.device_of(m) != decision.device_of(first)) {
        return where + " is on device " + std::to_string(decision.device_of(m)) + " but " +
               op_text(graph, first) + " of the same group is on device " +
               std::to_string(decision.device_of(first));
      }
    }
  }
  if (!simulator::groups_are_acyclic(graph, groups)) {
    return "the graph contracted by the " + std::to_string(groups.num_groups()) +
           " fused groups has a cycle";
  }
  return "";
}

}  // namespace gopt::agents
