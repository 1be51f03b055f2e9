#include "tests/datasets/graph_checks.h"

#include <deque>
#include <vector>

namespace gopt::datasets::testing {
namespace {

using core::NodeId;

// Nodes reachable from `start` along out-edges (forward) or in-edges (!forward).
std::vector<char> reach(const core::Graph& g, NodeId start, bool forward) {
  std::vector<char> seen(static_cast<std::size_t>(g.num_nodes()), 0);
  std::deque<NodeId> queue{start};
  seen[static_cast<std::size_t>(start)] = 1;
  const auto& bg = g.boost_graph();
  while (!queue.empty()) {
    NodeId v = queue.front();
    queue.pop_front();
    auto visit = [&](NodeId w) {
      if (!seen[static_cast<std::size_t>(w)]) {
        seen[static_cast<std::size_t>(w)] = 1;
        queue.push_back(w);
      }
    };
    if (forward) {
      auto [it, end] = boost::out_edges(static_cast<std::size_t>(v), bg);
      for (; it != end; ++it) visit(static_cast<NodeId>(boost::target(*it, bg)));
    } else {
      auto [it, end] = boost::in_edges(static_cast<std::size_t>(v), bg);
      for (; it != end; ++it) visit(static_cast<NodeId>(boost::source(*it, bg)));
    }
  }
  return seen;
}

}  // namespace

std::string check_training_graph(const core::Graph& g) {
  auto seed = g.find("gradients/Fill");
  if (!seed) return "no gradients/Fill seed";
  auto from_seed = reach(g, *seed, true);
  auto to_seed = reach(g, *seed, false);
  const std::string prefix = "gradients/";
  for (NodeId v = 0; v < g.num_nodes(); ++v) {
    const auto& n = g.node(v);
    if (n.phase == core::Phase::kUnknown) return "node '" + n.name + "' has no phase";
    if (n.phase == core::Phase::kBackward) {
      if (!from_seed[static_cast<std::size_t>(v)]) {
        return "backward op '" + n.name + "' does not depend on the gradient seed";
      }
      if (v == *seed) continue;
      if (n.name.compare(0, prefix.size(), prefix) != 0) {
        return "backward op '" + n.name + "' is not under gradients/";
      }
      auto cut = n.name.rfind("_grad/");
      if (cut == std::string::npos || cut < prefix.size()) {
        return "backward op '" + n.name + "' does not name its forward op";
      }
      std::string fwd = n.name.substr(prefix.size(), cut - prefix.size());
      auto f = g.find(fwd);
      if (!f) return "backward op '" + n.name + "': no forward op '" + fwd + "'";
      if (g.node(*f).phase != core::Phase::kForward) {
        return "backward op '" + n.name + "': '" + fwd + "' is not a forward op";
      }
      if (!to_seed[static_cast<std::size_t>(*f)]) {
        return "backward op '" + n.name + "': no path from its forward op '" + fwd + "'";
      }
    }
    if (n.kind == core::OpKind::kUpdate) {
      if (!from_seed[static_cast<std::size_t>(v)]) {
        return "update op '" + n.name + "' does not depend on the gradients";
      }
      bool has_var = false;
      const auto& bg = g.boost_graph();
      auto [it, end] = boost::in_edges(static_cast<std::size_t>(v), bg);
      for (; it != end; ++it) {
        const auto& src = g.node(static_cast<NodeId>(boost::source(*it, bg)));
        has_var = has_var || (src.kind == core::OpKind::kVariable &&
                              src.colocation_group == n.colocation_group && src.param_bytes > 0);
      }
      if (!has_var) return "update op '" + n.name + "' reads no variable of its colocation group";
    }
  }
  return "";
}

}  // namespace gopt::datasets::testing
