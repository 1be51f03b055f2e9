#include "agents/go/go_ppo.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

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

// The exploration block size for a graph of `n` nodes on `devices` devices: `block`, but at
// least 4 blocks per device, so that a small graph is not placed whole on one device.
// Sampling and zero-shot's memory repair group ops by the same blocks.
std::int64_t noise_block(std::int64_t block, std::int64_t n, std::int64_t devices) {
  return std::max<std::int64_t>(1, std::min(block, n / (4 * devices)));
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

core::Decision memory_fitting_decision(GoPolicy& policy, const GraphTensors& tensors,
                                       Environment& env, const DecisionBase& base,
                                       std::int64_t max_repairs, std::int64_t block,
                                       MemoryRepair* report) {
  torch::NoGradGuard no_grad;
  const Problem& problem = env.problem();
  const auto devices = static_cast<std::int64_t>(problem.num_devices());
  auto out = policy->forward(tensors, problem.num_devices());
  TaskActions actions;
  for (auto task : enabled_tasks(policy->options)) actions.of(task) = out.of(task).argmax(1);
  MemoryRepair repair;
  core::Decision greedy = task_decision(actions, tensors, problem.graph, base);
  Evaluation evaluation = env.evaluate(greedy);
  ++repair.simulations;
  repair.fits = !evaluation.oom;
  if (!evaluation.oom || !actions.placement.defined() || max_repairs <= 0) {
    if (report) *report = repair;
    return greedy;
  }
  const std::int64_t n = tensors.num_nodes;
  const auto D = static_cast<std::size_t>(devices);
  const auto log_p = out.logits.slice(1, 0, devices).to(torch::kDouble).contiguous();
  const double* lp = log_p.data_ptr<double>();
  const auto mask = tensors.action_mask.contiguous();
  const float* decides = mask.data_ptr<float>();
  const auto order_tensor = tensors.order.contiguous();
  const std::int64_t* order = order_tensor.data_ptr<std::int64_t>();
  const auto layer_tensor = tensors.layer.contiguous();
  const std::int64_t* layer = layer_tensor.data_ptr<std::int64_t>();
  const auto& params = problem.graph.param_bytes();
  const auto& outputs = problem.graph.output_bytes();
  // Groups that move together, as in sampling: the decision units with unit decisions;
  // else, as in exploration, a layer, or a block of positions.
  const bool by_unit = policy->options.unit_decisions();
  const auto unit_tensor = tensors.unit.contiguous();
  const std::int64_t* unit = unit_tensor.data_ptr<std::int64_t>();
  block = noise_block(block, n, devices);
  const std::int64_t num_groups =
      by_unit ? tensors.num_units : tensors.num_layers + (n + block - 1) / block;
  auto group_of = [&](std::int64_t p) {
    if (by_unit) return unit[p];
    return layer[p] >= 0 ? layer[p] : tensors.num_layers + p / block;
  };
  // The positions of each group: members[member_begin[g] .. member_begin[g + 1]).
  std::vector<std::int64_t> member_begin(static_cast<std::size_t>(num_groups) + 1, 0);
  for (std::int64_t p = 0; p < n; ++p) ++member_begin[static_cast<std::size_t>(group_of(p)) + 1];
  for (std::size_t g = 0; g < static_cast<std::size_t>(num_groups); ++g) {
    member_begin[g + 1] += member_begin[g];
  }
  std::vector<std::int64_t> members(static_cast<std::size_t>(n));
  {
    std::vector<std::int64_t> next(member_begin.begin(), member_begin.end() - 1);
    for (std::int64_t p = 0; p < n; ++p) {
      members[static_cast<std::size_t>(next[static_cast<std::size_t>(group_of(p))]++)] = p;
    }
  }
  const auto greedy_placement = actions.placement.contiguous();
  std::vector<std::int64_t> choice(greedy_placement.data_ptr<std::int64_t>(),
                                   greedy_placement.data_ptr<std::int64_t>() + n);
  const std::vector<std::int64_t> greedy_choice = choice;
  struct GroupOnDevice {
    double margin = 0;  // summed log p(d) - log p(best device with room)
    double weight = 0;  // summed parameter + output bytes
    std::int64_t ops = 0;
  };
  std::vector<GroupOnDevice> on_device(static_cast<std::size_t>(num_groups));
  std::vector<std::int64_t> ranked;
  std::vector<double> load(D);
  std::vector<double> capacity(D);
  std::vector<bool> over(D);
  for (std::int64_t step = 0; step < max_repairs; ++step) {
    const auto& result = env.last_result();
    bool any_room = false;
    for (std::size_t d = 0; d < D; ++d) {
      load[d] = static_cast<double>(result.devices[d].peak_memory_bytes);
      capacity[d] = static_cast<double>(
          problem.cluster.device(static_cast<DeviceId>(d)).memory_capacity_bytes);
      over[d] = load[d] > capacity[d];
      any_room = any_room || !over[d];
    }
    if (!any_room) break;  // every device is full: moving ops cannot help
    for (std::size_t d = 0; d < D; ++d) {
      if (!over[d]) continue;
      std::fill(on_device.begin(), on_device.end(), GroupOnDevice{});
      double total_weight = 0;
      for (std::int64_t p = 0; p < n; ++p) {
        if (choice[static_cast<std::size_t>(p)] != static_cast<std::int64_t>(d) ||
            decides[p] == 0) {
          continue;
        }
        const double* row = lp + p * devices;
        double alternative = -std::numeric_limits<double>::infinity();
        for (std::size_t e = 0; e < D; ++e) {
          if (!over[e]) alternative = std::max(alternative, row[e]);
        }
        const auto v = static_cast<std::size_t>(order[p]);
        const auto weight = static_cast<double>(params[v] + outputs[v]);
        auto& g = on_device[static_cast<std::size_t>(group_of(p))];
        g.margin += row[d] - alternative;
        g.weight += weight;
        ++g.ops;
        total_weight += weight;
      }
      if (total_weight <= 0) continue;
      // The groups d holds, those the policy is least sure of first (mean margin).
      ranked.clear();
      for (std::int64_t g = 0; g < num_groups; ++g) {
        if (on_device[static_cast<std::size_t>(g)].ops > 0) ranked.push_back(g);
      }
      auto mean_margin = [&](std::int64_t g) {
        const auto& s = on_device[static_cast<std::size_t>(g)];
        return s.margin / static_cast<double>(s.ops);
      };
      std::sort(ranked.begin(), ranked.end(), [&](std::int64_t a, std::int64_t b) {
        const double ma = mean_margin(a);
        const double mb = mean_margin(b);
        return ma < mb || (ma == mb && a < b);
      });
      // Move groups to the device with the most room until d's estimated peak fits, with
      // 10% to spare (peak bytes per byte of op weight as on d).
      const double per_weight = load[d] / total_weight;
      for (const std::int64_t g : ranked) {
        if (load[d] <= 0.9 * capacity[d]) break;
        std::size_t to = D;
        for (std::size_t e = 0; e < D; ++e) {
          if (e == d) continue;
          if (to == D || capacity[e] - load[e] > capacity[to] - load[to]) to = e;
        }
        if (to == D) break;
        for (auto i = member_begin[static_cast<std::size_t>(g)];
             i < member_begin[static_cast<std::size_t>(g) + 1]; ++i) {
          auto& c = choice[static_cast<std::size_t>(members[static_cast<std::size_t>(i)])];
          if (c == static_cast<std::int64_t>(d)) c = static_cast<std::int64_t>(to);
        }
        const double moved = on_device[static_cast<std::size_t>(g)].weight * per_weight;
        load[d] -= moved;
        load[to] += moved;
      }
    }
    TaskActions repaired = actions;
    repaired.placement = torch::tensor(choice, torch::kLong);
    core::Decision decision = task_decision(repaired, tensors, problem.graph, base);
    evaluation = env.evaluate(decision);
    ++repair.simulations;
    if (!evaluation.oom) {
      repair.fits = true;
      for (std::size_t p = 0; p < choice.size(); ++p) {
        repair.moved_ops += choice[p] != greedy_choice[p] ? 1 : 0;
      }
      if (report) *report = repair;
      return decision;
    }
  }
  if (report) *report = repair;
  return greedy;
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
  const auto block = noise_block(options_.exploration_block, n, d);
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
  // With unit decisions, placement is decided once per unit: its actions, log-probabilities
  // and loss terms are per unit (one row each, GraphTensors::unit_rows), and every op takes
  // its unit's device.
  const bool by_unit = policy_->options.unit_decisions();
  auto unit_task = [&](GoTask t) { return by_unit && t == GoTask::kPlacement; };
  auto decision_log_probs = [&](GoTask t, const torch::Tensor& logits) {
    auto log_probs = torch::log_softmax(logits, 1);
    return unit_task(t) ? log_probs.index_select(0, g.unit_rows) : log_probs;
  };
  TaskActions actions;        // [decisions, k] per task
  TaskActions old_log_probs;  // [decisions, k] per task
  // Mixed sampling (unit_samples, with per-op decisions): the first unit_samples samples are
  // drawn per unit from the mean of its ops' logits and trained on those unit
  // log-probabilities; the others per op.
  const std::int64_t unit_samples =
      !by_unit && policy_->options.place() ? std::min<std::int64_t>(k, options_.unit_samples) : 0;
  auto pooled_log_probs = [&](const torch::Tensor& logits) {
    return torch::log_softmax(unit_means(logits, g), 1);
  };
  torch::Tensor unit_actions;        // [units, unit_samples]
  torch::Tensor unit_old_log_probs;  // [units, unit_samples]
  torch::Tensor old_value;
  PolicyOutput first = policy_->forward(g, devices);
  {
    torch::NoGradGuard no_grad;
    TaskActions greedy;
    for (auto t : tasks) {
      auto logits = first.of(t).detach();
      auto log_probs = decision_log_probs(t, logits);
      actions.of(t) = unit_task(t)
                          ? torch::multinomial(log_probs.exp(), k, /*replacement=*/true, gen_)
                          : sample_actions(log_probs, g, k);
      old_log_probs.of(t) = log_probs.gather(1, actions.of(t));
      greedy.of(t) = logits.argmax(1);
    }
    old_value = first.value.detach();
    if (options_.evaluate_greedy) {
      (void)env.evaluate(task_decision(greedy, g, problem.graph, task.base));
      ++stats.samples;
    }
    if (unit_samples > 0) {
      // The first unit_samples samples place whole units, drawn from the units' pooled
      // distributions (each op of a unit on the unit's device).
      auto unit_log_probs = pooled_log_probs(first.logits.detach());
      unit_actions =
          torch::multinomial(unit_log_probs.exp(), unit_samples, /*replacement=*/true, gen_);
      unit_old_log_probs = unit_log_probs.gather(1, unit_actions);
      auto& placement = actions.of(GoTask::kPlacement);
      placement.slice(1, 0, unit_samples).copy_(unit_actions.index_select(0, g.unit));
      old_log_probs.of(GoTask::kPlacement) =
          torch::log_softmax(first.logits.detach(), 1).gather(1, placement);
    }
  }

  std::vector<float> rewards(static_cast<std::size_t>(k));
  double time_sum = 0;
  std::int64_t valid = 0;
  for (std::int64_t s = 0; s < k; ++s) {
    TaskActions sample;
    for (auto t : tasks) {
      sample.of(t) = actions.of(t).select(1, s);
      if (unit_task(t)) sample.of(t) = sample.of(t).index_select(0, g.unit);
    }
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

  // Self-imitation target: the best decision so far, by position, per decided task.
  TaskActions best;
  const bool imitate = options_.imitation_coef > 0 && std::isfinite(env.best_step_time_s());
  const double log_cap = std::log(options_.imitation_cap);
  if (imitate) {
    const core::Decision& b = env.best_decision();
    const auto* order = g.order.data_ptr<std::int64_t>();
    for (auto t : tasks) {
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
      best.of(t) = unit_task(t) ? target.index_select(0, g.unit_rows) : target;
    }
  }

  // The joint action's objective: every decision (a node's choice, or a unit's) in every
  // task is one factor of the joint action, all sharing its advantage; summed over the
  // factors that decide (colocated ops follow their group for placement), averaged over the
  // samples.
  const auto all_nodes = torch::ones_like(g.action_mask);
  const auto all_units = torch::ones({g.num_units});
  const double normaliser = static_cast<double>(k);
  auto params = policy_->parameters();
  for (std::int64_t epoch = 0; epoch < options_.epochs; ++epoch) {
    PolicyOutput out = epoch == 0 ? std::move(first) : policy_->forward(g, devices);
    torch::Tensor policy_loss = torch::zeros({});
    torch::Tensor node_entropy = torch::zeros({g.num_nodes});  // per-node decisions' entropy
    torch::Tensor unit_entropy = torch::zeros({});             // per-unit decisions', summed
    for (auto t : tasks) {
      const auto& mask = unit_task(t)              ? all_units
                         : t == GoTask::kPlacement ? g.action_mask
                                                   : all_nodes;
      auto log_probs = decision_log_probs(t, out.of(t));
      auto ratio = torch::exp(log_probs.gather(1, actions.of(t)) - old_log_probs.of(t));
      auto surrogate =
          torch::min(ratio * advantage,
                     torch::clamp(ratio, 1.0 - options_.clip, 1.0 + options_.clip) * advantage);
      if (t == GoTask::kPlacement && unit_samples > 0) {
        // Per-op terms for the per-op samples only; the unit samples' terms per unit.
        auto per_op = torch::ones({1, k});
        per_op.slice(1, 0, unit_samples).zero_();
        policy_loss = policy_loss - (surrogate * mask.unsqueeze(1) * per_op).sum() / normaliser;
        auto unit_advantage = advantage.slice(1, 0, unit_samples);
        auto unit_ratio =
            torch::exp(pooled_log_probs(out.logits).gather(1, unit_actions) - unit_old_log_probs);
        auto unit_surrogate = torch::min(
            unit_ratio * unit_advantage,
            torch::clamp(unit_ratio, 1.0 - options_.clip, 1.0 + options_.clip) * unit_advantage);
        policy_loss = policy_loss - unit_surrogate.sum() / normaliser;
      } else {
        policy_loss = policy_loss - (surrogate * mask.unsqueeze(1)).sum() / normaliser;
      }
      if (unit_task(t)) {
        unit_entropy = unit_entropy - ((log_probs.exp() * log_probs).sum(1) * mask).sum();
      } else {
        node_entropy = node_entropy - (log_probs.exp() * log_probs).sum(1) * mask;
      }
      if (imitate) {
        // No gradient once an op's best action has probability imitation_cap.
        auto imitated = log_probs.gather(1, best.of(t)).squeeze(1).clamp_max(log_cap);
        policy_loss = policy_loss - options_.imitation_coef * (imitated * mask).sum();
      }
    }
    auto value_loss = (out.value - reward).pow(2).mean();
    auto entropy = node_entropy.sum() + unit_entropy;
    auto loss = policy_loss + options_.value_coef * value_loss - options_.entropy_coef * entropy;
    optimizer_->zero_grad();
    loss.backward();
    torch::nn::utils::clip_grad_norm_(params, options_.grad_clip);
    optimizer_->step();
    if (epoch == 0) {
      stats.policy_loss = policy_loss.item<double>();
      stats.value_loss = value_loss.item<double>();
      const auto decisions = by_unit ? torch::tensor(static_cast<float>(g.num_units))
                                     : g.action_mask.sum().clamp_min(1.0);
      stats.entropy = (entropy / decisions).item<double>();
    }
  }
  return stats;
}

}  // namespace gopt::agents::go
