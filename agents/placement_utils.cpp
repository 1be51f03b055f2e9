#include "agents/placement_utils.h"

#include <map>

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

ScopeUnitKey scope_unit_key(const core::CompiledGraph& graph, core::NodeId v) {
  const auto i = static_cast<std::size_t>(v);
  std::string name = graph.node_names()[i];
  const std::string gradients = "gradients/";
  if (name.rfind(gradients, 0) == 0) name.erase(0, gradients.size());
  const auto first = name.find('/');
  if (graph.layer()[i] >= 0 && name.find("attention") == std::string::npos) {
    return {0, name.substr(0, first), graph.layer()[i], graph.branch()[i]};
  }
  if (first == std::string::npos) return {1, name, 0, -1};
  return {1, name.substr(0, name.find('/', first + 1)), 0, -1};
}

std::vector<char> weight_gradient_tail(const core::CompiledGraph& graph) {
  const auto& phase = graph.phase();
  std::vector<char> tail(static_cast<std::size_t>(graph.num_nodes()), 0);
  const auto& order = graph.topological_order();
  for (auto it = order.rbegin(); it != order.rend(); ++it) {
    const core::NodeId v = *it;
    if (phase[static_cast<std::size_t>(v)] != core::Phase::kBackward || graph.out_degree(v) == 0) {
      continue;
    }
    bool only_updates = true;
    for (auto e = graph.out_begin(v); e < graph.out_end(v) && only_updates; ++e) {
      const auto c = static_cast<std::size_t>(graph.out_target(e));
      only_updates = phase[c] == core::Phase::kUpdate || tail[c] != 0;
    }
    tail[static_cast<std::size_t>(v)] = only_updates ? 1 : 0;
  }
  return tail;
}

std::vector<std::vector<core::NodeId>> scope_units(const core::CompiledGraph& graph) {
  std::map<ScopeUnitKey, std::vector<core::NodeId>> units;
  for (core::NodeId v = 0; v < graph.num_nodes(); ++v) units[scope_unit_key(graph, v)].push_back(v);
  std::vector<std::vector<core::NodeId>> out;
  out.reserve(units.size());
  for (auto& [key, ops] : units) out.push_back(std::move(ops));
  return out;
}

}  // namespace gopt::agents
