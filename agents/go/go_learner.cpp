#include "agents/go/go_learner.h"

#include <cmath>
#include <limits>
#include <memory>

#include "agents/baselines/tf_default.h"
#include "agents/torch_utils.h"
#include "core/errors.h"

namespace gopt::agents::go {
namespace {

const char* mode_name(GoMode mode) {
  switch (mode) {
    case GoMode::kOne:
      return "go_one";
    case GoMode::kPretrain:
      return "go_pretrain";
    case GoMode::kFinetune:
      return "go_finetune";
    case GoMode::kZeroShot:
      return "go_zero_shot";
  }
  return "go";
}

}  // namespace

std::string GoLearner::name() const {
  return options_.name.empty() ? mode_name(options_.mode) : options_.name;
}

const GoPolicyOptions& GoLearner::policy_options() const {
  return trained_.policy ? trained_.policy->options : options_.policy;
}

torch::Device GoLearner::device() const {
  return resolve_compute_device(options_.device, "agents." + name() + ".device");
}

void GoLearner::create_policy(std::uint64_t seed) {
  rng_ = core::Rng(seed);
  trained_.policy = GoPolicy(options_.policy);
  initialise(*trained_.policy, rng_);
  trained_.policy->reset_heads();
  // A task with a prior starts exactly at the default: its head's random logits would
  // otherwise compete with the prior (the placement head starts at 3x the usual scale).
  const auto& o = options_.policy;
  if (options_.placement_prior > 0 && o.place) trained_.policy->zero_head(GoTask::kPlacement);
  if (options_.priority_prior > 0 && o.schedule) trained_.policy->zero_head(GoTask::kScheduling);
  if (options_.fusion_prior > 0 && o.fuse) trained_.policy->zero_head(GoTask::kFusion);
  trained_.policy->to(device());  // initialised on the CPU: the same start on every device
  trained_.make_optimizer(options_.ppo.learning_rate);
  trained_.updates = 0;
  best_.clear();
}

void GoLearner::load_policy() {
  if (options_.checkpoint.empty()) {
    throw core::InputError("", std::string("agents.") + name() + ".checkpoint",
                           "no checkpoint given: " + name() +
                               " needs a pretrained policy (run go_pretrain first, or set "
                               "the option 'checkpoint')");
  }
  trained_ = load_checkpoint(options_.checkpoint, options_.ppo.learning_rate, device());
  rng_ = core::Rng(options_.seed);
  // The registry's rule on `order` sees only the options; a checkpoint brings its own.
  if (options_.order == ExecutorOrder::kCriticalPath && trained_.policy->options.schedule) {
    throw core::InputError(
        "", std::string("agents.") + name() + ".order",
        "the policy in " + options_.checkpoint + " decides priorities itself (expected executor)");
  }
}

core::Decision GoLearner::propose(const Problem& problem) {
  auto it = best_.find(&problem.graph);
  if (it != best_.end() && it->second.first == problem.num_devices()) return it->second.second;
  check_devices(problem);
  const DecisionBase base = base_for(problem);
  GraphTensors tensors = tensors_for(problem, base);
  const SubnormalsFlushed flushed;
  return greedy_decision(trained_.policy, tensors, problem, base);
}

void GoLearner::remember(const Problem& problem, core::Decision decision) {
  best_[&problem.graph] = {problem.num_devices(), std::move(decision)};
}

DecisionBase GoLearner::base_for(const Problem& problem) const {
  DecisionBase base = options_.base ? options_.base(problem) : DecisionBase{};
  base.critical_path_order = options_.order == ExecutorOrder::kCriticalPath;
  if (base.xla_fusion && !policy_options().place) {
    // The placement is fixed, so is its rule-based fusion: form it once, not per sample.
    const auto& placement = base.decision.placement;
    base.decision.fusion = xla_fusion_priorities(
        problem.graph, placement ? placement->data() : nullptr, XlaFusionOptions());
    base.xla_fusion = false;
  }
  return base;
}

GraphTensors GoLearner::tensors_for(const Problem& problem, const DecisionBase& base) const {
  std::int64_t split_below = 0;
  switch (options_.weight_gradient_units) {
    case WeightGradientUnits::kOff:
      break;
    case WeightGradientUnits::kAlways:
      split_below = std::numeric_limits<std::int64_t>::max();
      break;
    case WeightGradientUnits::kFewerUnitsThanDevices:
      split_below = problem.num_devices();
      break;
  }
  GraphTensors tensors = make_graph_tensors(problem.graph, split_below);
  set_priors(tensors, base, problem.graph);
  return tensors;
}

PpoTask GoLearner::task_for(Environment& env) const {
  DecisionBase base = base_for(env.problem());
  GraphTensors tensors = tensors_for(env.problem(), base);
  return PpoTask(env, std::move(base), std::move(tensors));
}

ValidationGraph GoLearner::validation_graph_for(Environment& env) const {
  check_devices(env.problem());
  DecisionBase base = base_for(env.problem());
  GraphTensors tensors = tensors_for(env.problem(), base);
  return ValidationGraph{&env, std::move(base), std::move(tensors)};
}

// The default-pipeline priors (GraphTensors::placement_prior, priority_prior,
// fusion_prior), by position, for the tasks the policy decides and whose option is > 0:
// the base placement's device of every op; one middle priority level for every op (equal
// priorities: the FIFO order); the top fusion level for the ops the base's rule-based
// fusion fuses under the base placement and level 0 for the others.
void GoLearner::set_priors(GraphTensors& tensors, const DecisionBase& base,
                           const core::CompiledGraph& graph) const {
  const GoPolicyOptions& o = policy_options();
  const auto* order = tensors.order.data_ptr<std::int64_t>();
  const std::int64_t n = tensors.num_nodes;
  if (options_.placement_prior > 0 && o.place && base.decision.placement) {
    const auto& placement = *base.decision.placement;
    auto prior = torch::zeros({n, o.max_devices});
    auto p = prior.accessor<float, 2>();
    for (std::int64_t pos = 0; pos < n; ++pos) {
      p[pos][placement[static_cast<std::size_t>(order[pos])]] =
          static_cast<float>(options_.placement_prior);
    }
    tensors.placement_prior = prior;
  }
  if (options_.priority_prior > 0 && o.schedule) {
    auto prior = torch::zeros({n, o.priority_levels});
    prior.select(1, o.priority_levels / 2).fill_(options_.priority_prior);
    tensors.priority_prior = prior;
  }
  if (options_.fusion_prior > 0 && o.fuse) {
    std::vector<std::int32_t> fusion;
    if (base.decision.fusion) {
      fusion = *base.decision.fusion;
    } else if (base.xla_fusion) {
      const auto& placement = base.decision.placement;
      fusion =
          xla_fusion_priorities(graph, placement ? placement->data() : nullptr, XlaFusionOptions());
    } else {
      fusion.assign(static_cast<std::size_t>(n), 0);
    }
    auto prior = torch::zeros({n, o.fusion_levels});
    auto p = prior.accessor<float, 2>();
    for (std::int64_t pos = 0; pos < n; ++pos) {
      const bool fused = fusion[static_cast<std::size_t>(order[pos])] > 0;
      p[pos][fused ? o.fusion_levels - 1 : 0] = static_cast<float>(options_.fusion_prior);
    }
    tensors.fusion_prior = prior;
  }
}

void GoLearner::check_devices(const Problem& problem) const {
  if (problem.num_devices() > trained_.policy->options.max_devices) {
    throw core::InputError(options_.checkpoint, std::string("agents.") + name() + ".max_devices",
                           "the cluster has " + std::to_string(problem.num_devices()) +
                               " devices but the policy places on at most " +
                               std::to_string(trained_.policy->options.max_devices));
  }
}

TrainingLoop GoLearner::loop(std::int64_t unit_phase) {
  TrainingLoop loop(trained_, rng_, options_.ppo);
  loop.share(group_);
  if (unit_phase > 0) {
    loop.add(
        std::make_unique<CoarseToFine>(unit_phase, options_.unit_handover, options_.unit_patience));
  }
  if (!snapshots_.path.empty()) loop.add(std::make_unique<Snapshots>(snapshots_));
  return loop;
}

void GoLearner::train(TrainingLoop& loop, std::vector<PpoTask>& tasks, const TrainBudget& budget,
                      TrainingObserver* observer) {
  for (const auto& t : tasks) check_devices(t.env->problem());
  loop.run(tasks, budget, observer);
  for (const auto& t : tasks) {
    if (std::isfinite(t.env->best_step_time_s())) {
      remember(t.env->problem(), t.env->best_decision());
    }
  }
}

}  // namespace gopt::agents::go
