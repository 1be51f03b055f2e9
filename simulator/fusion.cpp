#include "simulator/fusion.h"

#include <algorithm>
#include <numeric>

namespace gopt::simulator {
namespace {

template <typename I>
std::size_t at(I i) {
  return static_cast<std::size_t>(i);
}

}  // namespace

std::int32_t FusionWorkspace::find(std::int32_t v) {
  while (parent_[at(v)] != v) {
    parent_[at(v)] = parent_[at(parent_[at(v)])];  // path halving
    v = parent_[at(v)];
  }
  return v;
}

// Every boundary out-edge of group `a` enters `b`. Edges that became internal to `a` are
// unlinked on the way; a witness edge into a third group is moved to the front so that a
// repeated failing check stops at once.
bool FusionWorkspace::all_out_edges_enter(const core::CompiledGraph& graph, std::int32_t a,
                                          std::int32_t b) {
  std::int32_t prev = -1;
  std::int32_t e = head_out_[at(a)];
  while (e != -1) {
    std::int32_t next = next_out_[at(e)];
    std::int32_t g = find(graph.out_target(e));
    if (g == a) {
      (prev == -1 ? head_out_[at(a)] : next_out_[at(prev)]) = next;
      if (tail_out_[at(a)] == e) tail_out_[at(a)] = prev;
    } else if (g != b) {
      if (prev != -1) {
        next_out_[at(prev)] = next;
        if (tail_out_[at(a)] == e) tail_out_[at(a)] = prev;
        next_out_[at(e)] = head_out_[at(a)];
        head_out_[at(a)] = e;
      }
      return false;
    } else {
      prev = e;
    }
    e = next;
  }
  return true;
}

bool FusionWorkspace::all_in_edges_leave(const core::CompiledGraph& graph, std::int32_t a,
                                         std::int32_t b) {
  std::int32_t prev = -1;
  std::int32_t s = head_in_[at(b)];
  while (s != -1) {
    std::int32_t next = next_in_[at(s)];
    std::int32_t g = find(graph.in_source(s));
    if (g == b) {
      (prev == -1 ? head_in_[at(b)] : next_in_[at(prev)]) = next;
      if (tail_in_[at(b)] == s) tail_in_[at(b)] = prev;
    } else if (g != a) {
      if (prev != -1) {
        next_in_[at(prev)] = next;
        if (tail_in_[at(b)] == s) tail_in_[at(b)] = prev;
        next_in_[at(s)] = head_in_[at(b)];
        head_in_[at(b)] = s;
      }
      return false;
    } else {
      prev = s;
    }
    s = next;
  }
  return true;
}

void FusionWorkspace::form_groups(const core::CompiledGraph& graph, const DeviceId* placement,
                                  const std::int32_t* fusion, FusionGroups& out) {
  const NodeId n = graph.num_nodes();
  const core::EdgeIndex num_edges = graph.num_edges();
  parent_.resize(at(n));
  std::iota(parent_.begin(), parent_.end(), 0);
  size_.assign(at(n), 1);
  library_.resize(at(n));
  for (NodeId v = 0; v < n; ++v) library_[at(v)] = library_kind(graph.kind()[at(v)]) ? 1 : 0;

  candidates_.clear();
  const auto* kind = graph.kind().data();
  for (NodeId u = 0; u < n; ++u) {
    if (fusion[at(u)] <= 0 || !fusable_kind(kind[at(u)])) continue;
    for (auto e = graph.out_begin(u); e < graph.out_end(u); ++e) {
      NodeId v = graph.out_target(e);
      if (graph.edge_is_control(e) || fusion[at(v)] <= 0 || !fusable_kind(kind[at(v)])) continue;
      if (placement && placement[at(u)] != placement[at(v)]) continue;
      candidates_.emplace_back(-static_cast<std::int64_t>(std::min(fusion[at(u)], fusion[at(v)])),
                               e);
    }
  }
  std::sort(candidates_.begin(), candidates_.end());

  if (!candidates_.empty()) {
    next_out_.resize(at(num_edges));
    next_in_.resize(at(num_edges));
    head_out_.resize(at(n));
    tail_out_.resize(at(n));
    head_in_.resize(at(n));
    tail_in_.resize(at(n));
    for (NodeId v = 0; v < n; ++v) {
      auto ob = graph.out_begin(v);
      auto oe = graph.out_end(v);
      head_out_[at(v)] = ob < oe ? ob : -1;
      tail_out_[at(v)] = ob < oe ? oe - 1 : -1;
      for (auto e = ob; e < oe; ++e) next_out_[at(e)] = e + 1 < oe ? e + 1 : -1;
      auto ib = graph.in_begin(v);
      auto ie = graph.in_end(v);
      head_in_[at(v)] = ib < ie ? ib : -1;
      tail_in_[at(v)] = ib < ie ? ie - 1 : -1;
      for (auto s = ib; s < ie; ++s) next_in_[at(s)] = s + 1 < ie ? s + 1 : -1;
    }
    auto append = [](std::vector<std::int32_t>& next, std::vector<std::int32_t>& head,
                     std::vector<std::int32_t>& tail, std::int32_t into, std::int32_t from) {
      if (head[at(from)] == -1) return;
      if (head[at(into)] == -1) {
        head[at(into)] = head[at(from)];
      } else {
        next[at(tail[at(into)])] = head[at(from)];
      }
      tail[at(into)] = tail[at(from)];
      head[at(from)] = tail[at(from)] = -1;
    };
    for (const auto& [key, e] : candidates_) {
      std::int32_t a = find(graph.edge_source(e));
      std::int32_t b = find(graph.out_target(e));
      if (a == b) continue;
      if (library_[at(a)] + library_[at(b)] > 1) continue;
      if (!all_out_edges_enter(graph, a, b) && !all_in_edges_leave(graph, a, b)) continue;
      std::int32_t root = size_[at(a)] >= size_[at(b)] ? a : b;
      std::int32_t child = root == a ? b : a;
      parent_[at(child)] = root;
      size_[at(root)] += size_[at(child)];
      library_[at(root)] += library_[at(child)];
      append(next_out_, head_out_, tail_out_, root, child);
      append(next_in_, head_in_, tail_in_, root, child);
    }
  }

  // Number groups by first member in topological order; list members in that order.
  root_group_.assign(at(n), -1);
  out.group_of.resize(at(n));
  std::int32_t num_groups = 0;
  for (NodeId v : graph.topological_order()) {
    std::int32_t r = find(v);
    if (root_group_[at(r)] == -1) root_group_[at(r)] = num_groups++;
    out.group_of[at(v)] = root_group_[at(r)];
  }
  out.member_offset.assign(at(num_groups) + 1, 0);
  for (NodeId v = 0; v < n; ++v) ++out.member_offset[at(out.group_of[at(v)]) + 1];
  for (std::int32_t g = 0; g < num_groups; ++g) {
    out.member_offset[at(g) + 1] += out.member_offset[at(g)];
  }
  out.members.resize(at(n));
  // root_group_ is reused as the fill cursor per group.
  for (std::int32_t g = 0; g < num_groups; ++g) root_group_[at(g)] = out.member_offset[at(g)];
  for (NodeId v : graph.topological_order()) {
    out.members[at(root_group_[at(out.group_of[at(v)])]++)] = v;
  }
}

FusionGroups form_fusion_groups(const core::CompiledGraph& graph, const core::Decision& decision) {
  FusionGroups groups;
  FusionWorkspace workspace;
  std::vector<std::int32_t> no_fusion;
  const std::int32_t* fusion = nullptr;
  if (decision.fusion) {
    fusion = decision.fusion->data();
  } else {
    no_fusion.assign(static_cast<std::size_t>(graph.num_nodes()), 0);
    fusion = no_fusion.data();
  }
  workspace.form_groups(graph, decision.placement ? decision.placement->data() : nullptr, fusion,
                        groups);
  return groups;
}

bool groups_are_acyclic(const core::CompiledGraph& graph, const FusionGroups& groups) {
  const auto num_groups = static_cast<std::size_t>(groups.num_groups());
  std::vector<std::int32_t> indegree(num_groups, 0);
  for (core::EdgeIndex e = 0; e < graph.num_edges(); ++e) {
    auto gu = groups.group_of[at(graph.edge_source(e))];
    auto gv = groups.group_of[at(graph.out_target(e))];
    if (gu != gv) ++indegree[at(gv)];
  }
  std::vector<std::int32_t> queue;
  for (std::size_t g = 0; g < num_groups; ++g) {
    if (indegree[g] == 0) queue.push_back(static_cast<std::int32_t>(g));
  }
  for (std::size_t head = 0; head < queue.size(); ++head) {
    std::int32_t g = queue[head];
    for (auto i = groups.member_offset[at(g)]; i < groups.member_offset[at(g) + 1]; ++i) {
      NodeId u = groups.members[at(i)];
      for (auto e = graph.out_begin(u); e < graph.out_end(u); ++e) {
        auto gv = groups.group_of[at(graph.out_target(e))];
        if (gv != g && --indegree[at(gv)] == 0) queue.push_back(gv);
      }
    }
  }
  return queue.size() == num_groups;
}

}  // namespace gopt::simulator
