// `gopt measure RESULTS.h5 [--profile MEASURED.yaml] [--backend cpu|cuda] [--rounds R]
//               [--warmup W] [--steps S] [--unpinned] [--remeasure]`:
// executes the decision of every (workload, agent, seed) of a results file whose hardware is
// a measured profile of this machine on the real backend and writes its measured step time
// beside the simulated one (experiments/run/measure.h; schema: docs/results-format.md,
// "/measured"). `gopt table` then prints the measured table.
#include <CLI/CLI.hpp>
#include <memory>
#include <ostream>
#include <string>

#include "experiments/cli/cli.h"
#include "experiments/cli/stop_signal.h"
#include "experiments/run/measure.h"

namespace gopt::experiments {
namespace {

struct MeasureArgs {
  std::string results;
  MeasureOptions options;
};

int run_measure(const MeasureArgs& args, CliContext& ctx) {
  MeasureOptions options = args.options;
  options.with_command(ctx.command_line).with_progress(&ctx.err).with_stop(&stop_requested());
  MeasureSummary s;
  {
    StopOnSignal stop_on_signal;
    s = measure_results(args.results, options);
  }
  ctx.err << "gopt measure: " << args.results << ": " << s.measured << " results measured ("
          << s.executions << " distinct decisions on " << s.workloads << " workloads, "
          << static_cast<long long>(s.wall_s) << " s)";
  if (s.kept > 0) ctx.err << "; " << s.kept << " measured earlier kept (--remeasure redoes them)";
  ctx.err << "\n";
  if (s.interrupted) {
    ctx.err << "gopt measure: interrupted; the workload in progress was not written: run the "
               "same command again to continue\n";
    return kExitInterrupted;
  }
  ctx.out << "gopt table " << args.results << " --table measured   # measured beside simulated\n";
  return kExitOk;
}

}  // namespace

int measure_results_command(const std::string& results, CliContext& context) {
  MeasureArgs args;
  args.results = results;
  return run_measure(args, context);
}

void add_measure_command(CLI::App& app, CliContext& context) {
  auto args = std::make_shared<MeasureArgs>();
  auto* cmd = app.add_subcommand(
      "measure",
      "Execute the decision of every result of a results file on this machine's real backend\n"
      "and write the measured step time beside the simulated one (resumable)");
  cmd->add_option("results", args->results, "Results file (from gopt run on a measured profile)")
      ->required();
  cmd->add_option("--profile", args->options.profile,
                  "Measured profile of this machine (gopt calibrate); must be the file's\n"
                  "hardware (default: the file's hardware, as its config names it)");
  cmd->add_option("--backend", args->options.backend,
                  "Execution backend: cpu or cuda (default: the profile's kind)");
  cmd->add_option("--rounds", args->options.rounds,
                  "Interleaved rounds: every decision of a workload once per round")
      ->capture_default_str()
      ->check(positive_number());
  cmd->add_option("--warmup", args->options.warmup_steps,
                  "Warm-up steps before each round's timed steps (discarded)")
      ->capture_default_str()
      ->check(non_negative_number());
  cmd->add_option("--steps", args->options.timed_steps,
                  "Timed steps per decision and round (the median over all is reported)")
      ->capture_default_str()
      ->check(positive_number());
  cmd->add_flag(
      "--unpinned", [args](std::int64_t) { args->options.pin_workers = false; },
      "Let the OS move the backend's workers between CPUs (default: each worker\n"
      "pinned to a CPU of its own when the process may use enough of them)");
  cmd->add_flag("--remeasure", args->options.remeasure,
                "Measure results measured earlier again (default: keep them and skip)");
  cmd->callback([&context, args] {
    context.action = [&context, args] { return run_measure(*args, context); };
  });
}

}  // namespace gopt::experiments
