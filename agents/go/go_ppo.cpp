#include "agents/go/go_ppo.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "agents/baselines/tf_default.h"
#include "agents/placement_utils.h"

namespace gopt::agents::go {

torch::Tensor& TaskActions::of(GoTask task) {
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

PpoTask::PpoTask(Environment& environment, DecisionBase base_)
    : env(&environment),
      tensors(make_graph_tensors(environment.problem().graph)),
      base(std::move(base_)) {}

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

core::Decision placement_decision(const torch::Tensor& devices_by_position,
                                  const GraphTensors& tensors, const core::CompiledGraph& graph) {
  std::vector<DeviceId> placement = by_node(devices_by_position, tensors);
  apply_colocation(graph, placement);
  core::Decision decision;
  decision.placement = std::move(placement);
  return decision;
}

core::Decision task_decision(const TaskActions& actions, const GraphTensors& tensors,
                             const core::CompiledGraph& graph, const DecisionBase& base) {
  core::Decision d = actions.placement.defined()
                         ? placement_decision(actions.placement, tensors, graph)
                         : core::Decision{base.decision.placement, std::nullopt, std::nullopt};
  d.priority =
      actions.priority.defined() ? by_node(actions.priority, tensors) : base.decision.priority;
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
  return task_decision(actions, tensors, problem.graph, base);
}

PpoTrainer::PpoTrainer(GoPolicy policy, torch::optim::Adam& optimizer, PpoOptions options,
                       at::Generator generator)
    : policy_(std::move(policy)),
      optimizer_(&optimizer),
      options_(options),
      gen_(std::move(generator)) {}

torch::Tensor PpoTrainer::sample_actions(const torch::Tensor& log_probs, const GraphTensors& g,
                                         std::int64_t k) {
  const auto n = log_probs.size(0);
  const auto d = log_probs.size(1);
  // At least 4 blocks per device, so that a small graph is not placed whole on one device.
  const auto block = std::max<std::int64_t>(1, std::min(options_.exploration_block, n / (4 * d)));
  if (block == 1) return torch::multinomial(log_probs.exp(), k, /*replacement=*/true, gen_);
  // Noise groups: blocks of consecutive positions; in layer mode, an op with a layer
  // attribute shares its layer's noise instead.
  auto by_block = torch::arange(n, torch::kLong).div(block, "floor");
  auto by_layer = torch::where(g.layer.ge(0), g.layer, by_block + g.num_layers);
  const auto groups = g.num_layers + (n + block - 1) / block;
  auto actions = torch::empty({n, k}, torch::kLong);
  for (std::int64_t s = 0; s < k; ++s) {
    const bool layer_mode = options_.layer_exploration && g.num_layers > 0 && s % 2 == 0;
    auto uniform = torch::rand({groups, d}, gen_).clamp(1e-12, 1.0 - 1e-7);
    auto gumbel = -torch::log(-torch::log(uniform));
    auto noise = gumbel.index_select(0, layer_mode ? by_layer : by_block + g.num_layers);
    actions.select(1, s).copy_((log_probs + noise).argmax(1));
  }
  return actions;
}

PpoStepStats PpoTrainer::step(PpoTask& task) {
  Environment& env = *task.env;
  const Problem& problem = env.problem();
  const auto& g = task.tensors;
  const auto devices = static_cast<std::int64_t>(problem.num_devices());
  const auto k = options_.samples_per_step;
  const auto tasks = enabled_tasks(policy_->options);
  PpoStepStats stats;

  // Sample k decisions from the current policy: per task, per node, all nodes at once.
  // The sampling pass keeps its autograd graph: the policy is unchanged until the first
  // epoch's optimizer step, so that epoch reuses it instead of a second forward pass
  // (gradient mode does not change the values: the update is the same, ~10% sooner).
  TaskActions actions;        // [N, k] per task
  TaskActions old_log_probs;  // [N, k] per task
  torch::Tensor old_value;
  PolicyOutput first = policy_->forward(g, devices);
  {
    torch::NoGradGuard no_grad;
    TaskActions greedy;
    for (auto t : tasks) {
      auto logits = first.of(t).detach();
      auto log_probs = torch::log_softmax(logits, 1);
      actions.of(t) = sample_actions(log_probs, g, k);
      old_log_probs.of(t) = log_probs.gather(1, actions.of(t));
      greedy.of(t) = logits.argmax(1);
    }
    old_value = first.value.detach();
    if (options_.evaluate_greedy) {
      (void)env.evaluate(task_decision(greedy, g, problem.graph, task.base));
      ++stats.samples;
    }
  }

  std::vector<float> rewards(static_cast<std::size_t>(k));
  double time_sum = 0;
  std::int64_t valid = 0;
  for (std::int64_t s = 0; s < k; ++s) {
    TaskActions sample;
    for (auto t : tasks) sample.of(t) = actions.of(t).select(1, s);
    auto e = env.evaluate(task_decision(sample, g, problem.graph, task.base));
    ++stats.samples;
    if (e.oom) {
      ++stats.oom;
      rewards[static_cast<std::size_t>(s)] = static_cast<float>(options_.oom_reward);
      continue;
    }
    if (task.reference_s <= 0) task.reference_s = e.step_time_s;
    time_sum += e.step_time_s;
    ++valid;
    rewards[static_cast<std::size_t>(s)] =
        static_cast<float>(-std::sqrt(e.step_time_s / task.reference_s));
  }
  stats.mean_step_time_s =
      valid > 0 ? time_sum / static_cast<double>(valid) : std::numeric_limits<double>::infinity();
  auto reward = torch::from_blob(rewards.data(), {k}, torch::kFloat).clone();
  stats.mean_reward = reward.mean().item<double>();
  auto advantage = reward - old_value;
  if (k > 1) advantage = (advantage - advantage.mean()) / (advantage.std() + 1e-6);
  advantage = advantage.unsqueeze(0);  // [1, k]

  // The joint action's objective: every node's choice in every task is one factor of the
  // joint action, all sharing its advantage; summed over the factors that decide (colocated
  // ops follow their group for placement), averaged over the samples.
  const auto all_nodes = torch::ones_like(g.action_mask);
  const double normaliser = static_cast<double>(k);
  auto params = policy_->parameters();
  for (std::int64_t epoch = 0; epoch < options_.epochs; ++epoch) {
    PolicyOutput out = epoch == 0 ? std::move(first) : policy_->forward(g, devices);
    torch::Tensor policy_loss = torch::zeros({});
    torch::Tensor node_entropy = torch::zeros({g.num_nodes});
    for (auto t : tasks) {
      const auto& mask = t == GoTask::kPlacement ? g.action_mask : all_nodes;
      auto log_probs = torch::log_softmax(out.of(t), 1);
      auto ratio = torch::exp(log_probs.gather(1, actions.of(t)) - old_log_probs.of(t));
      auto surrogate =
          torch::min(ratio * advantage,
                     torch::clamp(ratio, 1.0 - options_.clip, 1.0 + options_.clip) * advantage);
      policy_loss = policy_loss - (surrogate * mask.unsqueeze(1)).sum() / normaliser;
      node_entropy = node_entropy - (log_probs.exp() * log_probs).sum(1) * mask;
    }
    auto value_loss = (out.value - reward).pow(2).mean();
    auto loss =
        policy_loss + options_.value_coef * value_loss - options_.entropy_coef * node_entropy.sum();
    optimizer_->zero_grad();
    loss.backward();
    torch::nn::utils::clip_grad_norm_(params, options_.grad_clip);
    optimizer_->step();
    if (epoch == 0) {
      stats.policy_loss = policy_loss.item<double>();
      stats.value_loss = value_loss.item<double>();
      stats.entropy = (node_entropy.sum() / g.action_mask.sum().clamp_min(1.0)).item<double>();
    }
  }
  return stats;
}

}  // namespace gopt::agents::go
