// The plan of a `gopt run`, built before anything runs: every job of a config, the
// artifacts the jobs pass to one another (a pretrained policy) and which job waits for
// which. Agents declare what they produce and consume in the registry
// (agents::AgentArtifacts); the planner knows no agent by name. build_plan checks the
// graph (a consumer without a producer, two producers of one artifact, a cycle) and
// print_plan shows it (`gopt run --dry-run`); the runner then executes it
// (experiments/run/runner.h).
//
//   agents::AgentRegistry registry;
//   agents::register_builtin_agents(registry);
//   Plan plan = build_plan(config, registry);          // InputError on a broken graph
//   print_plan(without_done(plan, sink.existing()), {}, std::cout);
#pragma once

#include <cstddef>
#include <cstdint>
#include <iosfwd>
#include <map>
#include <string>
#include <vector>

#include "experiments/config/config.h"
#include "experiments/results/result_sink.h"
#include "experiments/run/job_time_model.h"

namespace gopt::agents {
class AgentRegistry;
}  // namespace gopt::agents

namespace gopt::experiments {

/// One result row a job writes.
struct PlannedRow {
  ResultKey key;
  std::int64_t order = 0;  ///< position in config order (workload, agent, seed)
  const WorkloadConfig* workload = nullptr;
};

/// A file one job writes and others read.
struct PlannedArtifact {
  std::string kind;                    ///< agents::ArtifactSpec::kind ("pretrained_policy")
  std::string path;                    ///< where it is written and read
  std::ptrdiff_t producer = -1;        ///< the job of the plan that writes it; -1: none (a file
                                       ///< named in a consumer's options, or written by an
                                       ///< earlier run that the plan no longer repeats)
  std::vector<std::size_t> consumers;  ///< jobs of the plan that read it
};

/// One job: an agent and a seed, on one workload or, for an agent that trains on the
/// training set (agents::WorkloadScope::kTrainingSet), on every training workload at once.
struct PlannedJob {
  const AgentConfig* agent = nullptr;
  std::uint64_t seed = 0;
  bool training_set = false;     ///< trains on Plan::training, selects on Plan::validation
  bool learner = false;          ///< the registry's AgentInfo::learner
  bool transfers = false;        ///< its rows count as learned even when it does not train
                                 ///< (AgentArtifacts::transfers: it passes a policy)
  std::vector<PlannedRow> rows;  ///< the rows it writes, in config order
  /// The agent's options from the config, with each artifact's path in the option that
  /// carries it (agents::ArtifactSpec::option).
  std::map<std::string, std::string> options;
  std::vector<std::size_t> produces;  ///< artifacts, indices into Plan::artifacts
  std::vector<std::size_t> consumes;
  std::ptrdiff_t waits_for = -1;  ///< the job that writes an artifact it reads, or -1

  /// "go_pretrain (seed 1)" for a training-set job, else its row's "workload / agent / seed".
  [[nodiscard]] std::string label() const;
};

/// Jobs, artifacts and the edges between them, in execution order: a job comes after the
/// job it waits for; otherwise training-set jobs first (the longest), then config order.
struct Plan {
  const ExperimentConfig* config = nullptr;
  std::vector<PlannedJob> jobs;
  std::vector<PlannedArtifact> artifacts;
  std::vector<const WorkloadConfig*> training;    ///< neither held out nor validation
  std::vector<const WorkloadConfig*> validation;  ///< pretrain_validation
  std::int64_t total_rows = 0;                    ///< rows of the config
  std::int64_t done_rows = 0;                     ///< of them, skipped (without_done)
};

/// The plan of every job of `config`. Throws core::InputError naming the config file and
/// the agent for a consumer whose artifact no agent produces, for two jobs writing one
/// artifact, for jobs that wait for each other, and for a wait the runner cannot execute
/// (a job reading the artifacts of two jobs, or of a job that itself waits).
[[nodiscard]] Plan build_plan(const ExperimentConfig& config,
                              const agents::AgentRegistry& registry);

/// `plan` less the rows in `done` (--resume): a job with no row left is dropped, and the
/// artifacts it wrote are read from the earlier run's files.
[[nodiscard]] Plan without_done(const Plan& plan, const std::vector<ResultKey>& done);

/// What a job costs for the ETA: its graphs' ops (`ops_of` by workload label), whether it
/// learns and its update budget.
[[nodiscard]] JobCost job_cost(const Plan& plan, const PlannedJob& job,
                               const std::map<std::string, double>& ops_of);

/// Prints the plan for `gopt run --dry-run`: the jobs in execution order, what each
/// produces and consumes, its budget and, when `ops_of` has its graphs, the job time
/// model's prior estimate.
void print_plan(const Plan& plan, const std::map<std::string, double>& ops_of, std::ostream& out);

/// Where a producer writes its artifact when its option does not name a file:
/// "<output without .h5>.<agent label>.seed<seed><suffix>" beside the results file.
[[nodiscard]] std::string default_artifact_path(const ExperimentConfig& config,
                                                const AgentConfig& agent, std::uint64_t seed,
                                                const std::string& suffix);

}  // namespace gopt::experiments
