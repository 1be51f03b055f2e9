// The runner's entry points (experiments/run/runner.h): plan a config's jobs, load what they
// share (graphs, hardware, cost model), then hand the plan to its workers. The parts, in
// experiments/run/: plan.h (the plan), job_workers.h (workers, waits, sinks), job.h (one
// job), assignment.h (which jobs this process runs), team/ (runs shared by ranks),
// progress.h (what a run shows).
#include "experiments/run/runner.h"

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <map>
#include <ostream>
#include <set>

#include "agents/registry.h"
#include "core/compiled_graph.h"
#include "core/rng.h"
#include "core/strings.h"
#include "datasets/workload_registry.h"
#include "experiments/run/job.h"
#include "experiments/run/job_workers.h"
#include "experiments/run/measure.h"
#include "experiments/run/plan.h"
#include "experiments/run/progress.h"
#include "experiments/run/team/team.h"
#include "hardware/cost_model.h"
#include "hardware/profile.h"

namespace gopt::experiments {
namespace {

using runner::Clock;

// "gopt: resuming ..." and "gopt: N unfinished job(s) continue ..." for a resumed run.
void say_what_resumes(const Plan& plan, const RunnerOptions& options) {
  if (!options.progress) return;
  if (plan.done_rows > 0) {
    *options.progress << "gopt: resuming: " << plan.done_rows << " of " << plan.total_rows
                      << " results are already in the file\n"
                      << std::flush;
  }
  if (options.snapshot_dir.empty()) return;
  std::set<std::string> snapshots;
  for (const auto& job : plan.jobs)
    snapshots.insert(runner::job_snapshots(options, plan, job).path);
  std::error_code ec;
  const auto found = std::count_if(snapshots.begin(), snapshots.end(), [&](const std::string& f) {
    return std::filesystem::exists(f, ec);
  });
  if (found > 0) {
    *options.progress << "gopt: " << found << " unfinished job(s) continue from their training "
                      << "snapshots in " << options.snapshot_dir << "\n"
                      << std::flush;
  }
}

// Compiles the graphs the plan's jobs run on (a training-set job: the training and
// validation graphs).
void load_graphs(const Plan& plan, std::map<std::string, core::CompiledGraph>& graphs) {
  const bool sets = std::any_of(plan.jobs.begin(), plan.jobs.end(),
                                [](const PlannedJob& j) { return j.training_set; });
  datasets::WorkloadRegistry workloads;
  datasets::register_builtin_workloads(workloads);
  for (const auto& w : plan.config->workloads) {
    const bool needed = (sets && !w.held_out) ||
                        std::any_of(plan.jobs.begin(), plan.jobs.end(), [&](const auto& j) {
                          return !j.training_set && j.rows.front().workload == &w;
                        });
    if (!needed) continue;
    graphs.emplace(w.name, compile_workload(w, workloads));
  }
}

// The labels of the agents with `reward: measured` that have jobs in `plan`.
std::vector<std::string> measured_reward_agents(const Plan& plan) {
  std::vector<std::string> names;
  for (const auto& job : plan.jobs) {
    if (job.agent->reward == "measured" &&
        std::find(names.begin(), names.end(), job.agent->name) == names.end()) {
      names.push_back(job.agent->name);
    }
  }
  return names;
}

// The backend and graphs that time measured rewards (experiments/run/measured_reward.h):
// refused, before any job runs, where the config's hardware is not a measured profile of
// this machine or the run is shared by processes (which would execute at once).
void prepare_measured_rewards(const Plan& plan, const RunnerOptions& options,
                              const std::vector<std::string>& agents, runner::JobContext& context) {
  const ExperimentConfig& config = *plan.config;
  const std::string field = "agents." + agents.front() + ".reward";
  if (options.team != nullptr || options.learners != nullptr) {
    throw core::InputError(config.source, field,
                           "measured rewards execute every sample on this machine, one job at "
                           "a time: run the config in one process, without torchrun");
  }
  check_measured_rewards(config, config.source);
  const auto kind =
      hardware::backend::backend_kind_from_string(backend_of(context.cluster), "hardware");
  context.backend = hardware::backend::make_backend(kind, context.cluster.num_devices());
  datasets::WorkloadRegistry workloads;
  datasets::register_builtin_workloads(workloads);
  for (const auto& job : plan.jobs) {
    if (job.agent->reward != "measured") continue;
    std::vector<const WorkloadConfig*> needed;
    if (job.training_set) {
      needed.insert(needed.end(), plan.training.begin(), plan.training.end());
      needed.insert(needed.end(), plan.validation.begin(), plan.validation.end());
    } else {
      needed.push_back(job.rows.front().workload);
    }
    for (const auto* w : needed) {
      if (context.measured_graphs.count(w->name) == 0) {
        context.measured_graphs.emplace(w->name, load_workload(*w, workloads));
      }
    }
  }
}

std::map<std::string, double> ops_of(const std::map<std::string, core::CompiledGraph>& graphs) {
  std::map<std::string, double> ops;
  for (const auto& [name, graph] : graphs) ops[name] = static_cast<double>(graph.num_nodes());
  return ops;
}

}  // namespace

core::Graph load_workload(const WorkloadConfig& workload,
                          const datasets::WorkloadRegistry& registry) {
  datasets::LoadOptions load;
  load.overrides = workload.overrides;
  load.onnx_batch = workload.onnx_batch;
  load.onnx_training = workload.onnx_training;
  return datasets::load_graph(workload.graph, registry, load);
}

core::CompiledGraph compile_workload(const WorkloadConfig& workload,
                                     const datasets::WorkloadRegistry& registry) {
  return core::CompiledGraph::compile(load_workload(workload, registry));
}

std::string snapshot_dir_for(const std::string& results_file) {
  std::string stem = results_file;
  const std::string suffix = ".h5";
  if (stem.size() > suffix.size() &&
      stem.compare(stem.size() - suffix.size(), suffix.size(), suffix) == 0) {
    stem.resize(stem.size() - suffix.size());
  }
  return stem + ".snapshots";
}

std::uint64_t job_seed(std::uint64_t seed, const std::string& workload, const std::string& agent) {
  return core::mix_seed(core::mix_seed(seed, core::fnv1a(workload)), core::fnv1a(agent));
}

RunSummary run_experiment(const ExperimentConfig& config, ResultSink& sink,
                          const RunnerOptions& options) {
  const auto start = Clock::now();
  agents::AgentRegistry registry;
  agents::register_builtin_agents(registry);
  const Plan plan = without_done(build_plan(config, registry), options.done);
  RunSummary summary;
  summary.total = plan.total_rows;
  summary.already_done = plan.done_rows;
  say_what_resumes(plan, options);

  runner::JobContext context{config,
                             plan,
                             registry,
                             hardware::load_profile(config.hardware),
                             nullptr,
                             {},
                             options.metadata.provenance,
                             options.simulate_threads,
                             nullptr,
                             {}};
  context.cost = hardware::make_cost_model(context.cluster);  // calibrated for measured profiles
  load_graphs(plan, context.graphs);
  RunnerOptions run_options = options;
  const auto measuring = measured_reward_agents(plan);
  if (!measuring.empty()) {
    prepare_measured_rewards(plan, options, measuring, context);
    if (options.jobs > 1 && options.progress != nullptr) {
      *options.progress << "gopt: " << core::join(measuring)
                        << " train on measured rewards: the run takes one job at a time (not "
                        << options.jobs << "), so that executions do not share the CPUs\n"
                        << std::flush;
    }
    run_options.jobs = 1;
  }
  std::vector<runner::Progress::Item> items;
  const auto ops = ops_of(context.graphs);
  for (const auto& job : plan.jobs) {
    items.push_back({job_cost(plan, job, ops), static_cast<std::int64_t>(job.rows.size())});
  }
  // A run shared by ranks: rank 0 writes every result; the others send theirs to it.
  const bool remote = options.team != nullptr && options.team->rank() != 0;
  if (!remote) sink.begin(options.metadata);
  if (!plan.jobs.empty()) {
    runner::execute_plan(context, sink, run_options, summary, std::move(items));
  }
  summary.wall_s = std::chrono::duration<double>(Clock::now() - start).count();
  return summary;
}

Plan print_run_plan(const ExperimentConfig& config, const std::vector<ResultKey>& done,
                    std::ostream& out, std::map<std::string, double>* ops) {
  agents::AgentRegistry registry;
  agents::register_builtin_agents(registry);
  const Plan plan = without_done(build_plan(config, registry), done);
  std::map<std::string, core::CompiledGraph> graphs;
  load_graphs(plan, graphs);
  print_plan(plan, ops_of(graphs), out);
  if (ops != nullptr) *ops = ops_of(graphs);
  return plan;
}

}  // namespace gopt::experiments
