// `gopt table RESULTS.h5 [--format markdown|csv] [--table ID] [--recompute-bounds]
// [--schedule critical_path] [--resimulate [--hardware PROFILE]]`: the paper's tables from a
// results file written by `gopt run`.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <memory>
#include <ostream>
#include <string>

#include "core/errors.h"
#include "core/strings.h"
#include "experiments/cli/cli.h"
#include "experiments/results/results_file.h"
#include "experiments/tables/bound_refresh.h"
#include "experiments/tables/reschedule.h"
#include "experiments/tables/tables.h"

namespace gopt::experiments {
namespace {

struct TableArgs {
  std::string file;
  std::string format = "markdown";
  std::string table;
  bool recompute_bounds = false;
  std::string schedule = "recorded";  ///< recorded | critical_path
  bool resimulate = false;
  std::string hardware;  ///< with resimulate: the profile to simulate on ("" : the file's)
};

int print_tables(const TableArgs& args, CliContext& ctx) {
  const bool rescheduled = args.schedule == "critical_path";
  if (rescheduled && std::find(kRecordedOnlyTables.begin(), kRecordedOnlyTables.end(),
                               args.table) != kRecordedOnlyTables.end()) {
    throw core::InputError(args.file, "--table",
                           "the " + args.table +
                               " table reads the recorded learning curves; --schedule "
                               "critical_path re-simulates only the final decisions");
  }
  if (!args.hardware.empty() && !args.resimulate) {
    throw core::InputError(args.file, "--hardware", "applies only with --resimulate");
  }
  if (args.resimulate && rescheduled) {
    throw core::InputError(args.file, "--resimulate",
                           "measurements are of the recorded decisions; it does not combine "
                           "with --schedule critical_path");
  }
  ResultsFile file = read_results_file(args.file);
  if (args.resimulate && file.measurements.empty()) {
    throw core::InputError(args.file, "--resimulate",
                           "the file holds no measurements (`gopt measure` it first)");
  }
  std::vector<std::string> notes;
  if (args.resimulate) {
    notes.push_back(resimulation_note(resimulate_measurements(file, args.hardware)));
  }
  if (args.recompute_bounds) notes.push_back(bound_refresh_note(recompute_lower_bounds(file)));
  if (rescheduled) notes.push_back(reschedule_note(reschedule_critical_path(file)));
  auto tables = build_tables(file);
  if (rescheduled) {
    remove_tables(tables, kRecordedOnlyTables);
    // Measurements are of the recorded decisions, not of the re-scheduled ones.
    remove_tables(tables, {"measured", "measured_winners", "measured_gains", "measured_rewards"});
  }
  if (!args.table.empty()) {
    std::vector<Table> chosen;
    std::vector<std::string> ids;
    for (auto& t : tables) {
      ids.push_back(t.id);
      if (t.id == args.table) chosen.push_back(std::move(t));
    }
    if (chosen.empty()) {
      throw core::InputError(
          args.file, "--table",
          "no '" + args.table + "' table in this file; it has: " + core::join(ids));
    }
    tables = std::move(chosen);
  }
  // Rows from two binaries or two budgets look like one run in the tables: say so on stderr,
  // and in markdown (a page someone reads later) above the tables too.
  const auto warnings = provenance_warnings(file);
  for (const auto& w : warnings) ctx.err << "gopt: warning: " << args.file << ": " << w << "\n";
  const bool csv = args.format == "csv";
  if (!csv) {
    for (const auto& w : warnings) ctx.out << "> **Warning:** " << w << "\n\n";
    for (const auto& n : notes) ctx.out << "> **Note:** " << n << "\n\n";
  } else {
    for (const auto& n : notes) ctx.err << "gopt: note: " << n << "\n";
  }
  ctx.out << render_tables(tables, csv ? TableFormat::kCsv : TableFormat::kMarkdown);
  if (file.incomplete > 0) {
    ctx.err << "gopt: note: " << file.incomplete
            << " half-written results (an interrupted run) were ignored\n";
  }
  return kExitOk;
}

}  // namespace

void add_table_command(CLI::App& app, CliContext& context) {
  auto args = std::make_shared<TableArgs>();
  auto* cmd = app.add_subcommand(
      "table",
      "Print the paper's tables (placement, generalization, multi-task, validation, and\n"
      "measured beside simulated after `gopt measure`) from a results file");
  cmd->add_option("results", args->file, "Results file (HDF5)")->required();
  cmd->add_option("--format", args->format, "markdown or csv")
      ->check(CLI::IsMember({"markdown", "csv"}))
      ->capture_default_str();
  cmd->add_flag("--recompute-bounds", args->recompute_bounds,
                "Recompute each workload's lower bound with this gopt from the file's config "
                "and use it where it is tighter than the stored one (a note says so)");
  add_schedule_option(*cmd, args->schedule);
  cmd->add_flag("--resimulate", args->resimulate,
                "Re-simulate the decision beside every measurement with this gopt, so that the "
                "measured tables show this cost model's error without measuring again (a note "
                "says so)");
  cmd->add_option("--hardware", args->hardware,
                  "With --resimulate: the hardware profile (name or file) to simulate on, with "
                  "as many devices as the file's (default: the file's hardware)");
  cmd->add_option("--table", args->table,
                  "Print one table by id: placement, generalization, multitask, validation,\n"
                  "measured, measured_winners, convergence, running, *_bounds");
  cmd->callback([&context, args] {
    context.action = [&context, args] { return print_tables(*args, context); };
  });
}

}  // namespace gopt::experiments
