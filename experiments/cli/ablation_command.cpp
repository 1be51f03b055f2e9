// `gopt ablation WITH.h5 WITHOUT.h5 --agent NAME [--without-agent NAME] [--out PAGE.md]`: an
// agent with a change against the same (or another) agent without it, per workload over
// the seeds both have (ablation.h).
#include <CLI/CLI.hpp>
#include <memory>
#include <ostream>
#include <string>

#include "agents/registry.h"
#include "experiments/cli/cli.h"
#include "experiments/results/results_file.h"
#include "experiments/tables/ablation.h"
#include "experiments/tables/report.h"

namespace gopt::experiments {
namespace {

struct AblationArgs {
  std::string with;
  std::string without;
  std::string agent;
  std::string without_agent;  // "": the same as agent
  std::string out;
};

int write_ablation(const AblationArgs& args, CliContext& ctx) {
  const ResultsFile with = read_results_file(args.with);
  const ResultsFile without = read_results_file(args.without);
  const std::string without_agent = args.without_agent.empty() ? args.agent : args.without_agent;
  std::string regenerate = "gopt ablation " + portable_path(args.with) + " " +
                           portable_path(args.without) + " --agent " + args.agent;
  if (!args.without_agent.empty()) regenerate += " --without-agent " + args.without_agent;
  if (!args.out.empty()) regenerate += " --out " + portable_path(args.out);
  agents::AgentRegistry registry;
  agents::register_builtin_agents(registry);
  const AblationSide with_side{&with, args.agent, upstream_of(with, args.agent, registry)};
  const AblationSide without_side{&without, without_agent,
                                  upstream_of(without, without_agent, registry)};
  const std::string page = render_ablation(with_side, without_side, regenerate, &registry);
  if (args.out.empty()) {
    ctx.out << page;
    return kExitOk;
  }
  write_page(args.out, page);
  ctx.err << "gopt: wrote " << args.out << "\n";
  return kExitOk;
}

}  // namespace

void add_ablation_command(CLI::App& app, CliContext& context) {
  auto args = std::make_shared<AblationArgs>();
  auto* cmd = app.add_subcommand(
      "ablation",
      "Compare an agent with a change against one without it (markdown): mean step time per\n"
      "workload over the seeds both results files have, the change of the means and seed by\n"
      "seed, the options that differ (also those of the agents whose output it reads:\n"
      "go_finetune's go_pretrain), the workloads such an agent ran on only one side and the\n"
      "validation graphs only one side's config gave it");
  cmd->add_option("with", args->with, "Results file (HDF5) of the runs with the change")
      ->required();
  cmd->add_option("without", args->without,
                  "Results file (HDF5) of the runs without it (may be the same file)")
      ->required();
  cmd->add_option("--agent", args->agent, "Agent label in WITH (and in WITHOUT unless given)")
      ->required();
  cmd->add_option("--without-agent", args->without_agent,
                  "Agent label in WITHOUT, when it differs from --agent");
  cmd->add_option("--out", args->out, "Page to write (default: print it)");
  cmd->callback([&context, args] {
    context.action = [&context, args] { return write_ablation(*args, context); };
  });
}

}  // namespace gopt::experiments
