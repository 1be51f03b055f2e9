// `gopt simulate --graph GRAPH --hardware PROFILE [--placement single|round_robin|FILE |
//                --result RESULTS.h5:WORKLOAD:AGENT:SEED |
//                --agent NAME [--option k=v ...] [--steps N]] [--schedule critical_path]
//                [--trace OUT.json] [--json]`:
// one simulated training step, of a given placement or of any registered agent's decision
// (learning agents train on the simulator first, with a progress display); with
// --schedule critical_path, that placement run in critical-path order instead of the
// decision's own.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <string>
#include <vector>

#include <unistd.h>
#include <chrono>

#include "agents/baselines/list_scheduling.h"
#include "agents/registry.h"
#include "core/compiled_graph.h"
#include "core/errors.h"
#include "core/graph_io.h"
#include "core/strings.h"
#include "datasets/workload_registry.h"
#include "experiments/cli/cli.h"
#include "experiments/results/results_file.h"
#include "hardware/cost_model.h"
#include "hardware/profile.h"
#include "simulator/chrome_trace.h"
#include "simulator/decision_io.h"
#include "simulator/simulator.h"

namespace gopt::experiments {
namespace {

struct SimulateArgs {
  std::string graph;
  std::vector<std::string> overrides;
  std::int64_t batch = 0;
  bool training = false;
  std::string hardware;
  std::string placement = "single";
  std::string result;  ///< FILE.h5:WORKLOAD:AGENT:SEED
  std::string agent;
  std::vector<std::string> agent_options;
  std::int64_t steps = 100;
  std::uint64_t seed = 1;
  std::string schedule = "decision";  ///< decision | critical_path
  std::string save_decision;
  std::string trace;
  bool json = false;
};

// Training progress on stderr: a line redrawn in place on a terminal, a plain line every
// tenth of the budget otherwise.
class TrainingProgress final : public agents::TrainingObserver {
 public:
  TrainingProgress(std::ostream& err, std::string agent, std::int64_t steps)
      : err_(err), agent_(std::move(agent)), steps_(steps), tty_(::isatty(STDERR_FILENO) != 0) {}
  ~TrainingProgress() override {
    if (tty_ && drew_) err_ << "\n";
  }
  TrainingProgress(const TrainingProgress&) = delete;
  TrainingProgress& operator=(const TrainingProgress&) = delete;

  void on_training_step(const agents::LearningCurvePoint& p) override {
    const std::int64_t every = std::max<std::int64_t>(1, steps_ / 10);
    if (!tty_ && p.step % every != 0 && p.step != steps_) return;
    char line[256];
    std::snprintf(line, sizeof line,
                  "%s: step %lld/%lld  best %s  mean %s  %lld samples  %.1f s elapsed",
                  agent_.c_str(), static_cast<long long>(p.step), static_cast<long long>(steps_),
                  core::format_seconds(p.best_step_time_s).c_str(),
                  core::format_seconds(p.mean_step_time_s).c_str(),
                  static_cast<long long>(p.samples), p.wall_s);
    err_ << (tty_ ? "\r\033[K" : "") << line << (tty_ ? "" : "\n") << std::flush;
    drew_ = true;
  }

 private:
  std::ostream& err_;
  std::string agent_;
  std::int64_t steps_;
  bool tty_;
  bool drew_ = false;
};

// "key=value" arguments into a map; throws InputError naming the flag for a bad one.
std::map<std::string, std::string> parse_assignments(const std::vector<std::string>& items,
                                                     const std::string& flag) {
  std::map<std::string, std::string> out;
  for (const auto& item : items) {
    auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0) {
      throw core::InputError(flag, "'" + item + "'", "expected key=value");
    }
    out[item.substr(0, eq)] = item.substr(eq + 1);
  }
  return out;
}

std::string percent(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100.0 * fraction);
  return buf;
}

std::string pad(std::string s, std::size_t width) {
  if (s.size() < width) s.append(width - s.size(), ' ');
  return s;
}

// "FILE.h5:WORKLOAD:AGENT:SEED" (split at its last three colons, so the path may hold
// colons): the decision that result of a `gopt run` file holds, checked against the graph
// and the cluster as a decision file is.
core::Decision decision_of_result(const std::string& spec, const core::CompiledGraph& graph,
                                  const hardware::Cluster& cluster) {
  std::vector<std::string> parts;
  std::string rest = spec;
  for (int i = 0; i < 3; ++i) {
    const auto colon = rest.rfind(':');
    if (colon == std::string::npos) break;
    parts.insert(parts.begin(), rest.substr(colon + 1));
    rest.resize(colon);
  }
  const auto seed = parts.size() == 3 ? core::parse_integer(parts[2]) : std::nullopt;
  if (rest.empty() || !seed || *seed < 0 || parts[0].empty() || parts[1].empty()) {
    throw core::InputError(spec, "--result",
                           "expected RESULTS.h5:WORKLOAD:AGENT:SEED, e.g. "
                           "results/table1_placement.h5:gnmt_8:go_one:1");
  }
  const ResultKey key{parts[0], parts[1], static_cast<std::uint64_t>(*seed)};
  const ResultsFile file = read_results_file(rest);
  const auto it = std::find_if(file.results.begin(), file.results.end(),
                               [&](const RunResult& r) { return r.key == key; });
  if (it == file.results.end()) {
    throw core::InputError(rest, "--result",
                           "no complete result '" + key.text() + "' among its " +
                               std::to_string(file.results.size()) + " results");
  }
  const auto& d = it->decision;
  if (!d.placement && !d.priority && !d.fusion) {
    throw core::InputError(rest, "--result", "result '" + key.text() + "' holds no decision");
  }
  return simulator::parse_decision_json(simulator::to_decision_json(d, graph),
                                        rest + " (" + key.text() + ")", graph, cluster);
}

// The decision to simulate: the agent's (trained first when it learns), single,
// round_robin, a decision file or a result's decision. `source` names it in simulator errors; for
// an agent, args.placement becomes "agent:NAME" (what the output calls the placement).
core::Decision choose_decision(SimulateArgs& args, const core::CompiledGraph& graph,
                               const hardware::Cluster& cluster, const hardware::CostModel& cost,
                               CliContext& ctx, std::string& source) {
  core::Decision decision;
  source = "--placement";
  if (!args.agent.empty()) {
    agents::AgentRegistry registry;
    agents::register_builtin_agents(registry);
    auto agent =
        registry.create(args.agent, parse_assignments(args.agent_options, "--option"), "--agent");
    agents::Problem problem{graph, cluster, cost, args.seed};
    if (agent->is_learner()) {
      agents::Environment env(problem);
      TrainingProgress progress(ctx.err, args.agent, args.steps);
      agent->train(env, agents::TrainBudget().with_max_steps(args.steps), &progress);
    }
    decision = agent->propose(problem);
    source = "agent " + args.agent;
    args.placement = "agent:" + args.agent;
  } else if (!args.result.empty()) {
    decision = decision_of_result(args.result, graph, cluster);
    source = args.result;
    args.placement = "result " + args.result;
  } else if (args.placement == "single") {
    // Every op on device 0 (the default of an absent placement).
  } else if (args.placement == "round_robin") {
    decision.placement = simulator::round_robin_placement(graph, cluster.num_devices());
  } else {
    decision = simulator::read_decision_file(args.placement, graph, cluster);
    source = args.placement;
  }
  return decision;
}

// --json: the result as one JSON object, devices and links included.
void print_json(const SimulateArgs& args, const core::CompiledGraph& graph,
                const hardware::Cluster& cluster, const simulator::SimulationResult& r,
                std::ostream& out) {
  const auto D = static_cast<std::size_t>(cluster.num_devices());
  nlohmann::ordered_json j;
  j["graph"] = graph.name();
  j["hardware"] = cluster.name();
  j["placement"] = args.placement;
  j["schedule"] = args.schedule;
  j["step_time_s"] = r.step_time_s;
  j["oom"] = r.oom;
  j["oom_device"] = r.oom ? nlohmann::ordered_json(cluster.device(r.oom_device).name)
                          : nlohmann::ordered_json(nullptr);
  j["lower_bound_critical_path_s"] = r.lower_bound_critical_path_s;
  j["lower_bound_work_s"] = r.lower_bound_work_s;
  j["bytes_moved"] = r.bytes_moved;
  j["num_transfers"] = r.num_transfers;
  j["num_kernels"] = r.num_kernels;
  j["devices"] = nlohmann::ordered_json::array();
  for (std::size_t d = 0; d < D; ++d) {
    const auto& dev = r.devices[d];
    const auto& spec = cluster.device(static_cast<core::DeviceId>(d));
    j["devices"].push_back({{"name", spec.name},
                            {"busy_s", dev.busy_s},
                            {"utilisation", r.step_time_s > 0 ? dev.busy_s / r.step_time_s : 0},
                            {"kernels", dev.num_kernels},
                            {"peak_memory_bytes", dev.peak_memory_bytes},
                            {"param_bytes", dev.param_bytes},
                            {"memory_capacity_bytes", spec.memory_capacity_bytes}});
  }
  j["links"] = nlohmann::ordered_json::array();
  for (hardware::LinkId l = 0; l < cluster.num_links(); ++l) {
    const auto& link = r.links[static_cast<std::size_t>(l)];
    j["links"].push_back({{"name", cluster.link(l).name},
                          {"bytes_moved", link.bytes_moved},
                          {"busy_s", link.busy_s},
                          {"transfers", link.num_transfers}});
  }
  if (!args.trace.empty()) j["trace"] = args.trace;
  out << j.dump(2) << "\n";
}

std::string bytes_text(core::Bytes b) { return core::format_bytes(static_cast<double>(b)); }

// The report's summary lines: graph, hardware, placement, step time, bounds, OOM, traffic.
void print_summary(const SimulateArgs& args, const core::CompiledGraph& graph,
                   const hardware::Cluster& cluster, const simulator::SimulationResult& r,
                   std::ostream& out) {
  out << "graph:        " << graph.name() << " (" << graph.num_nodes() << " ops, "
      << graph.num_edges() << " edges)\n";
  out << "hardware:     " << cluster.name() << " (" << cluster.num_devices() << " devices, "
      << cluster.provenance().kind << " profile)\n";
  out << "placement:    " << args.placement << "\n";
  if (args.schedule == "critical_path") {
    out << "schedule:     critical path (the decision's priorities replaced: longest path to "
           "the end first)\n";
  }
  out << "step time:    " << core::format_seconds(r.step_time_s) << "\n";
  double bound = r.lower_bound_s();
  out << "lower bounds: critical path " << core::format_seconds(r.lower_bound_critical_path_s)
      << ", work/devices " << core::format_seconds(r.lower_bound_work_s);
  if (bound > 0) {
    char ratio[32];
    std::snprintf(ratio, sizeof ratio, "%.2fx", r.step_time_s / bound);
    out << " (step time is " << ratio << " the larger)";
  }
  out << "\n";
  out << "OOM:          ";
  if (r.oom) {
    out << "yes, " << cluster.device(r.oom_device).name << " exceeded "
        << bytes_text(cluster.device(r.oom_device).memory_capacity_bytes) << " at "
        << core::format_seconds(r.oom_time_s) << "\n";
  } else {
    out << "no\n";
  }
  out << "bytes moved:  " << bytes_text(r.bytes_moved) << " in " << r.num_transfers
      << " transfers\n";
  out << "kernels:      " << r.num_kernels << "\n";
}

// The report's tables: every device, and the links that carried transfers.
void print_devices_and_links(const hardware::Cluster& cluster, const simulator::SimulationResult& r,
                             std::ostream& out) {
  const auto D = static_cast<std::size_t>(cluster.num_devices());
  out << "devices:\n  " << pad("name", 12) << pad("busy", 12) << pad("util", 8) << pad("kernels", 9)
      << pad("peak memory", 13) << pad("params", 12) << "capacity\n";
  for (std::size_t d = 0; d < D; ++d) {
    const auto& dev = r.devices[d];
    const auto& spec = cluster.device(static_cast<core::DeviceId>(d));
    out << "  " << pad(spec.name, 12) << pad(core::format_seconds(dev.busy_s), 12)
        << pad(percent(r.step_time_s > 0 ? dev.busy_s / r.step_time_s : 0), 8)
        << pad(std::to_string(dev.num_kernels), 9) << pad(bytes_text(dev.peak_memory_bytes), 13)
        << pad(bytes_text(dev.param_bytes), 12) << bytes_text(spec.memory_capacity_bytes) << "\n";
  }
  bool any_link = false;
  for (hardware::LinkId l = 0; l < cluster.num_links(); ++l) {
    const auto& link = r.links[static_cast<std::size_t>(l)];
    if (link.num_transfers == 0) continue;
    if (!any_link) {
      out << "links (used):\n  " << pad("name", 20) << pad("bytes", 12) << pad("transfers", 11)
          << "busy (both directions)\n";
      any_link = true;
    }
    out << "  " << pad(cluster.link(l).name, 20) << pad(bytes_text(link.bytes_moved), 12)
        << pad(std::to_string(link.num_transfers), 11) << core::format_seconds(link.busy_s) << "\n";
  }
}

int run_simulate(SimulateArgs args, CliContext& ctx) {
  datasets::WorkloadRegistry workloads;
  datasets::register_builtin_workloads(workloads);
  datasets::LoadOptions load;
  for (const auto& o : args.overrides) datasets::parse_override(o, load.overrides);
  load.onnx_batch = args.batch;
  load.onnx_training = args.training;
  auto graph = core::CompiledGraph::compile(datasets::load_graph(args.graph, workloads, load));
  auto cluster = hardware::load_profile(args.hardware);
  auto cost_model = hardware::make_cost_model(cluster);  // calibrated when the profile is measured
  const hardware::CostModel& cost = *cost_model;

  std::string decision_source;
  core::Decision decision = choose_decision(args, graph, cluster, cost, ctx, decision_source);
  if (args.schedule == "critical_path") {
    const agents::Problem problem{graph, cluster, cost, args.seed};
    decision.priority = agents::critical_path_priorities(problem, decision);
  }
  simulator::Simulator sim(graph, cluster, cost,
                           simulator::SimulatorOptions().with_decision_source(decision_source));
  simulator::ChromeTraceWriter trace;
  const auto& r = sim.simulate(decision, args.trace.empty() ? nullptr : &trace);
  if (!args.trace.empty()) trace.write(args.trace);
  if (!args.save_decision.empty()) {
    core::write_text_file_atomic(args.save_decision, simulator::to_decision_json(decision, graph));
  }
  if (args.json) {
    print_json(args, graph, cluster, r, ctx.out);
    return kExitOk;
  }
  print_summary(args, graph, cluster, r, ctx.out);
  print_devices_and_links(cluster, r, ctx.out);
  if (!args.trace.empty()) {
    ctx.out << "trace:        " << args.trace << " (open in ui.perfetto.dev or chrome://tracing)\n";
  }
  return kExitOk;
}

}  // namespace

void add_simulate_command(CLI::App& app, CliContext& context) {
  auto args = std::make_shared<SimulateArgs>();
  auto* cmd = app.add_subcommand(
      "simulate",
      "Simulate one training step of a graph on a hardware profile and print the step time,\n"
      "per-device busy time and peak memory, bytes moved, OOM and lower bounds");
  cmd->add_option("--graph", args->graph,
                  "Graph: a suite name (see `gopt graph list`), a graph file or an .onnx model")
      ->required();
  cmd->add_option("--set", args->overrides,
                  "Hyperparameter override key=value for a suite graph (repeatable)");
  cmd->add_option("--batch", args->batch, "Batch size for an ONNX model's dynamic batch dimension")
      ->check(positive_number());
  cmd->add_flag("--training", args->training,
                "For an ONNX model: add gradient and update ops (a training step)");
  cmd->add_option("--hardware", args->hardware,
                  "Hardware profile: a name under hardware/profiles (e.g. p100x4_pcie) or a "
                  "path to a .yaml file")
      ->required();
  cmd->add_option("--placement", args->placement,
                  "single (every op on device 0), round_robin (op i on device i mod N), or a "
                  "decision file (JSON, docs/decision-format.md)")
      ->capture_default_str();
  auto* agent = cmd->add_option("--agent", args->agent,
                                "Use this agent's decision (see `gopt agents`); learners train "
                                "on the simulator first");
  auto* result = cmd->add_option(
      "--result", args->result,
      "Use the decision of a result in a `gopt run` file: RESULTS.h5:WORKLOAD:AGENT:SEED");
  cmd->get_option("--placement")->excludes(agent)->excludes(result);
  agent->excludes(result);
  cmd->add_option("--option", args->agent_options, "Agent option key=value (repeatable)")
      ->needs(agent);
  cmd->add_option("--steps", args->steps, "Training updates for a learning agent")
      ->capture_default_str()
      ->check(positive_number())
      ->needs(agent);
  cmd->add_option("--seed", args->seed, "Seed for randomised agents")->capture_default_str();
  cmd->add_option("--schedule", args->schedule,
                  "decision: run ready ops in the decision's priority order (none: topological); "
                  "critical_path: replace its priorities by critical-path list scheduling on its "
                  "placement (longest path to the end first, transfers counted between devices), "
                  "to see what the order of ready ops costs beside the placement")
      ->capture_default_str()
      ->check(CLI::IsMember({"decision", "critical_path"}));
  cmd->add_option("--save-decision", args->save_decision,
                  "Write the simulated decision as a decision file (JSON)");
  cmd->add_option("--trace", args->trace, "Write a Chrome trace-event JSON file (Perfetto)");
  cmd->add_flag("--json", args->json, "Print one JSON object instead of text");
  cmd->callback([&context, args] {
    context.action = [&context, args] { return run_simulate(*args, context); };
  });
}

}  // namespace gopt::experiments
