// A results page: the paper's tables from a results file with everything needed to make
// them again (the config, the revision, the command, the libraries), as markdown for docs/.
// `gopt report RESULTS.h5 --out docs/results/NAME.md` writes it; docs cite those pages
// instead of copying figures by hand.
#pragma once

#include <string>
#include <vector>

#include "core/options.h"
#include "experiments/results/results_file.h"

namespace gopt::experiments {

/// What render_report needs besides the file.
struct ReportOptions {
  /// The command that makes the page again ("gopt report results/x.h5 --out docs/x.md").
  GOPT_OPTION(std::string, regenerate, {})
  /// Notes printed above the tables, e.g. bound_refresh_note().
  GOPT_OPTION(std::vector<std::string>, notes, {})
  /// Ids of tables left out (`convergence` when the step times were re-simulated).
  GOPT_OPTION(std::vector<std::string>, omit_tables, {})
};

/// The page for `file`: a title, the provenance of its first run and of every run into it,
/// the provenance warnings, the tables (tables.h) and the resolved config. Paths of the
/// machine that ran it are reduced to file names (portable_command).
[[nodiscard]] std::string render_report(const ResultsFile& file, const ReportOptions& options);

/// `command` (shell-quoted, as Provenance::command records it) with the program name made
/// "gopt" and every absolute path reduced to its file name, so that a page written from a
/// run on one machine names no directory of it.
[[nodiscard]] std::string portable_command(const std::string& command);

/// Writes `page` to `path` through a temporary file renamed over it, so that a failed write
/// leaves the old page; InputError naming `path` and `--out` when it cannot be written.
void write_page(const std::string& path, const std::string& page);

/// `path` itself when relative, else its file name.
[[nodiscard]] std::string portable_path(const std::string& path);

}  // namespace gopt::experiments
