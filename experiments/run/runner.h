// The experiment runner: executes the plan of a config (experiments/run/plan.h), every
// (workload, agent, seed) as a job, in plan order (or in parallel threads, or shared by
// ranks), each finished result handed to a ResultSink at once. Jobs share only read-only
// data (compiled graphs, the cluster, the cost model); each has its own Agent, Environment
// and Simulator, and its randomness comes from (seed, workload, agent) alone, so --jobs
// never changes a number.
//
//   Hdf5Sink sink(config.output, Hdf5SinkOptions().with_open_mode(OpenMode::kResume));
//   RunSummary s = run_experiment(config, sink,
//                                 RunnerOptions().with_jobs(2).with_done(sink.existing()));
#pragma once

#include <atomic>
#include <cstdint>
#include <iosfwd>
#include <map>
#include <string>
#include <vector>

#include "agents/learner_group.h"
#include "core/compiled_graph.h"
#include "core/graph.h"
#include "core/options.h"
#include "experiments/config/config.h"
#include "experiments/results/result_sink.h"
#include "experiments/run/plan.h"

namespace gopt::experiments {

class RunTeam;

/// How to run. Defaults: one job at a time, no progress display, never interrupted.
struct RunnerOptions {
  GOPT_OPTION(int, jobs, 1)  ///< jobs run at once, each in its own thread
  /// Threads each job simulates a batch of samples on (agents::Environment::set_threads);
  /// results do not depend on it. `gopt run` gives each job its share of the cores.
  GOPT_OPTION(int, simulate_threads, 1)
  GOPT_OPTION(std::ostream*, progress,
              nullptr)                  ///< progress and skip messages (stderr); null: none
  GOPT_OPTION(bool, live_bar, false)    ///< redraw one bar line (a terminal) instead of lines
  GOPT_OPTION(double, heartbeat_s, 30)  ///< plain mode: a status line when nothing finished
                                        ///< for this many seconds
  GOPT_OPTION(const std::atomic<bool>*, stop,
              nullptr)                           ///< set (by a SIGINT handler) to stop cleanly
  GOPT_OPTION(std::vector<ResultKey>, done, {})  ///< results that exist already (--resume): skipped
  GOPT_OPTION(RunMetadata, metadata, {})         ///< handed to the sink's begin()
  /// Folder of the training snapshots of unfinished jobs ("": none), one file per job,
  /// removed when its result is written: a stopped run resumes its jobs mid-training
  /// (agents::TrainSnapshots; learners without snapshot support start their job over).
  GOPT_OPTION(std::string, snapshot_dir, {})
  GOPT_OPTION(double, snapshot_interval_s, 60)  ///< wall-clock seconds between a job's snapshots
  /// Learners' curves reach the sink while they train (ResultSink::update_running) at most
  /// this many wall-clock seconds apart, and at least 20 times the last flush's own time
  /// apart (so flushing takes at most 5% of a job); 0: only with the finished result.
  GOPT_OPTION(double, curve_flush_s, 30)
  /// The other ranks of a run shared by several processes (experiments/run/team/team.h); null:
  /// this process runs every job. Shared, each rank runs the items plan_ranks deals it;
  /// rank 0 writes every result to its sink and shows the progress of the whole run, the
  /// others send theirs to it (their sink and progress stream are not used).
  GOPT_OPTION(RunTeam*, team, nullptr)
  /// Data parallelism (`--data-parallel`, with a team): the jobs of learners whose registry
  /// entry says `data_parallel` run on every rank together, in plan order before the
  /// others, each update shared through this group (agents/learner_group.h); the other
  /// jobs are dealt as without it. Null: every job runs whole on one rank.
  GOPT_OPTION(agents::LearnerGroup*, learners, nullptr)
};

/// What a run did.
struct RunSummary {
  std::int64_t total = 0;             ///< jobs in the config
  std::int64_t already_done = 0;      ///< skipped because the sink had them (--resume)
  std::int64_t completed = 0;         ///< written to the sink by this run
  std::vector<std::string> failures;  ///< "workload / agent / seed N: message"
  bool interrupted = false;           ///< the stop flag was set before every job finished
  /// Why a run shared by ranks stopped early: a rank that stopped answering or failed
  /// ("rank 1 stopped answering: ..."); "" when it did not.
  std::string team_failure;
  double wall_s = 0;
};

/// The seed an agent sees for one job: mixes the experiment seed with the workload and
/// agent labels (FNV-1a of each, through core::mix_seed), independent of job order.
[[nodiscard]] std::uint64_t job_seed(std::uint64_t seed, const std::string& workload,
                                     const std::string& agent);

/// Where `gopt run` keeps the training snapshots of a results file's unfinished jobs:
/// "results/x.h5" -> "results/x.snapshots".
[[nodiscard]] std::string snapshot_dir_for(const std::string& results_file);

/// The graph of a config's workload (a suite graph with its `set:` overrides, a graph file
/// or an ONNX model). Throws as datasets::load_graph.
[[nodiscard]] core::Graph load_workload(const WorkloadConfig& workload,
                                        const datasets::WorkloadRegistry& registry);

/// load_workload's graph, compiled.
[[nodiscard]] core::CompiledGraph compile_workload(const WorkloadConfig& workload,
                                                   const datasets::WorkloadRegistry& registry);

/// Runs every job of `config` not in `options.done`, writing each result to `sink` as it
/// finishes: builds the plan of the jobs and the artifacts they pass (experiments/run/plan.h),
/// then executes it. Throws InputError, before any job runs, for a plan that does not hold
/// (build_plan) and when a workload or the hardware profile cannot be loaded. A failing job
/// is recorded in RunSummary::failures and the others go on.
RunSummary run_experiment(const ExperimentConfig& config, ResultSink& sink,
                          const RunnerOptions& options = {});

/// `gopt run --dry-run`: prints the plan of `config`'s jobs not in `done` (print_plan, with
/// time estimates from the graphs' op counts), runs nothing and returns the plan (for
/// `--costs`'s projection); the op count of each graph it loaded goes to `ops` when
/// given. Throws as run_experiment before its first job.
Plan print_run_plan(const ExperimentConfig& config, const std::vector<ResultKey>& done,
                    std::ostream& out, std::map<std::string, double>* ops = nullptr);

}  // namespace gopt::experiments
