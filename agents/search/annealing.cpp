#include "agents/search/annealing.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <limits>
#include <map>
#include <sstream>

#include "agents/baselines/list_scheduling.h"
#include "agents/option_fields.h"
#include "agents/placement_utils.h"
#include "core/rng.h"
#include "core/strings.h"

namespace gopt::agents::search {
namespace {

using Clock = std::chrono::steady_clock;

// Fusion level of an op that a fusion move switches on: above every op nearer the inputs,
// as tf_default's XLA-style priorities (xla_fusion_priorities) give them.
std::int32_t fusion_on(const core::CompiledGraph& g, NodeId v) {
  return 1 + static_cast<std::int32_t>(g.topological_rank()[static_cast<std::size_t>(v)]);
}

constexpr std::int32_t kPriorityLevels = 8;

// Moves after which the search decides whether delta simulation pays on its problem.
constexpr std::int64_t kDeltaProbe = 16;

// The best valid step time `env` had seen when it had counted `samples` samples.
Seconds best_at(const Environment& env, std::int64_t samples) {
  const auto& list = env.improvements();
  for (auto b = list.rbegin(); b != list.rend(); ++b) {
    if (b->samples <= samples) return b->step_time_s;
  }
  return std::numeric_limits<Seconds>::infinity();
}

class AnnealingAgent final : public Agent {
 public:
  explicit AnnealingAgent(AnnealingOptions options) : options_(std::move(options)) {}

  std::string name() const override { return "annealing"; }
  bool is_learner() const override { return true; }

  core::Decision propose(const Problem& problem) override {
    if (trained_graph_ == &problem.graph && devices_ == problem.num_devices()) return best_;
    // Untrained: the best start without searching (one sample per start).
    Environment env(problem);
    train(env, TrainBudget().with_max_samples(static_cast<std::int64_t>(options_.starts.size())),
          nullptr);
    return best_;
  }

  void train(Environment& env, const TrainBudget& budget, TrainingObserver* observer) override {
    const Problem& problem = env.problem();
    const core::CompiledGraph& g = problem.graph;
    const auto start_time = Clock::now();
    core::Rng rng(core::mix_seed(options_.seed, problem.seed));
    index_units(g);
    const std::int64_t per_step = std::max<std::int64_t>(1, options_.samples_per_step);
    std::int64_t limit = budget.max_samples;
    if (budget.max_steps < std::numeric_limits<std::int64_t>::max() / per_step) {
      limit = std::min(limit, env.samples() + budget.max_steps * per_step);
    }
    auto elapsed = [&] { return std::chrono::duration<double>(Clock::now() - start_time).count(); };
    auto out_of_budget = [&] { return env.samples() >= limit || elapsed() >= budget.max_seconds; };

    // Learning curve: one point per `per_step` samples (and one for a last partial step).
    const std::int64_t first_sample = env.samples();
    std::int64_t step = 0;
    double step_time_sum = 0;
    std::int64_t in_step = 0;
    // `samples`: the samples counted once `e` was (the starts are counted as a batch).
    auto record = [&](const Evaluation& e, std::int64_t samples) {
      step_time_sum += e.oom ? e.step_time_s * options_.oom_factor : e.step_time_s;
      if (++in_step < per_step && samples < limit) return;
      ++step;
      if (observer) {
        LearningCurvePoint p;
        p.step = step;
        p.samples = samples;
        p.best_step_time_s = best_at(env, samples);
        p.mean_step_time_s = step_time_sum / static_cast<double>(in_step);
        p.wall_s = elapsed();
        observer->on_training_step(p);
      }
      step_time_sum = 0;
      in_step = 0;
    };
    auto cost_of = [&](const Evaluation& e) {
      return e.oom ? e.step_time_s * options_.oom_factor : e.step_time_s;
    };

    // The starts: every start agent's decision, completed for the searched tasks.
    AgentRegistry starters;
    register_builtin_agents(starters);
    core::Decision current;
    double current_cost = std::numeric_limits<double>::infinity();
    // Proposed while the budget lasts (one sample each), then simulated as one batch.
    std::vector<core::Decision> start_decisions;
    for (const auto& name : options_.starts) {
      if (env.samples() + static_cast<std::int64_t>(start_decisions.size()) >= limit ||
          elapsed() >= budget.max_seconds) {
        break;
      }
      auto agent = starters.create(name);
      core::Decision d = agent->propose(problem);
      complete(d, g);
      order(d, problem);
      start_decisions.push_back(std::move(d));
    }
    const std::vector<Evaluation> start_evaluations = env.evaluate_many(start_decisions);
    for (std::size_t i = 0; i < start_decisions.size(); ++i) {
      const Evaluation& e = start_evaluations[i];
      record(e, env.samples() - static_cast<std::int64_t>(start_decisions.size() - 1 - i));
      if (cost_of(e) < current_cost) {
        current_cost = cost_of(e);
        current = std::move(start_decisions[i]);
      }
    }
    if (!current.placement) {  // no start evaluated (a budget below one sample)
      current = core::Decision{};
      complete(current, g);
    }
    // Moves are simulated from the current decision (delta simulation: it is the base) while
    // that pays: a move whose ops read tensors made at the start of the step (parameters)
    // re-simulates nearly all of it and pays for the checkpoints on top. After
    // kDeltaProbe moves, delta simulation stays only if they re-simulated under half of
    // the step on average. The step times are the same either way.
    bool use_delta = true;
    double delta_share = 0;
    std::int64_t delta_moves = 0;
    auto rebase = [&] {
      if (!use_delta) return;
      (void)env.simulator().simulate_delta(current);
      env.keep_as_base();
    };
    rebase();
    core::Decision best = current;
    double best_cost = current_cost;
    std::int64_t since_best = 0;
    const std::int64_t budget_samples = std::max<std::int64_t>(
        1,
        limit == std::numeric_limits<std::int64_t>::max() ? per_step * 100 : limit - first_sample);
    const std::int64_t restart_after = options_.restart_after > 0
                                           ? options_.restart_after
                                           : std::max<std::int64_t>(1, budget_samples / 10);
    const double t0 = options_.initial_temperature;
    const double t1 = options_.final_temperature;  // at most t0 (the registry's rule)
    while (!out_of_budget()) {
      const double progress = std::min(1.0, static_cast<double>(env.samples() - first_sample) /
                                                static_cast<double>(budget_samples));
      const double temperature = t0 > 0 ? t0 * std::pow(t1 / t0, progress) : 0.0;
      core::Decision candidate = current;
      move(candidate, problem, rng);
      order(candidate, problem);
      const Evaluation e = use_delta ? env.evaluate_delta(candidate) : env.evaluate(candidate);
      if (use_delta) {
        delta_share += env.simulator().last_delta_share();
        if (++delta_moves == kDeltaProbe) use_delta = delta_share / kDeltaProbe < 0.5;
      }
      record(e, env.samples());
      const double cost = cost_of(e);
      const double delta = (cost - current_cost) / std::max(current_cost, 1e-30);
      if (delta <= 0 || (temperature > 0 && rng.uniform() < std::exp(-delta / temperature))) {
        current = std::move(candidate);
        current_cost = cost;
        if (use_delta) env.keep_as_base();
      }
      if (current_cost < best_cost) {
        best = current;
        best_cost = current_cost;
        since_best = 0;
      } else if (++since_best >= restart_after) {
        current = best;
        current_cost = best_cost;
        since_best = 0;
        rebase();
      }
    }
    // The best decision that fits (the environment saw every evaluation, the starts
    // included), else the least bad one.
    best_ = std::isfinite(env.best_step_time_s()) ? env.best_decision() : best;
    trained_graph_ = &g;
    devices_ = problem.num_devices();
  }

 private:
  // The decision fields the search changes: a placement always (every op on device 0 when
  // the start has none), priorities and fusion levels when searched.
  void complete(core::Decision& d, const core::CompiledGraph& g) const {
    const auto n = static_cast<std::size_t>(g.num_nodes());
    if (!d.placement) d.placement = std::vector<DeviceId>(n, 0);
    if (options_.search_priority && !d.priority) d.priority = std::vector<std::int32_t>(n, 0);
    if (options_.search_fusion && !d.fusion) d.fusion = std::vector<std::int32_t>(n, 0);
    // A part it does not search is not its to decide: a placement search that started from
    // HEFT's decision would otherwise keep HEFT's schedule against placement-only agents.
    if (!options_.search_priority) d.priority.reset();
    if (!options_.search_fusion) d.fusion.reset();
  }

  // With critical_path_order, the priorities of `d`'s placement (after every move).
  void order(core::Decision& d, const Problem& problem) const {
    if (options_.critical_path_order && !options_.search_priority) {
      d.priority = critical_path_priorities(problem, *d.placement);
    }
  }

  // Colocation groups, layers and scope units as lists of ops, for whole-unit moves.
  void index_units(const core::CompiledGraph& g) {
    groups_.clear();
    layers_.clear();
    scopes_.clear();
    if (options_.scope_moves) scopes_ = scope_units(g);
    std::map<std::int32_t, std::vector<NodeId>> groups;
    std::map<std::int32_t, std::vector<NodeId>> layers;
    for (NodeId v = 0; v < g.num_nodes(); ++v) {
      const auto i = static_cast<std::size_t>(v);
      if (g.colocation()[i] >= 0) groups[g.colocation()[i]].push_back(v);
      if (g.layer()[i] >= 0) layers[g.layer()[i]].push_back(v);
    }
    for (auto& [id, ops] : groups) groups_.push_back(std::move(ops));
    for (auto& [id, ops] : layers) layers_.push_back(std::move(ops));
  }

  // One random move on `d`: which task (placement, priority, fusion) uniformly among the
  // searched ones; a placement move takes a colocation group, a layer, a scope unit or a
  // block of consecutive ops to another device.
  void move(core::Decision& d, const Problem& problem, core::Rng& rng) const {
    const core::CompiledGraph& g = problem.graph;
    const auto& order = g.topological_order();
    const auto n = static_cast<std::int64_t>(order.size());
    std::vector<int> tasks;
    if (options_.search_placement && problem.num_devices() > 1) tasks.push_back(0);
    if (options_.search_priority) tasks.push_back(1);
    if (options_.search_fusion) tasks.push_back(2);
    if (tasks.empty() || n == 0) return;
    const int task = tasks[static_cast<std::size_t>(
        rng.uniform_int(0, static_cast<std::int64_t>(tasks.size()) - 1))];
    // A block of consecutive ops in topological order.
    auto block = [&] {
      const std::int64_t length =
          rng.uniform_int(1, std::max<std::int64_t>(1, std::min(n, options_.max_block)));
      const std::int64_t first = rng.uniform_int(0, n - length);
      return std::vector<NodeId>(order.begin() + first, order.begin() + first + length);
    };
    if (task == 0) {
      std::vector<int> kinds = {2};
      if (!groups_.empty()) kinds.push_back(0);
      if (!layers_.empty()) kinds.push_back(1);
      if (!scopes_.empty()) kinds.push_back(3);
      const int kind = kinds[static_cast<std::size_t>(
          rng.uniform_int(0, static_cast<std::int64_t>(kinds.size()) - 1))];
      std::vector<NodeId> ops;
      if (kind == 0) {
        ops = groups_[static_cast<std::size_t>(
            rng.uniform_int(0, static_cast<std::int64_t>(groups_.size()) - 1))];
      } else if (kind == 1) {
        ops = layers_[static_cast<std::size_t>(
            rng.uniform_int(0, static_cast<std::int64_t>(layers_.size()) - 1))];
      } else if (kind == 3) {
        ops = scopes_[static_cast<std::size_t>(
            rng.uniform_int(0, static_cast<std::int64_t>(scopes_.size()) - 1))];
      } else {
        ops = block();
      }
      auto& placement = *d.placement;
      const DeviceId from = placement[static_cast<std::size_t>(ops.front())];
      // Another device than the first op's (uniformly among the others).
      auto to = static_cast<DeviceId>(rng.uniform_int(0, problem.num_devices() - 2));
      if (to >= from) ++to;
      for (NodeId v : ops) placement[static_cast<std::size_t>(v)] = to;
      apply_colocation(g, placement);
    } else if (task == 1) {
      const auto level = static_cast<std::int32_t>(rng.uniform_int(0, kPriorityLevels - 1));
      for (NodeId v : block()) (*d.priority)[static_cast<std::size_t>(v)] = level;
    } else {
      const bool on = rng.uniform() < 0.5;
      for (NodeId v : block()) (*d.fusion)[static_cast<std::size_t>(v)] = on ? fusion_on(g, v) : 0;
    }
  }

  AnnealingOptions options_;
  std::vector<std::vector<NodeId>> groups_;
  std::vector<std::vector<NodeId>> layers_;
  std::vector<std::vector<NodeId>> scopes_;
  core::Decision best_;
  const core::CompiledGraph* trained_graph_ = nullptr;
  DeviceId devices_ = 0;
};

}  // namespace

std::unique_ptr<Agent> make_annealing_agent(const AnnealingOptions& options) {
  return std::make_unique<AnnealingAgent>(options);
}

void register_annealing(AgentRegistry& registry) {
  using A = AnnealingOptions;
  // The agents a search may start from: those registered before it that neither learn nor
  // read a file another agent writes (register_builtin_agents registers it last).
  std::vector<std::string> starts;
  for (const auto& info : registry.agents()) {
    if (!info.learner && info.artifacts.consumes.empty()) starts.push_back(info.name);
  }
  OptionSpec tasks{"tasks", OptionType::kList, "",
                   "comma-separated decision parts searched: placement, scheduling, fusion"};
  tasks.choices = {"placement", "scheduling", "fusion"};
  const auto fields =
      OptionFields<A>()
          .names("starts", &A::starts,
                 "comma-separated agents whose decisions are the candidate starts (each costs "
                 "one sample)",
                 starts)
          .custom(
              std::move(tasks),
              [](A& a) {
                std::vector<std::string> parts;
                if (a.search_placement) parts.emplace_back("placement");
                if (a.search_priority) parts.emplace_back("scheduling");
                if (a.search_fusion) parts.emplace_back("fusion");
                return core::join(parts, ",");
              },
              [](const AgentOptions& given, A& a) {
                const auto parts = given.get_list("tasks");
                auto has = [&](const char* part) {
                  return std::find(parts.begin(), parts.end(), part) != parts.end();
                };
                a.search_placement = has("placement");
                a.search_priority = has("scheduling");
                a.search_fusion = has("fusion");
              })
          .integer("samples_per_step", &A::samples_per_step,
                   "samples per learning-curve step; default: GO's samples per PPO update, so "
                   "equal budget.steps is equal samples",
                   1, 4096)
          .number("initial_temperature", &A::initial_temperature,
                  "relative step-time increase accepted with probability 1/e at the start", 0, 100)
          .number("final_temperature", &A::final_temperature,
                  "the same at the end of the budget (geometric cooling; at most "
                  "initial_temperature)",
                  0, 100)
          .integer("max_block", &A::max_block, "most consecutive ops one block move takes", 1, 1e6)
          .flag("scope_moves", &A::scope_moves,
                "placement moves also take whole scope units (a layer of one scope, the "
                "attention, the softmax)")
          .integer("restart_after", &A::restart_after,
                   "samples without a new best before returning to the best (0: a tenth of the "
                   "budget)",
                   0, 1e9)
          .number("oom_factor", &A::oom_factor,
                  "an out-of-memory decision costs its step time times this", 1, 1e6)
          .choice("order", &A::critical_path_order,
                  "order of ready ops without the scheduling task: executor (topological rank, "
                  "TensorFlow's) or critical_path (critical-path list scheduling on each "
                  "placement it simulates, which its decision then carries)",
                  kOrderChoices)
          .seed(&A::seed)
          .rule("order",
                [](const A& a) -> std::string {
                  if (!a.critical_path_order || !a.search_priority) return "";
                  return "the scheduling task decides priorities itself (expected executor)";
                })
          .rule("final_temperature", [](const A& a) -> std::string {
            if (a.final_temperature <= a.initial_temperature) return "";
            return "expected at most initial_temperature (" +
                   option_number_text(a.initial_temperature) + ")";
          });
  registry.add(describe_agent(
      "annealing",
      "Equal-budget search reference: simulated annealing (Kirkpatrick et al., Science 1983) "
      "from the best baseline decision, as FlexFlow's MCMC search (Jia et al., SysML 2019)",
      true, fields, AnnealingOptions(), make_annealing_agent));
}

}  // namespace gopt::agents::search
