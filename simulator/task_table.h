// TaskTable: the kernels of one run. Without fusion every op is its own task; with it, a
// task is a fused group (fusion.h) with its time asked from the cost model, its ready key
// (the highest member priority, the first member's rank), and which of its members'
// outputs leave it (only those are allocated). Buffers keep their capacity between runs.
#pragma once

#include <cstdint>
#include <vector>

#include "hardware/cost_model.h"
#include "simulator/fusion.h"
#include "simulator/packed_graph.h"

namespace gopt::simulator {

class TaskTable {
 public:
  explicit TaskTable(const PackedGraph& graph);

  /// Every op its own task (no fusion).
  void use_ops() { groups_ = &identity_; }
  /// Fused groups of `fusion` for `placement` (per op) and `priority` (per op, nullptr
  /// for none), their times from `cost_model`.
  void use_fusion(const DeviceId* placement, bool has_placement, const std::int32_t* priority,
                  const std::int32_t* fusion, const hardware::CostModel& cost_model);

  [[nodiscard]] bool fused() const { return groups_ != &identity_; }
  [[nodiscard]] const FusionGroups& groups() const { return *groups_; }

  // --- Fused runs only.
  /// The kernel time of `task`, in seconds.
  [[nodiscard]] Seconds time(std::int32_t task) const { return task_time_[at(task)]; }
  /// Its ready-queue key (ready_key()).
  [[nodiscard]] std::uint64_t key(std::int32_t task) const { return task_key_[at(task)]; }
  /// The task whose first member has topological rank `rank`.
  [[nodiscard]] std::int32_t task_of_rank(std::uint32_t rank) const { return task_of_rank_[rank]; }
  /// Whether `op`'s output is allocated: it has bytes and leaves its group (or nobody
  /// consumes it).
  [[nodiscard]] bool needs_buffer(NodeId op) const { return needs_buffer_[at(op)] != 0; }

 private:
  const PackedGraph& graph_;
  FusionGroups identity_;
  FusionGroups fused_;
  const FusionGroups* groups_ = &identity_;
  FusionWorkspace workspace_;
  std::vector<std::uint8_t> needs_buffer_;
  std::vector<Seconds> member_times_;  ///< scratch: one fused group's members' op times
  std::vector<Seconds> task_time_;
  std::vector<std::uint64_t> task_key_;
  std::vector<std::int32_t> task_of_rank_;
};

}  // namespace gopt::simulator
