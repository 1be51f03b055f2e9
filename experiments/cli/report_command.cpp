// `gopt report RESULTS.h5 [--out PAGE.md]`: a results page (report.h) from a results file
// written by `gopt run`.
#include <CLI/CLI.hpp>
#include <memory>
#include <ostream>
#include <string>

#include "core/errors.h"
#include "experiments/cli/cli.h"
#include "experiments/results/results_file.h"
#include "experiments/tables/bound_refresh.h"
#include "experiments/tables/report.h"
#include "experiments/tables/reschedule.h"

namespace gopt::experiments {
namespace {

struct ReportArgs {
  std::string file;
  std::string out;
  bool recompute_bounds = false;
  std::string schedule = "recorded";  ///< recorded | critical_path
};

int write_report(const ReportArgs& args, CliContext& ctx) {
  ResultsFile file = read_results_file(args.file);
  ReportOptions options;
  options.regenerate = "gopt report " + portable_path(args.file) +
                       (args.out.empty() ? "" : " --out " + portable_path(args.out)) +
                       (args.recompute_bounds ? " --recompute-bounds" : "") +
                       (args.schedule == "recorded" ? "" : " --schedule " + args.schedule);
  if (args.recompute_bounds) {
    options.notes.push_back(bound_refresh_note(recompute_lower_bounds(file)));
  }
  if (args.schedule == "critical_path") {
    options.notes.push_back(reschedule_note(reschedule_critical_path(file)));
    options.omit_tables = kRecordedOnlyTables;
  }
  const std::string page = render_report(file, options);
  if (args.out.empty()) {
    ctx.out << page;
    return kExitOk;
  }
  write_page(args.out, page);
  ctx.err << "gopt: wrote " << args.out << " (" << file.results.size() << " results)\n";
  return kExitOk;
}

}  // namespace

void add_report_command(CLI::App& app, CliContext& context) {
  auto args = std::make_shared<ReportArgs>();
  auto* cmd = app.add_subcommand(
      "report",
      "Write a results page (markdown): the tables of a results file with the config, revision,\n"
      "command and libraries that made them (docs/results/)");
  cmd->add_option("results", args->file, "Results file (HDF5) written by `gopt run`")->required();
  cmd->add_option("--out", args->out, "Page to write (default: print it)");
  cmd->add_flag("--recompute-bounds", args->recompute_bounds,
                "Recompute each workload's lower bound with this gopt from the file's config "
                "and use it where it is tighter than the stored one (the page says so)");
  add_schedule_option(*cmd, args->schedule);
  cmd->callback([&context, args] {
    context.action = [&context, args] { return write_report(*args, context); };
  });
}

}  // namespace gopt::experiments
