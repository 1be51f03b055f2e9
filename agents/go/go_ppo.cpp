#include "agents/go/go_ppo.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <limits>
#include <utility>
#include <vector>

namespace gopt::agents::go {

PpoTask::PpoTask(Environment& environment, DecisionBase base_)
    : env(&environment),
      tensors(make_graph_tensors(environment.problem().graph)),
      base(std::move(base_)) {}

PpoTask::PpoTask(Environment& environment, DecisionBase base_, GraphTensors graph_tensors)
    : env(&environment), tensors(std::move(graph_tensors)), base(std::move(base_)) {}

namespace {

// With unit decisions, placement is decided once per unit: its actions, log-probabilities
// and loss terms are per unit (one row each, GraphTensors::unit_rows), and every op takes
// its unit's device.
bool per_unit(const GoPolicyOptions& options, GoTask task) {
  return options.unit_decisions && task == GoTask::kPlacement;
}

// The log-probabilities of `task`'s decisions, one row per decision.
torch::Tensor decision_log_probs(const GoPolicyOptions& options, GoTask task,
                                 const torch::Tensor& logits, const GraphTensors& g) {
  auto log_probs = torch::log_softmax(logits, 1);
  return per_unit(options, task) ? log_probs.index_select(0, g.unit_rows) : log_probs;
}

// Mixed sampling's distribution of a unit: the softmax of the mean of its ops' logits.
torch::Tensor pooled_log_probs(const torch::Tensor& logits, const GraphTensors& g) {
  return torch::log_softmax(unit_means(logits, g), 1);
}

// PPO's clipped surrogate of every factor of the joint action.
torch::Tensor clipped_surrogate(const torch::Tensor& ratio, const torch::Tensor& advantage,
                                double clip) {
  return torch::min(ratio * advantage, torch::clamp(ratio, 1.0 - clip, 1.0 + clip) * advantage);
}

// The decision of one column of `actions` ([decisions, k]).
core::Decision sample_decision(const PpoTask& task, const GoPolicyOptions& policy,
                               const TaskActions& actions, std::int64_t s) {
  const auto& g = task.tensors;
  TaskActions sample;
  for (auto t : enabled_tasks(policy)) {
    sample.of(t) = actions.of(t).select(1, s);
    if (per_unit(policy, t)) sample.of(t) = sample.of(t).index_select(0, g.unit);
  }
  return task_decision(sample, g, task.env->problem(), task.base);
}

// Simulates the batch's greedy decision (for the best so far, not trained on) and its
// samples, in that order, and sets the samples' rewards and advantages. The reward of a
// valid decision is -sqrt(step time / the graph's reference), an out-of-memory one
// options.oom_reward.
void score(PpoTask& task, PpoBatch& batch, const GoPolicyOptions& policy, const PpoOptions& options,
           LearnerGroup* group, PpoStepStats& stats) {
  const auto& g = task.tensors;
  const auto k = options.samples_per_step;
  const std::int64_t first = options.evaluate_greedy ? 1 : 0;
  const auto evaluations = evaluate_shared(
      *task.env, first + k,
      [&](std::int64_t i) {
        return i < first ? task_decision(batch.greedy, g, task.env->problem(), task.base)
                         : sample_decision(task, policy, batch.actions, i - first);
      },
      group);
  stats.samples += first;
  batch.evaluations = evaluations;
  std::vector<float> rewards(static_cast<std::size_t>(k));
  double time_sum = 0;
  std::int64_t valid = 0;
  for (std::int64_t s = 0; s < k; ++s) {
    const Evaluation& e = evaluations[static_cast<std::size_t>(first + s)];
    ++stats.samples;
    if (e.oom) {
      ++stats.oom;
      rewards[static_cast<std::size_t>(s)] = static_cast<float>(options.oom_reward);
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
  batch.reward = torch::from_blob(rewards.data(), {k}, torch::kFloat).clone();
  stats.mean_reward = batch.reward.mean().item<double>();
  auto advantage = batch.reward - batch.old_value;
  if (k > 1) advantage = (advantage - advantage.mean()) / (advantage.std() + 1e-6);
  batch.advantage = advantage.unsqueeze(0);  // [1, k]
}

// Self-imitation targets: the best decision so far on `env`, by position, per decided task.
TaskActions imitation_targets(const Environment& env, const GraphTensors& g,
                              const GoPolicyOptions& policy) {
  TaskActions best;
  const core::Decision& b = env.best_decision();
  const auto* order = g.order.data_ptr<std::int64_t>();
  for (auto t : enabled_tasks(policy)) {
    const auto& field = t == GoTask::kPlacement    ? b.placement
                        : t == GoTask::kScheduling ? b.priority
                                                   : b.fusion;
    auto target = torch::zeros({g.num_nodes, 1}, torch::kLong);
    if (field) {
      auto a = target.accessor<std::int64_t, 2>();
      for (std::int64_t p = 0; p < g.num_nodes; ++p) {
        a[p][0] = (*field)[static_cast<std::size_t>(order[p])];
      }
    }
    best.of(t) = per_unit(policy, t) ? target.index_select(0, g.unit_rows) : target;
  }
  return best;
}

// Mixed sampling's placement terms: per op for the per-op samples only, per unit for the
// unit samples.
torch::Tensor mixed_placement_loss(torch::Tensor policy_loss, const torch::Tensor& surrogate,
                                   const torch::Tensor& mask, const PolicyOutput& out,
                                   const GraphTensors& g, const PpoBatch& batch,
                                   const PpoOptions& options) {
  const auto k = options.samples_per_step;
  const double normaliser = static_cast<double>(k);
  auto per_op = torch::ones({1, k});
  per_op.slice(1, 0, batch.unit_samples).zero_();
  policy_loss = policy_loss - (surrogate * mask.unsqueeze(1) * per_op).sum() / normaliser;
  auto unit_advantage = batch.advantage.slice(1, 0, batch.unit_samples);
  auto unit_ratio = torch::exp(pooled_log_probs(out.logits, g).gather(1, batch.unit_actions) -
                               batch.unit_old_log_probs);
  return policy_loss -
         clipped_surrogate(unit_ratio, unit_advantage, options.clip).sum() / normaliser;
}

// The device-balance penalty (PpoOptions::device_balance): KL(uniform || p̄) over the
// cluster's `devices`, p̄ the mean of the decisions' device distributions (rows of
// `log_probs` where `mask` is 1), times the decisions' number, so that its weight compares
// with the entropy bonus, a sum over decisions too. On a device no decision samples it
// still pulls with a gradient of about 1/devices per decision, where the entropy's vanishes.
// With a `floor` (PpoOptions::device_floor) only the devices whose mean lies below
// floor/devices contribute their KL term, measured from the floor instead of the uniform
// share, so devices above it feel no pull.
torch::Tensor balance_penalty(const torch::Tensor& log_probs, const torch::Tensor& mask,
                              std::int64_t devices, double floor) {
  const auto weight = mask.sum().clamp_min(1.0);
  const auto mean =
      (log_probs.slice(1, 0, devices).exp() * mask.unsqueeze(1)).sum(0) / weight;  // [devices]
  const double log_share = -std::log(static_cast<double>(devices));
  const auto log_mean = mean.clamp_min(1e-12).log();
  if (floor <= 0) return weight * (log_share - log_mean.mean());
  return weight * (std::log(floor) + log_share - log_mean).clamp_min(0.0).mean();
}

struct EpochLoss {
  torch::Tensor policy;   // the clipped surrogate and self-imitation terms
  torch::Tensor value;    // the value head's squared error
  torch::Tensor entropy;  // of every decision, summed
  torch::Tensor balance;  // the device-balance penalty (undefined when off)
};

// One epoch's objective on `out`, a forward pass of the policy. Every decision (a node's
// choice, or a unit's) in every task is one factor of the joint action, all sharing its
// advantage; summed over the factors that decide (colocated ops follow their group for
// placement), averaged over the samples.
EpochLoss epoch_loss(const GoPolicyOptions& policy, const GraphTensors& g, PpoBatch& batch,
                     const PpoOptions& options, const PolicyOutput& out) {
  const auto all_nodes = torch::ones_like(g.action_mask);
  const auto all_units = torch::ones({g.num_units});
  const double normaliser = static_cast<double>(options.samples_per_step);
  const double log_cap = std::log(options.imitation_cap);
  torch::Tensor policy_loss = torch::zeros({});
  torch::Tensor node_entropy = torch::zeros({g.num_nodes});  // per-node decisions' entropy
  torch::Tensor unit_entropy = torch::zeros({});             // per-unit decisions', summed
  torch::Tensor balance;
  for (auto t : enabled_tasks(policy)) {
    const auto& mask = per_unit(policy, t)       ? all_units
                       : t == GoTask::kPlacement ? g.action_mask
                                                 : all_nodes;
    auto log_probs = decision_log_probs(policy, t, out.of(t), g);
    auto ratio = torch::exp(log_probs.gather(1, batch.actions.of(t)) - batch.old_log_probs.of(t));
    auto surrogate = clipped_surrogate(ratio, batch.advantage, options.clip);
    if (t == GoTask::kPlacement && batch.unit_samples > 0) {
      policy_loss = mixed_placement_loss(policy_loss, surrogate, mask, out, g, batch, options);
    } else {
      policy_loss = policy_loss - (surrogate * mask.unsqueeze(1)).sum() / normaliser;
    }
    if (t == GoTask::kPlacement && options.device_balance > 0) {
      balance = balance_penalty(log_probs, mask, batch.devices, options.device_floor);
    }
    if (per_unit(policy, t)) {
      unit_entropy = unit_entropy - ((log_probs.exp() * log_probs).sum(1) * mask).sum();
    } else {
      node_entropy = node_entropy - (log_probs.exp() * log_probs).sum(1) * mask;
    }
    if (batch.imitation.of(t).defined()) {
      // No gradient once an op's best action has probability imitation_cap.
      auto imitated = log_probs.gather(1, batch.imitation.of(t)).squeeze(1).clamp_max(log_cap);
      policy_loss = policy_loss - options.imitation_coef * (imitated * mask).sum();
    }
  }
  auto value_loss = (out.value - batch.reward).pow(2).mean();
  return {policy_loss, value_loss, node_entropy.sum() + unit_entropy, balance};
}

}  // namespace

void ppo_backward(GoPolicy& policy, const GraphTensors& g, PpoBatch& batch,
                  const PpoOptions& options, std::int64_t epoch, PpoStepStats* stats) {
  const GoPolicyOptions& o = policy->options;
  PolicyOutput out = epoch == 0 ? std::move(batch.first_pass) : policy->forward(g, batch.devices);
  const EpochLoss l = epoch_loss(o, g, batch, options, out);
  auto loss = l.policy + options.value_coef * l.value - options.entropy_coef * l.entropy;
  if (l.balance.defined()) loss = loss + options.device_balance * l.balance;
  loss.backward();
  if (stats != nullptr) {
    stats->policy_loss = l.policy.item<double>();
    stats->value_loss = l.value.item<double>();
    const auto decisions = o.unit_decisions ? torch::tensor(static_cast<float>(g.num_units))
                                            : g.action_mask.sum().clamp_min(1.0);
    stats->entropy = (l.entropy / decisions).item<double>();
  }
}

void ppo_update(GoPolicy& policy, torch::optim::Adam& optimizer, const GraphTensors& g,
                PpoBatch batch, const PpoOptions& options, PpoStepStats& stats) {
  auto params = policy->parameters();
  for (std::int64_t epoch = 0; epoch < options.epochs; ++epoch) {
    optimizer.zero_grad();
    ppo_backward(policy, g, batch, options, epoch, epoch == 0 ? &stats : nullptr);
    torch::nn::utils::clip_grad_norm_(params, options.grad_clip);
    optimizer.step();
  }
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
  const auto block = exploration_block_size(options_.exploration_block, n, d);
  if (block == 1) return torch::multinomial(log_probs.exp(), k, /*replacement=*/true, gen_);
  // Noise groups: blocks of consecutive positions; in layer mode, an op with a layer
  // attribute shares its layer's noise instead.
  // With scope_exploration the layer groups are (top-level scope, layer) pairs instead.
  const torch::Tensor& layer = options_.scope_exploration ? g.scope_layer : g.layer;
  const auto num_layers = options_.scope_exploration ? g.num_scope_layers : g.num_layers;
  auto by_block = torch::arange(n, torch::kLong).div(block, "floor");
  auto by_layer = torch::where(layer.ge(0), layer, by_block + num_layers);
  const auto groups = num_layers + (n + block - 1) / block;
  auto actions = torch::empty({n, k}, torch::kLong);
  for (std::int64_t s = 0; s < k; ++s) {
    const bool layer_mode = options_.layer_exploration && num_layers > 0 && s % 2 == 0;
    auto uniform = torch::rand({groups, d}, gen_).clamp(1e-12, 1.0 - 1e-7);
    auto gumbel = -torch::log(-torch::log(uniform));
    auto noise = gumbel.index_select(0, layer_mode ? by_layer : by_block + num_layers);
    actions.select(1, s).copy_((log_probs + noise).argmax(1));
  }
  return actions;
}

PpoStepStats PpoTrainer::step(PpoTask& task) {
  PpoStepStats stats;
  PpoBatch batch = sample_batch(task, stats);
  ppo_update(policy_, *optimizer_, task.tensors, std::move(batch), options_, stats);
  return stats;
}

PpoBatch PpoTrainer::sample_batch(PpoTask& task, PpoStepStats& stats) {
  PpoBatch batch;
  draw(task, batch);
  score(task, batch, policy_->options, options_, group_, stats);
  const Environment& env = *task.env;
  if (options_.imitation_coef > 0 && std::isfinite(env.best_step_time_s())) {
    batch.imitation = imitation_targets(env, task.tensors, policy_->options);
  }
  return batch;
}

// Samples k decisions from the current policy: per task, per node (or unit), all nodes at
// once; and the greedy decision, when it is evaluated.
void PpoTrainer::draw(PpoTask& task, PpoBatch& batch) {
  Environment& env = *task.env;
  const auto& g = task.tensors;
  const auto k = options_.samples_per_step;
  const GoPolicyOptions& o = policy_->options;
  batch.devices = static_cast<std::int64_t>(env.problem().num_devices());
  // Mixed sampling (unit_samples, with per-op decisions): the first unit_samples samples are
  // drawn per unit from the mean of its ops' logits and trained on those unit
  // log-probabilities; the others per op.
  batch.unit_samples =
      !o.unit_decisions && o.place ? std::min<std::int64_t>(k, options_.unit_samples) : 0;
  batch.first_pass = policy_->forward(g, batch.devices);
  torch::NoGradGuard no_grad;
  TaskActions greedy;
  for (auto t : enabled_tasks(o)) {
    auto logits = batch.first_pass.of(t).detach();
    auto log_probs = decision_log_probs(o, t, logits, g);
    batch.actions.of(t) = per_unit(o, t)
                              ? torch::multinomial(log_probs.exp(), k, /*replacement=*/true, gen_)
                              : sample_actions(log_probs, g, k);
    batch.old_log_probs.of(t) = log_probs.gather(1, batch.actions.of(t));
    greedy.of(t) = logits.argmax(1);
  }
  batch.old_value = batch.first_pass.value.detach();
  if (options_.evaluate_greedy) batch.greedy = std::move(greedy);
  if (batch.unit_samples > 0) draw_units(g, batch);
}

// Mixed sampling: the first unit_samples samples place whole units, drawn from the units'
// pooled distributions (each op of a unit on the unit's device).
void PpoTrainer::draw_units(const GraphTensors& g, PpoBatch& batch) {
  torch::NoGradGuard no_grad;
  auto unit_log_probs = pooled_log_probs(batch.first_pass.logits.detach(), g);
  batch.unit_actions =
      torch::multinomial(unit_log_probs.exp(), batch.unit_samples, /*replacement=*/true, gen_);
  batch.unit_old_log_probs = unit_log_probs.gather(1, batch.unit_actions);
  auto& placement = batch.actions.of(GoTask::kPlacement);
  placement.slice(1, 0, batch.unit_samples).copy_(batch.unit_actions.index_select(0, g.unit));
  batch.old_log_probs.of(GoTask::kPlacement) =
      torch::log_softmax(batch.first_pass.logits.detach(), 1).gather(1, placement);
}

}  // namespace gopt::agents::go
