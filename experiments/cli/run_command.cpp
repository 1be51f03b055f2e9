// `gopt run CONFIG [--out FILE] [--set path.to.key=value ...] [--resume] [--overwrite]
//           [--dry-run] [--jobs N | --data-parallel] [--peer-timeout S]`: runs an experiment
// config (docs/config.md) and writes its results to HDF5 (docs/results-format.md). Started
// by torchrun (RANK, WORLD_SIZE, ... set), the ranks share the jobs and rank 0 writes
// (docs/scaling-out.md).
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdlib>
#include <ctime>
#include <filesystem>
#include <iostream>
#include <map>
#include <memory>
#include <optional>
#include <ostream>
#include <set>
#include <string>
#include <vector>

#include "agents/cpu_numerics.h"
#include "core/errors.h"
#include "core/strings.h"
#include "core/units.h"
#include "core/worker_pool.h"
#include "experiments/cli/cli.h"
#include "experiments/cli/stop_signal.h"
#include "experiments/config/config.h"
#include "experiments/results/hdf5_sink.h"
#include "experiments/results/provenance.h"
#include "experiments/results/version.h"
#include "experiments/run/measure.h"
#include "experiments/run/plan.h"
#include "experiments/run/projection.h"
#include "experiments/run/resume.h"
#include "experiments/run/runner.h"
#include "experiments/run/team/distributed.h"
#include "experiments/run/team/team.h"

namespace gopt::experiments {
namespace {

struct RunArgs {
  std::string config;
  std::string out;
  std::vector<std::string> sets;
  bool resume = false;
  /// --redo: agents (`AGENT`) or one agent on one workload (`WORKLOAD:AGENT`) whose results
  /// in the file run again
  Redo redo;
  bool overwrite = false;
  bool dry_run = false;
  int jobs = 1;
  int simulate_threads = 0;  ///< 0: this process's cores over the jobs (simulate_threads_of)
  bool data_parallel = false;
  double heartbeat_s = 30;
  double snapshot_s = 60;
  double curve_flush_s = 30;
  double peer_timeout_s = 60;
  std::string costs;     ///< --dry-run: project the run from this results file's job costs
  int ranks = 1;         ///< --dry-run --costs: processes the projection shares the run among
  bool measure = false;  ///< --measure: `gopt measure` the results file when the run ends
};

// Threads per job for simulating its samples: --simulate-threads, else the cores this
// process may use shared among its --jobs and the other processes torchrun started on this
// machine (LOCAL_WORLD_SIZE), at least 1.
int simulate_threads_of(const RunArgs& args) {
  if (args.simulate_threads > 0) return args.simulate_threads;
  int processes = 1;
  if (const char* local = std::getenv("LOCAL_WORLD_SIZE")) {
    processes = std::max(1, std::atoi(local));
  }
  return std::max(1, core::usable_cores() / (std::max(1, args.jobs) * processes));
}

// A rank other than 0 writes nothing itself: its results go to rank 0 (RunnerOptions::team).
class DiscardSink final : public ResultSink {
 public:
  void begin(const RunMetadata& /*metadata*/) override {}
  void write(const RunResult& /*result*/) override {}
};

int run_remote_rank(const RunArgs& args, const ExperimentConfig& config,
                    const std::string& cpu_numerics, StoreRunTeam& team,
                    agents::LearnerGroup* learners, CliContext& ctx);
int run_writer(const RunArgs& args, ExperimentConfig& config, const std::string& out,
               const std::string& cpu_numerics, StoreRunTeam* team, LaunchLearners* learners,
               CliContext& ctx);

// `--dry-run`: the plan of the jobs a run would run (with --resume: those not yet in the
// results file), and nothing else; no file is opened for writing.
int print_plan_only(const RunArgs& args, const ExperimentConfig& config, const std::string& out,
                    CliContext& ctx) {
  std::vector<ResultKey> done;
  std::set<ResultKey> redone;
  std::error_code ec;
  if (args.resume && out != "-" && std::filesystem::exists(out, ec)) {
    const ResultsFile file = read_results_file(out);
    for (const auto& r : file.results) done.push_back(r.key);
    redone = args.redo.done_already(config, file.results);
  }
  done = args.redo.kept(std::move(done), redone);
  std::map<std::string, double> ops;
  const Plan plan = print_run_plan(config, done, ctx.out, &ops);
  if (!args.costs.empty()) {
    const auto workers = static_cast<std::size_t>(args.jobs) * static_cast<std::size_t>(args.ranks);
    print_projection(
        plan, project_run(plan, read_results_file(args.costs).results, workers, args.costs, ops),
        ctx.out);
  }
  ctx.out << "dry run: nothing was run and no file was written\n";
  return kExitOk;
}

int run_experiment_command(const RunArgs& args, CliContext& ctx) {
  if (args.resume && args.overwrite) {
    ctx.err << "gopt: error: --resume and --overwrite exclude each other\n";
    return kExitUsage;
  }
  ExperimentConfig config = load_config(args.config, ConfigLoadOptions().with_overrides(args.sets));
  const std::string out = args.out.empty() ? config.output : args.out;
  // Checkpoints (go_pretrain) are written beside the results file actually used.
  if (out != "-") config.output = out;
  args.redo.check(config, args.config);

  if (args.dry_run) return print_plan_only(args, config, out, ctx);

  // `--out -`: no file, one line per result on stdout (a dry look at a config).
  const bool console_only = out == "-";
  if (console_only && args.resume) {
    ctx.err << "gopt: error: --resume needs a results file, not --out -\n";
    return kExitUsage;
  }
  if (console_only && args.measure) {
    ctx.err << "gopt: error: --measure needs a results file, not --out -\n";
    return kExitUsage;
  }
  // Refused before anything runs: a run of hours is not to end in "cannot be measured".
  if (args.measure) check_measurable(config, args.config);
  check_measured_rewards(config, args.config);
  // Read before any file is opened: a bad GOPT_CPU_KERNEL must leave an existing file alone.
  const std::string cpu_numerics = agents::cpu_numerics_description();

  // Started by torchrun (or with its variables): join the other ranks before anything else;
  // without them, or with WORLD_SIZE=1, the run is this process's alone.
  const auto launch = read_launch_environment(process_environment());
  if (args.measure && launch && launch->world_size > 1) {
    ctx.err << "gopt: error: --measure measures on one machine; under torchrun, run `gopt "
               "measure RESULTS.h5` on it after the run\n";
    return kExitUsage;
  }
  std::unique_ptr<Distributed> peers;
  std::unique_ptr<StoreRunTeam> team;
  if (launch && launch->world_size > 1) {
    // Stale snapshots go before any rank can start a job: joining waits for every rank.
    if (!console_only && !args.resume) remove_snapshots(snapshot_dir_for(out));
    peers = std::make_unique<Distributed>(*launch,
                                          DistributedOptions().with_timeout_s(args.peer_timeout_s));
    team = std::make_unique<StoreRunTeam>(*peers);
    // Every rank must deal the same jobs: the same resolved config and results file.
    if (!peers->same_on_every_rank(core::fnv1a(config.resolved_yaml + "\n" + out))) {
      team->abort("the ranks were started with different configs, --set or --out");
      throw core::InputError(args.config, "",
                             "the ranks were started with different configs, --set or --out "
                             "(each rank must run the same gopt run command)");
    }
  }
  // --data-parallel: learners that can share their updates do so over every rank.
  std::unique_ptr<LaunchLearners> learners;
  if (peers && args.data_parallel) learners = std::make_unique<LaunchLearners>(*peers);
  const bool remote = team && team->rank() != 0;
  if (remote) return run_remote_rank(args, config, cpu_numerics, *team, learners.get(), ctx);
  try {
    return run_writer(args, config, out, cpu_numerics, team.get(), learners.get(), ctx);
  } catch (const std::exception& e) {
    if (team) team->abort(e.what());
    throw;
  }
}

// A rank other than 0: runs its share and sends every result to rank 0; quiet unless the
// run fails (rank 0 reports the jobs and the failed ones).
int run_remote_rank(const RunArgs& args, const ExperimentConfig& config,
                    const std::string& cpu_numerics, StoreRunTeam& team,
                    agents::LearnerGroup* learners, CliContext& ctx) {
  RunSummary summary;
  try {
    const RunStart start = team.share_start({});
    DiscardSink sink;
    const std::string out = args.out.empty() ? config.output : args.out;
    RunMetadata metadata;  // only its provenance is used: rank 0 writes the file's
    metadata.provenance = process_provenance(config.resolved_yaml, ctx.command_line, cpu_numerics);
    RunnerOptions options;
    options.with_jobs(args.jobs)
        .with_simulate_threads(simulate_threads_of(args))
        .with_stop(&stop_requested())
        .with_done(start.done)
        .with_metadata(metadata)
        .with_team(&team)
        .with_snapshot_dir(out == "-" ? std::string() : snapshot_dir_for(out))
        .with_snapshot_interval_s(args.snapshot_s);
    if (learners) options.with_learners(&*learners);
    // Checkpoints and snapshots are written beside the results file, on this machine too.
    std::error_code ec;
    if (out != "-") {
      const auto parent = std::filesystem::path(out).parent_path();
      if (!parent.empty()) std::filesystem::create_directories(parent, ec);
    }
    StopOnSignal stop_on_signal;
    summary = run_experiment(config, sink, options);
  } catch (const std::exception& e) {
    team.abort(e.what());
    throw;
  }
  if (!summary.team_failure.empty()) {
    ctx.err << "gopt: error: rank " << team.rank() << ": " << summary.team_failure << "\n";
    return kExitPeerFailure;
  }
  // Failed jobs are rank 0's to report (and its exit status); under torchrun a non-zero
  // status here would make the agent stop rank 0 while it still writes.
  return summary.interrupted ? kExitInterrupted : kExitOk;
}

// What a finished run says on stdout and stderr, and its exit status.
int report_run(const RunArgs& args, const ExperimentConfig& config, const std::string& out,
               const RunSummary& summary, CliContext& ctx) {
  const bool console_only = out == "-";
  ctx.out << config.name << ": " << summary.completed
          << (console_only ? " results (not saved: --out -)" : " new results written to " + out);
  if (summary.already_done > 0) ctx.out << " (" << summary.already_done << " were there)";
  ctx.out << "\n";
  std::string again = "gopt run " + shell_quote(args.config) + " --out " + shell_quote(out);
  for (const auto& s : args.sets) again += " --set " + shell_quote(s);
  again += " --resume";
  if (!summary.team_failure.empty()) {
    ctx.err << "gopt: error: " << summary.team_failure << "\n";
    if (!console_only) {
      ctx.err << "finished results are in " << out
              << "; continue with the same launch and: " << again << "\n";
    }
    return kExitPeerFailure;
  }
  if (!summary.failures.empty()) {
    ctx.err << "gopt: error: " << summary.failures.size() << " jobs failed:\n";
    for (const auto& f : summary.failures) ctx.err << "  " << f << "\n";
    if (!console_only) ctx.err << "retry them with: " << again << "\n";
    return kExitInputError;
  }
  if (summary.interrupted) {
    ctx.err << "gopt: interrupted";
    if (!console_only)
      ctx.err << "; finished results are in " << out << "; continue with: " << again;
    ctx.err << "\n";
    return kExitInterrupted;
  }
  if (!console_only) ctx.out << "tables: gopt table " << shell_quote(out) << "\n";
  return kExitOk;
}

// Rank 0, or a run alone: opens the results file and writes every result.
int run_writer(const RunArgs& args, ExperimentConfig& config, const std::string& out,
               const std::string& cpu_numerics, StoreRunTeam* team, LaunchLearners* learners,
               CliContext& ctx) {
  const bool console_only = out == "-";
  std::error_code ec;
  std::set<ResultKey> redone;
  if (args.resume && !console_only && std::filesystem::exists(out, ec)) {
    std::optional<ResultsFile> before;
    try {
      before = read_results_file(out);
    } catch (const core::Error&) {
      // Without --redo, a file that does not read is the sink's to refuse, saying how to
      // recover.
      if (!args.redo.entries.empty()) throw;
    }
    if (before) {
      if (!args.redo.entries.empty()) redone = args.redo.done_already(config, before->results);
      ctx.err << cpu_path_warning(out, before->results, cpu_numerics);
    }
  }
  OpenMode mode =
      args.resume ? OpenMode::kResume : (args.overwrite ? OpenMode::kOverwrite : OpenMode::kCreate);
  const bool new_file =
      !console_only && (mode == OpenMode::kOverwrite || !std::filesystem::exists(out, ec));
  std::unique_ptr<Hdf5Sink> file;
  ConsoleSink console(ctx.out);
  if (!console_only) file = std::make_unique<Hdf5Sink>(out, Hdf5SinkOptions().with_open_mode(mode));
  const std::vector<ResultKey> done =
      file ? args.redo.kept(file->existing(), redone) : std::vector<ResultKey>{};
  if (team) team->share_start({done});
  ResultSink& sink = console_only ? static_cast<ResultSink&>(console) : *file;
  if (file && args.resume && !file->existing_config().empty() &&
      file->existing_config() != config.resolved_yaml) {
    ctx.err << "gopt: warning: the config differs from the one stored in " << out
            << "; keeping its finished results whose (workload, agent, seed) are still in the "
               "config; the file keeps its first config, this run's goes into its history and "
               "each new result records its config hash ("
            << config_hash(config.resolved_yaml) << ")\n";
  }

  RunMetadata metadata;
  metadata.experiment = config.name;
  metadata.table = config.table;
  metadata.config_source = config.source;
  metadata.config_yaml = config.resolved_yaml;
  metadata.start_time = utc_now();
  metadata.provenance = process_provenance(config.resolved_yaml, ctx.command_line, cpu_numerics);

  // Training snapshots of unfinished jobs live beside the results file; a run that does not
  // resume that file starts its jobs over, so older snapshots there are stale.
  std::string snapshots;
  if (!console_only) {
    snapshots = snapshot_dir_for(out);
    if (!args.resume && !team) remove_snapshots(snapshots);  // shared: before joining
  }

  const bool live = &ctx.err == &std::cerr && isatty(STDERR_FILENO) != 0;
  RunnerOptions options;
  options.with_jobs(args.jobs)
      .with_simulate_threads(simulate_threads_of(args))
      .with_progress(&ctx.err)
      .with_live_bar(live)
      .with_heartbeat_s(args.heartbeat_s)
      .with_stop(&stop_requested())
      .with_done(done)
      .with_metadata(metadata)
      .with_snapshot_dir(snapshots)
      .with_snapshot_interval_s(args.snapshot_s)
      .with_curve_flush_s(console_only ? 0 : args.curve_flush_s);
  if (team) options.with_team(&*team);
  if (learners) options.with_learners(&*learners);

  RunSummary summary;
  try {
    StopOnSignal stop_on_signal;
    summary = run_experiment(config, sink, options);
  } catch (...) {
    // A run that failed before finishing any result (a workload or profile that does not
    // load) leaves no empty file behind, so that rerunning needs no --overwrite.
    if (new_file) {
      file->close();
      try {
        if (read_results_file(out).results.empty()) std::filesystem::remove(out, ec);
      } catch (const core::Error&) {
        // keep whatever is there
      }
    }
    throw;
  }
  if (file) file->close();
  if (learners != nullptr && learners->exchanges() > 0) {
    ctx.err << "gopt: data parallel: rank 0 spent " << core::format_seconds(learners->exchange_s())
            << " of " << core::format_seconds(summary.wall_s) << " in " << learners->exchanges()
            << " exchanges with the other ranks (waiting for their share of the simulations "
               "included)\n";
  }
  if (!snapshots.empty()) std::filesystem::remove(snapshots, ec);  // only when empty

  const int status = report_run(args, config, out, summary, ctx);
  if (status != kExitOk || !args.measure) return status;
  return measure_results_command(out, ctx);
}

}  // namespace

void add_run_command(CLI::App& app, CliContext& context) {
  auto args = std::make_shared<RunArgs>();
  auto* cmd = app.add_subcommand(
      "run",
      "Run an experiment config (docs/config.md): every (workload, agent, seed), results to\n"
      "HDF5 as they finish (docs/results-format.md). Ctrl-C stops cleanly (exit 130);\n"
      "--resume continues.");
  cmd->add_option("config", args->config, "Experiment config (YAML)")->required();
  cmd->add_option("--out,-o", args->out,
                  "Results file (HDF5); default: the config's 'output' (results/<name>.h5); "
                  "'-': print results to stdout, save nothing");
  cmd->add_option("--set", args->sets,
                  "Override a config field: path.to.key=value (value in YAML; lists are "
                  "indexed by position or entry name, e.g. agents.hdp.budget.steps=20)")
      ->allow_extra_args(false);
  auto* resume = cmd->add_flag("--resume", args->resume,
                               "Continue an existing results file: skip the results it already "
                               "holds and continue unfinished jobs from their training snapshots");
  cmd->add_option("--redo", args->redo.entries,
                  "With --resume: run these agents (names in the config) again on every "
                  "workload and seed, or WORKLOAD:AGENT on that workload only, for example a "
                  "baseline fixed since; each new result replaces the file's when it is "
                  "written, so an interrupted redo loses nothing")
      ->needs(resume)
      ->allow_extra_args(false);
  cmd->add_flag("--overwrite", args->overwrite, "Replace an existing results file");
  auto* dry_run = cmd->add_flag(
      "--dry-run", args->dry_run,
      "Print the plan (jobs in the order they are taken, the artifacts they write and "
      "read, budgets, estimated times) after checking it, and run nothing");
  cmd->add_option("--costs", args->costs,
                  "With --dry-run: project the run's time from the job costs measured in this "
                  "results file (an earlier run of the same workloads and agents, any budget), "
                  "on --jobs x --ranks workers")
      ->check(CLI::ExistingFile)
      ->needs(dry_run);
  cmd->add_option("--ranks", args->ranks,
                  "With --dry-run --costs: processes (for example machines under torchrun) the "
                  "projected run is shared among, each running --jobs jobs")
      ->check(positive_number())
      ->capture_default_str()
      ->needs(dry_run);
  cmd->add_flag("--measure", args->measure,
                "When the run ends, execute every result's decision on this machine's backend\n"
                "(`gopt measure RESULTS.h5`); the config's hardware must be a measured\n"
                "profile of this machine, which is checked before the run")
      ->excludes(dry_run);
  auto* jobs = cmd->add_option("--jobs,-j", args->jobs, "Jobs to run in parallel threads")
                   ->check(positive_number())
                   ->capture_default_str();
  cmd->add_option("--simulate-threads", args->simulate_threads,
                  "Threads each job simulates its batches of samples on (results do not depend "
                  "on it); default: the cores this process may use over --jobs (and over "
                  "torchrun's processes on the machine)")
      ->check(positive_number());
  cmd->add_flag("--data-parallel", args->data_parallel,
                "Under torchrun (docs/scaling-out.md): the learners that can (GO, HDP) run each "
                "job on every rank together, splitting every update's simulations, before the "
                "other jobs, which are dealt to ranks as without it; each rank runs one job at "
                "a time. Default: every job runs whole on one rank")
      ->excludes(jobs);
  cmd->add_option("--snapshot-every", args->snapshot_s,
                  "Seconds between training snapshots of a running job (in <results>.snapshots/, "
                  "removed when the job finishes): --resume continues an interrupted job from "
                  "its last one")
      ->check(positive_number())
      ->capture_default_str();
  cmd->add_option("--curve-every", args->curve_flush_s,
                  "Seconds between writes of a training job's learning curve so far to the "
                  "results file, where `gopt table` and the notebooks show it as running; "
                  "0: only with the finished result")
      ->check(non_negative_number())
      ->capture_default_str();
  cmd->add_option("--peer-timeout", args->peer_timeout_s,
                  "Under torchrun (docs/scaling-out.md): seconds to reach the store and for every "
                  "rank to join, and the silence after which a rank counts as dead")
      ->check(positive_number())
      ->capture_default_str();
  cmd->add_option("--heartbeat", args->heartbeat_s,
                  "Without a terminal: print a status line when nothing finished for this many "
                  "seconds")
      ->check(positive_number())
      ->capture_default_str();
  cmd->callback([&context, args] {
    context.action = [&context, args] { return run_experiment_command(*args, context); };
  });
}

}  // namespace gopt::experiments
