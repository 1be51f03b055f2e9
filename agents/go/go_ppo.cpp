#include "agents/go/go_ppo.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "agents/placement_utils.h"

namespace gopt::agents::go {

PpoTask::PpoTask(Environment& environment)
    : env(&environment), tensors(make_graph_tensors(environment.problem().graph)) {}

core::Decision placement_decision(const torch::Tensor& devices_by_position,
                                  const GraphTensors& tensors, const core::CompiledGraph& graph) {
  auto devices = devices_by_position.to(torch::kLong).contiguous();
  const auto* d = devices.data_ptr<std::int64_t>();
  const auto* order = tensors.order.data_ptr<std::int64_t>();
  std::vector<DeviceId> placement(static_cast<std::size_t>(graph.num_nodes()));
  for (std::int64_t p = 0; p < tensors.num_nodes; ++p) {
    placement[static_cast<std::size_t>(order[p])] = static_cast<DeviceId>(d[p]);
  }
  apply_colocation(graph, placement);
  core::Decision decision;
  decision.placement = std::move(placement);
  return decision;
}

core::Decision greedy_decision(GoPolicy& policy, const GraphTensors& tensors,
                               const Problem& problem) {
  torch::NoGradGuard no_grad;
  auto out = policy->forward(tensors, problem.num_devices());
  return placement_decision(out.logits.argmax(1), tensors, problem.graph);
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
  PpoStepStats stats;

  // Sample k placements from the current policy.
  torch::Tensor actions;
  torch::Tensor old_log_probs;
  torch::Tensor old_value;
  {
    torch::NoGradGuard no_grad;
    auto out = policy_->forward(g, devices);
    auto log_probs = torch::log_softmax(out.logits, 1);
    actions = sample_actions(log_probs, g, k);  // [N, k]
    old_log_probs = log_probs.gather(1, actions);
    old_value = out.value;
    if (options_.evaluate_greedy) {
      (void)env.evaluate(placement_decision(out.logits.argmax(1), g, problem.graph));
      ++stats.samples;
    }
  }

  std::vector<float> rewards(static_cast<std::size_t>(k));
  double time_sum = 0;
  std::int64_t valid = 0;
  for (std::int64_t s = 0; s < k; ++s) {
    auto e = env.evaluate(placement_decision(actions.select(1, s), g, problem.graph));
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

  // The joint action's objective: summed over the nodes that decide, averaged over samples.
  const auto mask = g.action_mask.unsqueeze(1);  // [N, 1]
  const double normaliser = static_cast<double>(k);
  auto params = policy_->parameters();
  for (std::int64_t epoch = 0; epoch < options_.epochs; ++epoch) {
    auto out = policy_->forward(g, devices);
    auto log_probs = torch::log_softmax(out.logits, 1);
    auto ratio = torch::exp(log_probs.gather(1, actions) - old_log_probs);
    auto surrogate =
        torch::min(ratio * advantage,
                   torch::clamp(ratio, 1.0 - options_.clip, 1.0 + options_.clip) * advantage);
    auto policy_loss = -(surrogate * mask).sum() / normaliser;
    auto value_loss = (out.value - reward).pow(2).mean();
    auto node_entropy = -(log_probs.exp() * log_probs).sum(1) * g.action_mask;
    auto entropy = node_entropy.sum() / g.action_mask.sum().clamp_min(1.0);
    auto loss =
        policy_loss + options_.value_coef * value_loss - options_.entropy_coef * node_entropy.sum();
    optimizer_->zero_grad();
    loss.backward();
    torch::nn::utils::clip_grad_norm_(params, options_.grad_clip);
    optimizer_->step();
    if (epoch == 0) {
      stats.policy_loss = policy_loss.item<double>();
      stats.value_loss = value_loss.item<double>();
      stats.entropy = entropy.item<double>();
    }
  }
  return stats;
}

}  // namespace gopt::agents::go
