// The `gopt` command line: one CLI11 application with a subcommand per task. Subcommand
// groups live in their own files (graph_commands.cpp, ...) and register themselves on
// the app through an `add_*_commands(app, context)` call made from build_cli().
//
// Exit status: 0 success, 1 bad input (file, config, graph), 2 bad usage (unknown
// subcommand or flag), 3 internal error, 4 another rank of a distributed run failed.
#pragma once

#include <functional>
#include <iosfwd>
#include <memory>
#include <string>

namespace CLI {
class App;
class Validator;
}  // namespace CLI

namespace gopt::experiments {

inline constexpr int kExitOk = 0;
inline constexpr int kExitInputError = 1;
inline constexpr int kExitUsage = 2;
inline constexpr int kExitInternal = 3;
inline constexpr int kExitPeerFailure = 4;

/// Where commands write. Tests pass string streams; main passes std::cout / std::cerr.
struct CliContext {
  std::ostream& out;
  std::ostream& err;
  /// Set by the chosen subcommand's callback; run after parsing succeeds.
  std::function<int()> action;
  /// The command line as typed, shell-quoted, the program named `gopt` ("gopt run a.yaml"):
  /// recorded in results files (provenance).
  std::string command_line;
};

/// `word` as a shell reads it back: unchanged when it has no space, quote, `$` or `\`,
/// else in single quotes.
[[nodiscard]] std::string shell_quote(const std::string& word);

/// Builds the whole CLI; subcommands store their work in `context.action`.
[[nodiscard]] std::unique_ptr<CLI::App> build_cli(CliContext& context);

/// Parses argv, runs the chosen command, maps errors to exit status (see above).
[[nodiscard]] int run_cli(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

/// A CLI11 check for a number > 0 whose message says so readably ("--steps: expected a
/// number > 0, found 0").
[[nodiscard]] CLI::Validator positive_number();
/// The same for a number >= 0.
[[nodiscard]] CLI::Validator non_negative_number();

/// `--schedule recorded|critical_path` of `gopt table` and `gopt report` (reschedule.h).
void add_schedule_option(CLI::App& cmd, std::string& schedule);

/// Registers `gopt graph ...` (graph_commands.cpp).
void add_graph_commands(CLI::App& app, CliContext& context);

/// Registers `gopt simulate` (simulate_command.cpp).
void add_simulate_command(CLI::App& app, CliContext& context);

/// Registers `gopt agents` (agents_command.cpp).
void add_agents_command(CLI::App& app, CliContext& context);

/// Registers `gopt run` (run_command.cpp).
void add_run_command(CLI::App& app, CliContext& context);

/// Registers `gopt table` (table_command.cpp).
void add_table_command(CLI::App& app, CliContext& context);

/// Registers `gopt report` (report_command.cpp).
void add_report_command(CLI::App& app, CliContext& context);

/// Registers `gopt compare` (compare_command.cpp).
void add_compare_command(CLI::App& app, CliContext& context);

/// Registers `gopt ablation` (ablation_command.cpp).
void add_ablation_command(CLI::App& app, CliContext& context);

/// Registers `gopt calibrate` (calibrate_command.cpp).
void add_calibrate_command(CLI::App& app, CliContext& context);

/// Registers `gopt validate` (validate_command.cpp).
void add_validate_command(CLI::App& app, CliContext& context);

/// Registers `gopt measure` (measure_command.cpp).
void add_measure_command(CLI::App& app, CliContext& context);

/// Measures `results` as `gopt measure RESULTS` does with the default options, reporting on
/// `context` (its command line recorded, Ctrl-C honoured); the exit status. `gopt run
/// --measure` ends with it.
[[nodiscard]] int measure_results_command(const std::string& results, CliContext& context);

}  // namespace gopt::experiments
