// Running one planned job and its training snapshots (experiments/run/job.h).
#include "experiments/run/job.h"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <filesystem>
#include <sstream>

#include "agents/environment.h"
#include "core/strings.h"
#include "core/units.h"
#include "experiments/run/measured_reward.h"
#include "simulator/lower_bounds.h"

namespace gopt::experiments::runner {
namespace {

using Clock = std::chrono::steady_clock;

// Every option of agent `type`: `used` (what it was created with) over the defaults, so a
// results file says what ran even after a default changes.
std::map<std::string, std::string> resolved_options(
    const JobContext& context, const std::string& type,
    const std::map<std::string, std::string>& used) {
  std::map<std::string, std::string> all;
  for (const auto& spec : context.registry.info(type).options) all[spec.name] = spec.default_value;
  for (const auto& [key, value] : used) all[key] = value;
  return all;
}

// What the simulation of the proposed decision says: step time, OOM, bounds, traffic and
// per-device figures.
void record_evaluation(const JobContext& context, agents::Environment& env,
                       const agents::Evaluation& evaluation, RunResult& r) {
  const core::CompiledGraph& graph = env.problem().graph;
  const auto& sim = env.last_result();
  r.best_step_time_s = evaluation.step_time_s;
  r.oom = evaluation.oom;
  r.oom_device = evaluation.oom_device;
  r.lower_bound_critical_path_s = sim.lower_bound_critical_path_s;
  r.lower_bound_work_s = sim.lower_bound_work_s;
  r.lower_bound_s = simulator::compute_lower_bounds(graph, context.cluster, *context.cost).best_s();
  r.bytes_moved = sim.bytes_moved;
  for (const auto& d : sim.devices) {
    r.device_busy_s.push_back(d.busy_s);
    r.device_peak_memory_bytes.push_back(d.peak_memory_bytes);
  }
}

// A job's measured rewards: one timer per environment it trains in, when its agent has
// `reward: measured`.
class JobRewards {
 public:
  JobRewards(const JobContext& context, const PlannedJob& job) : context_(context), job_(job) {}

  // Times `env`'s later samples on the backend (workload `workload`) when the job measures.
  void attach(agents::Environment& env, const std::string& workload) {
    if (job_.agent->reward != "measured") return;
    GOPT_ASSERT(context_.backend != nullptr, "measured rewards without a backend");
    timers_.push_back(
        std::make_unique<MeasuredReward>(*context_.backend, context_.measured_graphs.at(workload)));
    env.set_step_timer(timers_.back().get());
  }
  // Measured rewards: r's decision becomes the fastest of the agent's proposal and the
  // decisions with the fastest rewards, measured again (MeasuredReward::select), and r says
  // where its rewards came from.
  void finish(const agents::Environment& env, RunResult& r) const {
    for (const auto& t : timers_) {
      if (env.step_timer() != t.get()) continue;
      r.decision = t->select(r.decision).decision;
      r.reward = "measured";
      r.reward_executions = t->executions();
    }
  }

 private:
  const JobContext& context_;
  const PlannedJob& job_;
  std::vector<std::unique_ptr<MeasuredReward>> timers_;
};

// The result row `row` of `job` for the decision `agent` proposes after training in `env`.
// The final evaluation is simulated whatever the rewards were: the row's step time is the
// simulated one, as every row's (`gopt measure` measures it).
RunResult result_of(const JobContext& context, const PlannedJob& job, const PlannedRow& row,
                    agents::Agent& agent, agents::Environment& env, Clock::time_point start,
                    const JobRewards& rewards) {
  const core::CompiledGraph& graph = env.problem().graph;
  RunResult r;
  r.key = row.key;
  r.order = row.order;
  r.agent_type = job.agent->type;
  r.held_out = row.workload->held_out;
  r.graph = row.workload->graph;
  r.hardware = context.cluster.name();
  r.problem_seed = env.problem().seed;
  r.num_nodes = graph.num_nodes();
  r.num_devices = context.cluster.num_devices();
  r.options = job.agent->options;
  r.resolved_options = resolved_options(context, job.agent->type, job.options);
  r.provenance = context.provenance;
  if (job.learner) r.budget = job.agent->budget;
  // A learned agent: one that trains, or one that applies a policy trained elsewhere.
  r.learner = agent.is_learner() || job.transfers;
  r.decision = agent.propose(env.problem());
  rewards.finish(env, r);
  env.set_step_timer(nullptr);
  record_evaluation(context, env, env.evaluate(r.decision), r);
  r.samples = env.samples();
  if (r.learner) r.best_improvements = env.improvements();
  r.wall_s = std::chrono::duration<double>(Clock::now() - start).count();
  return r;
}

// What a training-set job's snapshot is of: its training graphs ("pretrain ...", the
// identity snapshots written before the plan carry).
std::string training_set_what(const Plan& plan) {
  std::string training = "pretrain";
  for (const auto* w : plan.training) training += " " + w->name;
  if (plan.validation.empty()) return training;
  std::string validation;
  for (const auto* w : plan.validation) validation += " " + w->name;
  return training + " validate" + validation;
}

}  // namespace

agents::TrainSnapshots job_snapshots(const RunnerOptions& options, const Plan& plan,
                                     const PlannedJob& job) {
  agents::TrainSnapshots s;
  if (options.snapshot_dir.empty()) return s;
  const AgentConfig& agent = *job.agent;
  const std::string what =
      job.training_set ? training_set_what(plan) : job.rows.front().workload->name;
  std::ostringstream identity;
  identity << what << " | " << agent.name << " (" << agent.type << ") | " << plan.config->hardware
           << " | seed " << job.seed << " | steps " << agent.budget.max_steps << " | samples "
           << agent.budget.max_samples << " | seconds "
           << core::number_text(agent.budget.max_seconds);  // exact: no two budgets alike
  for (const auto& [key, value] : agent.options) identity << " | " << key << "=" << value;
  if (agent.reward != "simulated") identity << " | reward " << agent.reward;
  std::string file = what + "." + agent.name + ".seed" + std::to_string(job.seed);
  for (char& c : file) {
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '.' && c != '-') c = '_';
  }
  s.path = (std::filesystem::path(options.snapshot_dir) / (file + ".pt")).string();
  s.identity = identity.str();
  s.interval_s = options.snapshot_interval_s;
  return s;
}

void remove_snapshot(const agents::TrainSnapshots& s) {
  if (s.path.empty()) return;
  std::error_code ec;
  std::filesystem::remove(s.path, ec);
  // And what a writer killed mid-write left behind (`<file>.tmp-<pid>`, go_checkpoint.cpp).
  const std::filesystem::path path(s.path);
  const std::string prefix = path.filename().string() + ".tmp-";
  const auto dir = path.has_parent_path() ? path.parent_path() : std::filesystem::path(".");
  for (const auto& entry : std::filesystem::directory_iterator(dir, ec)) {
    if (entry.path().filename().string().rfind(prefix, 0) == 0) {
      std::filesystem::remove(entry.path(), ec);
    }
  }
}

RunResult run_single(const JobContext& context, const PlannedJob& job,
                     agents::TrainingObserver& observer, const agents::TrainSnapshots& snapshots,
                     agents::LearnerGroup* learners) {
  const auto start = Clock::now();
  const PlannedRow& row = job.rows.front();
  auto agent = context.registry.create(job.agent->type, job.options, context.config.source);
  agents::Problem problem{context.graphs.at(row.workload->name), context.cluster, *context.cost,
                          job_seed(job.seed, row.key.workload, row.key.agent)};
  agents::Environment env(problem);
  env.set_threads(context.simulate_threads);
  JobRewards rewards(context, job);
  if (agent->is_learner()) {
    rewards.attach(env, row.workload->name);
    agent->set_snapshots(snapshots);
    agent->set_learner_group(learners);
    agent->train(env, job.agent->budget, &observer);
  }
  return result_of(context, job, row, *agent, env, start, rewards);
}

std::vector<RunResult> run_training_set(const JobContext& context, const PlannedJob& job,
                                        const agents::TrainSnapshots& snapshots,
                                        agents::TrainingObserver& observer,
                                        const std::vector<agents::LearningCurvePoint>& curve,
                                        std::int64_t& checkpoint_steps,
                                        agents::LearnerGroup* learners) {
  const Plan& plan = context.plan;
  const auto start = Clock::now();
  auto agent =
      context.registry.create_transferable(job.agent->type, job.options, context.config.source);
  // One environment per graph (owned), and the pointers the agent takes.
  std::vector<std::unique_ptr<agents::Environment>> owned;
  JobRewards rewards(context, job);
  auto environments_of = [&](const std::vector<const WorkloadConfig*>& workloads) {
    std::vector<agents::Environment*> pointers;
    for (const auto* w : workloads) {
      agents::Problem problem{context.graphs.at(w->name), context.cluster, *context.cost,
                              job_seed(job.seed, w->name, job.agent->name)};
      owned.push_back(std::make_unique<agents::Environment>(problem));
      owned.back()->set_threads(context.simulate_threads);
      rewards.attach(*owned.back(), w->name);
      pointers.push_back(owned.back().get());
    }
    return pointers;
  };
  const auto pointers = environments_of(plan.training);
  agent->set_snapshots(snapshots);
  agent->set_learner_group(learners);
  agent->set_validation(environments_of(plan.validation));
  agent->train_on_set(pointers, job.agent->budget, &observer);
  checkpoint_steps = agent->checkpoint_steps();
  std::vector<RunResult> results;
  for (const auto& row : job.rows) {
    const auto index = static_cast<std::size_t>(
        std::find(plan.training.begin(), plan.training.end(), row.workload) -
        plan.training.begin());
    results.push_back(result_of(context, job, row, *agent, *pointers[index], start, rewards));
    results.back().learning_curve = curve;
  }
  // One job: its rows share its wall time, the last row's.
  for (auto& r : results) r.wall_s = results.back().wall_s;
  return results;
}

std::string result_line(const RunResult& r) {
  std::string s = r.key.text() + ": step time " + core::format_seconds(r.best_step_time_s);
  if (r.oom) s += " [OOM]";
  s += " (simulated), " + core::format_seconds(r.wall_s) + " wall";
  if (r.reward == "measured") {
    s += ", trained on " + std::to_string(r.reward_executions) + " measured decisions";
  }
  return s;
}

}  // namespace gopt::experiments::runner
