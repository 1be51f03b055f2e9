#include "experiments/cli.h"

#include <CLI/CLI.hpp>
#include <exception>
#include <ostream>
#include <string>

#include "core/errors.h"
#include "experiments/version.h"

namespace gopt::experiments {

std::unique_ptr<CLI::App> build_cli(CliContext& context) {
  auto app = std::make_unique<CLI::App>(
      "gopt: learned graph optimization for ML compilers (placement, scheduling, fusion),\n"
      "a reproduction of GO (Zhou et al., NeurIPS 2020) on a calibrated multi-GPU simulator.",
      "gopt");
  app->set_version_flag(
      "--version", "gopt " + std::string(version()) + " (git " + std::string(git_revision()) + ")");
  app->require_subcommand(1);
  app->failure_message([](const CLI::App* a, const CLI::Error& e) {
    std::string usage = a->help("", CLI::AppFormatMode::Normal);
    return "gopt: error: " + std::string(e.what()) + "\n\n" + usage;
  });
  add_graph_commands(*app, context);
  add_simulate_command(*app, context);
  add_agents_command(*app, context);
  add_run_command(*app, context);
  add_table_command(*app, context);
  add_compare_command(*app, context);
  add_calibrate_command(*app, context);
  add_validate_command(*app, context);
  return app;
}

int run_cli(int argc, const char* const* argv, std::ostream& out, std::ostream& err) {
  CliContext context{out, err, {}};
  std::unique_ptr<CLI::App> app;
  try {
    app = build_cli(context);
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
    app->exit(e, out, err);
    return kExitUsage;
  }
  if (!context.action) {
    err << "gopt: error: no command given\n" << app->help();
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
