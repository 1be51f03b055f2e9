#include "agents/go/go_decision.h"

#include <algorithm>
#include <utility>
#include <vector>

#include "agents/baselines/list_scheduling.h"
#include "agents/baselines/tf_default.h"
#include "agents/placement_utils.h"

namespace gopt::agents::go {
namespace {

// Values by node from values by topological position.
std::vector<std::int32_t> by_node(const torch::Tensor& by_position, const GraphTensors& tensors) {
  auto values = by_position.to(torch::kLong).contiguous();
  const auto* v = values.data_ptr<std::int64_t>();
  const auto* order = tensors.order.data_ptr<std::int64_t>();
  std::vector<std::int32_t> out(static_cast<std::size_t>(tensors.num_nodes));
  for (std::int64_t p = 0; p < tensors.num_nodes; ++p) {
    out[static_cast<std::size_t>(order[p])] = static_cast<std::int32_t>(v[p]);
  }
  return out;
}

}  // namespace

const torch::Tensor& TaskActions::of(GoTask task) const {
  switch (task) {
    case GoTask::kPlacement:
      return placement;
    case GoTask::kScheduling:
      return priority;
    case GoTask::kFusion:
      return fusion;
  }
  return placement;
}

torch::Tensor& TaskActions::of(GoTask task) {
  return const_cast<torch::Tensor&>(std::as_const(*this).of(task));
}

core::Decision placement_decision(const torch::Tensor& devices_by_position,
                                  const GraphTensors& tensors, const core::CompiledGraph& graph) {
  std::vector<DeviceId> placement = by_node(devices_by_position, tensors);
  apply_colocation(graph, placement);
  core::Decision decision;
  decision.placement = std::move(placement);
  return decision;
}

core::Decision task_decision(const TaskActions& actions, const GraphTensors& tensors,
                             const Problem& problem, const DecisionBase& base) {
  const core::CompiledGraph& graph = problem.graph;
  core::Decision d = actions.placement.defined()
                         ? placement_decision(actions.placement, tensors, graph)
                         : core::Decision{base.decision.placement, std::nullopt, std::nullopt};
  if (actions.priority.defined()) {
    d.priority = by_node(actions.priority, tensors);
  } else if (base.critical_path_order) {
    d.priority = critical_path_priorities(problem, d);
  } else {
    d.priority = base.decision.priority;
  }
  if (actions.fusion.defined()) {
    d.fusion = by_node(actions.fusion, tensors);
  } else if (base.xla_fusion) {
    d.fusion = xla_fusion_priorities(graph, d.placement ? d.placement->data() : nullptr,
                                     XlaFusionOptions());
  } else {
    d.fusion = base.decision.fusion;
  }
  return d;
}

core::Decision greedy_decision(GoPolicy& policy, const GraphTensors& tensors,
                               const Problem& problem, const DecisionBase& base) {
  torch::NoGradGuard no_grad;
  auto out = policy->forward(tensors, problem.num_devices());
  TaskActions actions;
  for (auto task : enabled_tasks(policy->options)) actions.of(task) = out.of(task).argmax(1);
  return task_decision(actions, tensors, problem, base);
}

std::int64_t exploration_block_size(std::int64_t block, std::int64_t n, std::int64_t devices) {
  return std::max<std::int64_t>(1, std::min(block, n / (4 * devices)));
}

}  // namespace gopt::agents::go
