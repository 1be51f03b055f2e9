#include "agents/placement_utils.h"

namespace gopt::agents {

void apply_colocation(const core::CompiledGraph& graph, std::vector<core::DeviceId>& placement) {
  const auto& groups = graph.colocation();
  if (graph.colocation_groups().empty()) return;
  std::vector<core::DeviceId> group_device(graph.colocation_groups().size(), -1);
  for (core::NodeId v = 0; v < graph.num_nodes(); ++v) {
    auto g = groups[static_cast<std::size_t>(v)];
    if (g < 0) continue;
    auto& d = group_device[static_cast<std::size_t>(g)];
    if (d < 0) d = placement[static_cast<std::size_t>(v)];
    placement[static_cast<std::size_t>(v)] = d;
  }
}

}  // namespace gopt::agents
