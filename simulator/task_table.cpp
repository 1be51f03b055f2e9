#include "simulator/task_table.h"

#include <algorithm>
#include <limits>
#include <numeric>

#include "core/errors.h"
#include "simulator/ready_queue.h"

namespace gopt::simulator {

TaskTable::TaskTable(const PackedGraph& graph) : graph_(graph) {
  const auto n = at(graph.num_nodes());
  identity_.group_of.resize(n);
  std::iota(identity_.group_of.begin(), identity_.group_of.end(), 0);
  identity_.member_offset.resize(n + 1);
  std::iota(identity_.member_offset.begin(), identity_.member_offset.end(), 0);
  identity_.members = identity_.group_of;
}

void TaskTable::use_fusion(const DeviceId* placement, bool has_placement,
                           const std::int32_t* priority, const std::int32_t* fusion,
                           const hardware::CostModel& cost_model) {
  const core::CompiledGraph& g = graph_.graph();
  const NodeId n = graph_.num_nodes();
  const Bytes* output_bytes = graph_.output_bytes();
  workspace_.form_groups(g, has_placement ? placement : nullptr, fusion, fused_);
  groups_ = &fused_;
  const auto& gr = fused_;
  const std::int32_t num_groups = gr.num_groups();
  needs_buffer_.resize(at(n));
  task_time_.resize(at(num_groups));
  task_key_.resize(at(num_groups));
  task_of_rank_.resize(at(n));
  for (NodeId v = 0; v < n; ++v) {
    bool has_data_out = false;
    bool leaves = false;
    for (auto e = g.out_begin(v); e < g.out_end(v); ++e) {
      if (g.edge_bytes(e) == 0) continue;
      has_data_out = true;
      leaves = leaves || gr.group_of[at(g.out_target(e))] != gr.group_of[at(v)];
    }
    needs_buffer_[at(v)] = output_bytes[v] > 0 && (!has_data_out || leaves);
  }
  for (std::int32_t task = 0; task < num_groups; ++task) {
    const auto begin = gr.member_offset[at(task)];
    const auto end = gr.member_offset[at(task) + 1];
    const NodeId first = gr.members[at(begin)];
    const DeviceId d = placement[first];
    std::int32_t top = std::numeric_limits<std::int32_t>::min();
    for (auto i = begin; i < end; ++i) {
      top = std::max(top, priority ? priority[gr.members[at(i)]] : 0);
    }
    auto rank = static_cast<std::uint32_t>(graph_.topological_rank()[first]);
    task_of_rank_[rank] = task;
    task_key_[at(task)] = priority ? ready_key(rank, top) : rank;
    if (end - begin == 1) {
      task_time_[at(task)] = graph_.op_time_on(first, d);
      continue;
    }
    // Memory traffic of the fused kernel: members' reads and writes, minus the reads of
    // internal edges and the writes of outputs that never leave the group.
    Bytes traffic = 0;
    member_times_.clear();
    for (auto i = begin; i < end; ++i) {
      NodeId m = gr.members[at(i)];
      member_times_.push_back(graph_.op_time_on(m, d));
      traffic += g.bytes_read()[at(m)] + g.bytes_written()[at(m)];
      if (!needs_buffer_[at(m)]) traffic -= g.bytes_written()[at(m)];
      for (auto s = g.in_begin(m); s < g.in_end(m); ++s) {
        if (gr.group_of[at(g.in_source(s))] == task) traffic -= g.edge_bytes(g.in_edge(s));
      }
    }
    traffic = std::max<Bytes>(traffic, 0);
    task_time_[at(task)] = cost_model.fused_time(g, gr.members.data() + begin, member_times_.data(),
                                                 at(end - begin), traffic, d);
    // As for op times: a negative time would schedule an event before the present.
    GOPT_ASSERT(task_time_[at(task)] >= 0 &&
                    task_time_[at(task)] < std::numeric_limits<Seconds>::infinity(),
                "cost model returned a negative or infinite fused time");
  }
}

}  // namespace gopt::simulator
