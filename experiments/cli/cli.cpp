#include "experiments/cli/cli.h"

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdlib>
#include <exception>
#include <ostream>
#include <string>
#include <vector>

#include "core/errors.h"
#include "core/strings.h"
#include "experiments/results/version.h"

namespace gopt::experiments {
namespace {

// "gopt graph validate": the command's words from the root.
std::string command_path(const CLI::App* app) {
  std::string path = app->get_name();
  for (const CLI::App* p = app->get_parent(); p != nullptr; p = p->get_parent()) {
    path = p->get_name() + " " + path;
  }
  return path;
}

// One usage line and where to read more, under every usage error (not the whole help).
std::string short_usage(const CLI::App* app) {
  const CLI::Formatter formatter;
  std::string usage = formatter.make_usage(app, command_path(app));
  while (!usage.empty() && (usage.front() == '\n' || usage.front() == ' ')) usage.erase(0, 1);
  if (!usage.empty() && usage.back() != '\n') usage += '\n';
  return usage + "see '" + command_path(app) + " --help'\n";
}

std::vector<std::string> subcommand_names(const CLI::App* app) {
  std::vector<std::string> names;
  for (const CLI::App* sub : app->get_subcommands({})) names.push_back(sub->get_name());
  return names;
}

std::vector<std::string> long_flags(const CLI::App* app) {
  std::vector<std::string> flags;
  for (const CLI::App* a = app; a != nullptr; a = a->get_parent()) {
    for (const CLI::Option* o : a->get_options()) {
      for (const auto& name : o->get_lnames()) flags.push_back("--" + name);
    }
  }
  return flags;
}

// Typos CLI11 would report late or vaguely ("A subcommand is required" for `gopt simulat`,
// "--graph is required" for `--grpah`): an unknown command word or long flag, with the
// closest valid one. Empty when the words are all known; CLI11 checks the rest.
std::string unknown_word(const CLI::App* app, int argc, const char* const* argv,
                         const CLI::App** where) {
  *where = app;
  for (int i = 1; i < argc; ++i) {
    const std::string word = argv[i];
    if (word == "--") break;
    if (word.rfind("--", 0) == 0) {
      const std::string flag = word.substr(0, word.find('='));
      const auto flags = long_flags(app);
      if (std::find(flags.begin(), flags.end(), flag) == flags.end()) {
        return "unknown option '" + flag + "'" + core::did_you_mean(flag, flags);
      }
      continue;
    }
    if (word.rfind('-', 0) == 0) continue;
    const auto names = subcommand_names(app);
    if (std::find(names.begin(), names.end(), word) != names.end()) {
      app = app->get_subcommand(word);
      *where = app;
      continue;
    }
    // A word that is neither a subcommand nor a flag: a command typo where the app only
    // takes subcommands; otherwise a positional or an option's value, CLI11's to judge.
    if (!names.empty() &&
        app->get_options([](const CLI::Option* o) { return o->get_positional(); }).empty() &&
        i > 0 && std::string(argv[i - 1]).rfind('-', 0) != 0) {
      return "unknown command '" + word + "'" + core::did_you_mean(word, names);
    }
  }
  return {};
}

CLI::Validator number_at_least(double least, bool inclusive, const char* name) {
  return CLI::Validator(
      [least, inclusive](std::string& input) -> std::string {
        const auto parsed = core::parse_number(input);
        if (!parsed) return "expected a number, found '" + input + "'";
        const double value = *parsed;
        if (inclusive ? !(value >= least) : !(value > least)) {
          return std::string("expected a number ") + (inclusive ? ">= " : "> ") +
                 (least == 0 ? "0" : std::to_string(least)) + ", found " + input;
        }
        return {};
      },
      name);
}

}  // namespace

std::string shell_quote(const std::string& word) {
  if (!word.empty() && word.find_first_of(" '\"$\\") == std::string::npos) return word;
  std::string q = "'";
  for (char c : word) q += c == '\'' ? std::string("'\\''") : std::string(1, c);
  return q + "'";
}

CLI::Validator positive_number() { return number_at_least(0, false, "POSITIVE"); }

CLI::Validator non_negative_number() { return number_at_least(0, true, "NON-NEGATIVE"); }

void add_schedule_option(CLI::App& cmd, std::string& schedule) {
  cmd.add_option("--schedule", schedule,
                 "recorded: the step times the run recorded; critical_path: re-simulate every "
                 "result's decision from the file's config with its priorities replaced by "
                 "critical-path list scheduling on its placement (longest path to the end "
                 "first), to compare placements apart from the order of ready ops (a note "
                 "says so; the convergence table is left out)")
      ->capture_default_str()
      ->check(CLI::IsMember({"recorded", "critical_path"}));
}

std::unique_ptr<CLI::App> build_cli(CliContext& context) {
  auto app = std::make_unique<CLI::App>(
      "gopt: learned graph optimization for ML compilers (placement, scheduling, fusion),\n"
      "a reproduction of GO (Zhou et al., NeurIPS 2020) on a calibrated multi-GPU simulator.",
      "gopt");
  app->set_version_flag(
      "--version", "gopt " + std::string(version()) + " (git " + std::string(git_revision()) + ")");
  app->require_subcommand(1);
  add_graph_commands(*app, context);
  add_simulate_command(*app, context);
  add_agents_command(*app, context);
  add_run_command(*app, context);
  add_table_command(*app, context);
  add_report_command(*app, context);
  add_ablation_command(*app, context);
  add_compare_command(*app, context);
  add_calibrate_command(*app, context);
  add_validate_command(*app, context);
  add_measure_command(*app, context);
  return app;
}

int run_cli(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  CliContext context{out, err, {}, "gopt"};
  for (int i = 1; i < argc; ++i) context.command_line += " " + shell_quote(argv[i]);
  std::unique_ptr<CLI::App> app;
  const CLI::App* where = nullptr;  // the deepest command named on the line
  try {
    app = build_cli(context);
    const std::string typo = unknown_word(app.get(), argc, argv, &where);
    if (!typo.empty()) {
      err << "gopt: error: " << typo << "\n" << short_usage(where);
      return kExitUsage;
    }
    app->parse(argc, argv);
  } catch (const CLI::CallForHelp&) {
    out << app->help();
    return kExitOk;
  } catch (const CLI::CallForAllHelp&) {
    out << app->help("", CLI::AppFormatMode::All);
    return kExitOk;
  } catch (const CLI::CallForVersion& e) {
    out << e.what() << "\n";
    return kExitOk;
  } catch (const CLI::ParseError& e) {
    // A subcommand's own --help arrives here as a parse "error" with exit code 0.
    if (e.get_exit_code() == 0) {
      return app->exit(e, out, err);
    }
    err << "gopt: error: " << e.what() << "\n" << short_usage(where != nullptr ? where : app.get());
    return kExitUsage;
  }
  if (!context.action) {
    err << "gopt: error: no command given\n" << short_usage(app.get());
    return kExitUsage;
  }
  try {
    return context.action();
  } catch (const core::Error& e) {
    err << "gopt: error: " << e.what() << "\n";
    return kExitInputError;
  } catch (const std::exception& e) {
    err << "gopt: internal error: " << e.what() << "\n";
    return kExitInternal;
  }
}

}  // namespace gopt::experiments
