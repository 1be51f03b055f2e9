// `gopt compare`: a table of simulated step times, graphs x agents, on one hardware profile.
// The quick way to compare baselines without writing an experiment config:
//
//   gopt compare --hardware p100x4_pcie                      # every suite graph, every baseline
//   gopt compare --hardware p100x2_pcie --graph gnmt_2 --agent metis --agent hdp --steps 50
#include <unistd.h>
#include <CLI/CLI.hpp>
#include <chrono>
#include <cstdio>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

#include "agents/registry.h"
#include "core/compiled_graph.h"
#include "datasets/workload_registry.h"
#include "experiments/cli/cli.h"
#include "experiments/tables/tables.h"
#include "hardware/cost_model.h"
#include "hardware/profile.h"

namespace gopt::experiments {
namespace {

struct CompareArgs {
  std::string hardware = "p100x4_pcie";
  std::vector<std::string> graphs;
  std::vector<std::string> agents;
  std::int64_t steps = 100;
  std::uint64_t seed = 1;
  std::string format = "markdown";
};

std::string cell(const agents::Evaluation& e) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.2f%s", e.step_time_s * 1e3, e.oom ? " (OOM)" : "");
  return buf;
}

// Agents that need an artifact from elsewhere (a pretrained checkpoint) cannot run from
// `gopt compare`'s defaults.
bool needs_checkpoint(const agents::AgentInfo& info) {
  for (const auto& o : info.options) {
    if (o.name == "checkpoint") return true;
  }
  return false;
}

int run_compare(CompareArgs args, CliContext& ctx) {
  datasets::WorkloadRegistry workloads;
  datasets::register_builtin_workloads(workloads);
  agents::AgentRegistry registry;
  agents::register_builtin_agents(registry);
  if (args.graphs.empty()) args.graphs = workloads.names();
  if (args.agents.empty()) {
    for (const auto& a : registry.agents()) {
      if (!a.learner && !needs_checkpoint(a)) args.agents.push_back(a.name);
    }
  }
  for (const auto& a : args.agents) (void)registry.info(a, "--agent");  // fail early
  auto cluster = hardware::load_profile(args.hardware);
  auto cost_model = hardware::make_cost_model(cluster);  // calibrated when the profile is measured
  const hardware::CostModel& cost = *cost_model;
  Table table;
  table.id = "compare";
  table.title = "Simulated step time (ms) on " + args.hardware;
  table.header = {"graph", "nodes", "lower bound (ms)"};
  for (const auto& a : args.agents) table.header.push_back(a + " (ms)");
  const bool tty = ::isatty(STDERR_FILENO) != 0;
  for (const auto& name : args.graphs) {
    auto graph = core::CompiledGraph::compile(datasets::load_graph(name, workloads));
    agents::Problem problem{graph, cluster, cost, args.seed};
    std::vector<std::string> row = {graph.name(), std::to_string(graph.num_nodes()), ""};
    double lower_bound = 0;
    for (const auto& agent_name : args.agents) {
      auto start = std::chrono::steady_clock::now();
      auto agent = registry.create(agent_name);
      agents::Environment env(problem);
      if (agent->is_learner()) {
        agent->train(env, agents::TrainBudget().with_max_steps(args.steps), nullptr);
      }
      auto e = env.evaluate(agent->propose(problem));
      lower_bound = env.last_result().lower_bound_s();
      row.push_back(cell(e));
      double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      char wall[32];
      std::snprintf(wall, sizeof wall, "%.1f", seconds);
      ctx.err << (tty ? "\r\033[K" : "") << "compare: " << name << " / " << agent_name
              << ": step time " << row.back() << " ms (simulated), " << wall << " s wall"
              << (tty ? "" : "\n") << std::flush;
    }
    char lb[32];
    std::snprintf(lb, sizeof lb, "%.2f", lower_bound * 1e3);
    row[2] = lb;
    table.rows.push_back(std::move(row));
  }
  if (tty) ctx.err << "\r\033[K";
  table.notes.push_back(
      "Agents that need a checkpoint or training run only when named with --agent.");
  ctx.out << render_tables({table},
                           args.format == "csv" ? TableFormat::kCsv : TableFormat::kMarkdown);
  return kExitOk;
}

}  // namespace

void add_compare_command(CLI::App& app, CliContext& context) {
  auto args = std::make_shared<CompareArgs>();
  auto* cmd = app.add_subcommand(
      "compare",
      "Simulated step time (ms) of agents on graphs, one table; learners train for --steps "
      "and agents needing a checkpoint run only when named");
  cmd->add_option("--hardware", args->hardware, "Hardware profile: a name or a YAML file")
      ->capture_default_str();
  cmd->add_option("--graph", args->graphs,
                  "Graph: a suite name or a graph file; repeatable (default: the whole suite)");
  cmd->add_option("--agent", args->agents,
                  "Agent name; repeatable (default: every agent that needs no training and no "
                  "checkpoint; see `gopt agents`)");
  cmd->add_option("--steps", args->steps, "Training updates for learning agents")
      ->capture_default_str()
      ->check(positive_number());
  cmd->add_option("--seed", args->seed, "Seed of randomised agents")->capture_default_str();
  cmd->add_option("--format", args->format, "Table format")
      ->check(CLI::IsMember({"markdown", "csv"}))
      ->capture_default_str();
  cmd->callback([&context, args] {
    context.action = [&context, args] { return run_compare(*args, context); };
  });
}

}  // namespace gopt::experiments
