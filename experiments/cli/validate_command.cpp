// `gopt validate --profile PROFILE.yaml [--backend cpu|cuda] [--graphs SPEC ...]
//                [--decisions N] [--rounds R] [--steps S] [--op-times calibrated|profiled]
//                [--out FILE.h5] [--json]`:
// runs each graph under several baseline decisions both on a real backend and in the
// simulator and reports, per case, the measured and simulated step times and, overall, the
// mean absolute percentage error, the largest error and Kendall's tau between the measured
// and simulated orderings (docs/hardware-backend.md). The simulator's op times come from the
// profile's cost model (`calibrated`, what agents use) or from a profiling run of the graph
// itself on the backend (`profiled`, a profile-driven simulator; then the statistics are
// also reported over the cases that the profile did not measure).
//
// This command, not `gopt run`, is the entry point of simulator validation: it needs the
// measured profile of the backend it runs on, which an experiment config's `hardware:`
// (a simulated cluster such as p100x4_pcie) is not.
#include <CLI/CLI.hpp>
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "agents/registry.h"
#include "core/compiled_graph.h"
#include "core/errors.h"
#include "core/graph_io.h"
#include "core/strings.h"
#include "datasets/workload_registry.h"
#include "experiments/cli/cli.h"
#include "experiments/cli/validate_report.h"
#include "experiments/results/provenance.h"
#include "experiments/results/results_file.h"
#include "hardware/backend/backend.h"
#include "hardware/cost_model.h"
#include "hardware/profile.h"
#include "hardware/profiled_cost_model.h"
#include "hardware/validation.h"
#include "simulator/simulator.h"

namespace gopt::experiments {
namespace {

using validate::Case;
using validate::GraphSpec;
using validate::median;
using validate::Summary;
using validate::ValidateArgs;
using validate::Validation;

/// Graphs validated when --graphs is not given: suite graphs of every family at reduced
/// batch, width and sequence length, so that one step takes milliseconds on one CPU core.
const std::vector<std::string>& default_graphs() {
  static const std::vector<std::string> graphs = {
      "rnnlm_2:hidden=256,vocab=2000,batch=16,seq_len=8",
      "gnmt_2:hidden=128,vocab=2000,batch=16,src_len=6,tgt_len=6",
      "transformer_xl_2:d_model=128,heads=4,d_head=32,d_inner=512,seg_len=32,mem_len=32,"
      "batch=4,vocab=2000",
      "inception_v3:batch=1,image=107,classes=100",
      "wavenet_2:layers_per_stack=5,residual_channels=16,dilation_channels=16,"
      "skip_channels=64,quantization=64,samples=2000",
      "amoebanet:batch=1,image=64,cells=1,filters=16,classes=100",
  };
  return graphs;
}

/// Baseline decisions, in the order --decisions takes them; random ones fill up the rest.
const std::vector<std::string>& decision_agents() {
  static const std::vector<std::string> agents = {"single_device", "round_robin", "metis",
                                                  "human_expert", "random"};
  return agents;
}

// "name" or "name:key=value,key=value"; for .onnx files the keys batch and training.
GraphSpec parse_graph_spec(const std::string& spec) {
  GraphSpec g;
  auto colon = spec.find(':');
  g.graph = spec.substr(0, colon);
  if (g.graph.empty()) throw core::InputError("--graphs", "'" + spec + "'", "empty graph name");
  // The label names the case in tables and HDF5 group names (no '/'): a file's stem, then
  // the overrides in brackets.
  g.label = g.graph.find('/') == std::string::npos ? g.graph
                                                   : std::filesystem::path(g.graph).stem().string();
  if (colon == std::string::npos) return g;
  std::string rest = spec.substr(colon + 1);
  if (!rest.empty()) g.label += "[" + rest + "]";
  bool onnx = g.graph.size() > 5 && g.graph.substr(g.graph.size() - 5) == ".onnx";
  std::size_t start = 0;
  while (start <= rest.size()) {
    auto comma = rest.find(',', start);
    std::string item =
        rest.substr(start, comma == std::string::npos ? std::string::npos : comma - start);
    if (!item.empty()) {
      auto eq = item.find('=');
      if (eq == std::string::npos || eq == 0) {
        throw core::InputError("--graphs", "'" + spec + "'",
                               "expected NAME or NAME:key=value,key=value, found '" + item + "'");
      }
      std::string key = item.substr(0, eq), value = item.substr(eq + 1);
      if (onnx && key == "batch") {
        // As a config's onnx.batch (0: none), in the one number grammar.
        const auto batch = core::parse_integer(value);
        if (!batch || *batch < 0) {
          throw core::InputError("--graphs", "'" + spec + "'",
                                 "batch: expected a non-negative integer, found '" + value + "'");
        }
        g.load.onnx_batch = *batch;
      } else if (onnx && key == "training") {
        g.load.onnx_training = value == "1" || value == "true";
      } else {
        g.load.overrides[key] = value;
      }
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return g;
}

/// Whether every op of `decision` runs on one device. Under profiled op times such a case is
/// in sample: the profiling run measured its op times on that device (type) with the same
/// neighbours, so its simulated time all but restates the profile's sum.
bool on_one_device(const core::Decision& decision) {
  if (!decision.placement || decision.placement->empty()) return true;
  const auto& p = *decision.placement;
  return std::all_of(p.begin(), p.end(), [&](core::DeviceId d) { return d == p.front(); });
}

// The cases of one graph: baselines in order, then random ones with successive seeds.
// Agents see the profile's cost model in both modes, so that both validate the same
// decisions.
std::vector<Case> decision_cases(const Validation& v, const GraphSpec& spec,
                                 const core::CompiledGraph& cg) {
  const ValidateArgs& args = v.args;
  std::vector<Case> graph_cases;
  std::uint64_t random_seed = args.seed;
  for (std::size_t i = 0; static_cast<int>(graph_cases.size()) < args.decisions; ++i) {
    std::string agent = i < decision_agents().size() ? decision_agents()[i] : "random";
    if (i >= decision_agents().size() + 16) break;
    std::uint64_t seed = agent == "random" ? random_seed++ : args.seed;
    agents::Problem problem{cg, v.cluster, *v.cost, seed};
    core::Decision d;
    try {
      d = v.registry.create(agent, {}, "decision agent")->propose(problem);
    } catch (const core::Error& e) {
      v.ctx.err << "gopt validate: " << spec.label << ": skipping " << agent << " (" << e.what()
                << ")\n";
      continue;
    }
    Case c;
    c.c.graph = spec.label;
    c.c.decision = agent == "random" ? "random_" + std::to_string(seed) : agent;
    c.agent_type = agent;
    c.seed = seed;
    c.decision = std::move(d);
    c.in_sample = v.profiled && on_one_device(c.decision);
    c.num_nodes = cg.num_nodes();
    c.graph = spec.graph;
    graph_cases.push_back(std::move(c));
  }
  return graph_cases;
}

// Profiled op times: one run of the graph with every op on device 0 (the single-device
// decision), separate from the cases' measurements; each op's median kernel time.
std::unique_ptr<hardware::ProfiledCostModel> profile_op_times(const Validation& v,
                                                              const GraphSpec& spec,
                                                              const core::Graph& graph) {
  v.ctx.err << "gopt validate: " << spec.label << " / profiling op times (every op on device 0, "
            << v.args.profile_steps << " timed steps)\n";
  auto r = v.backend->execute(graph, core::Decision{},
                              hardware::backend::ExecutionOptions()
                                  .with_warmup_steps(v.args.warmup)
                                  .with_timed_steps(v.args.profile_steps));
  if (r.cpu_share < 0.8) {
    v.ctx.err << "gopt validate: warning: " << spec.label << ": the profiling run had its CPU "
              << static_cast<int>(100 * r.cpu_share)
              << "% of a step; other processes inflate its op times\n";
  }
  return std::make_unique<hardware::ProfiledCostModel>(*v.cost, std::move(r.op_time_s),
                                                       /*measured_device=*/0);
}

// --ops-csv: a row per op of case `c`'s first measurement `r`: its measured time and the
// simulator's.
void append_op_rows(Validation& v, const GraphSpec& spec, const core::CompiledGraph& cg,
                    const simulator::Simulator& sim, const Case& c,
                    const hardware::backend::ExecutionResult& r) {
  for (core::NodeId node = 0; node < cg.num_nodes(); ++node) {
    auto i = static_cast<std::size_t>(node);
    core::DeviceId dev = c.decision.device_of(node);
    char row[160];
    std::snprintf(row, sizeof row, ",%d,%.6g,%lld,%.6g,%.6g\n", dev, cg.flops()[i],
                  static_cast<long long>(cg.bytes_read()[i] + cg.bytes_written()[i]),
                  r.op_time_s[i], sim.op_time(node, dev));
    v.ops_csv += "\"" + spec.label + "\"," + c.c.decision + "," + cg.node_names()[i] + "," +
                 cg.op_types()[i] + "," + std::string(core::to_string(cg.kind()[i])) + row;
  }
}

// Measures the cases in interleaved rounds, so that slow drifts of a shared machine's load
// spread over every decision instead of biasing one.
void measure_cases(Validation& v, const GraphSpec& spec, const core::Graph& graph,
                   const core::CompiledGraph& cg, const simulator::Simulator& sim,
                   std::vector<Case>& graph_cases) {
  const ValidateArgs& args = v.args;
  for (int round = 0; round < args.rounds; ++round) {
    for (auto& c : graph_cases) {
      v.ctx.err << "gopt validate: " << spec.label << " / " << c.c.decision << " (round "
                << round + 1 << "/" << args.rounds << ")\n";
      auto r = v.backend->execute(graph, c.decision,
                                  hardware::backend::ExecutionOptions()
                                      .with_warmup_steps(args.warmup)
                                      .with_timed_steps(args.steps));
      c.step_times_s.insert(c.step_times_s.end(), r.step_times_s.begin(), r.step_times_s.end());
      c.cpu_shares.push_back(r.cpu_share);
      c.proxy_ops = r.num_proxy_ops;
      if (!args.ops_csv.empty() && round == 0) append_op_rows(v, spec, cg, sim, c, r);
      if (round == 0 && &c == &graph_cases.front()) {
        v.proxy_total += r.num_proxy_ops;
        for (const auto& [type, n] : r.proxy_ops) v.proxy_types[type] += n;
      }
    }
  }
}

// The cases of one graph, simulated and measured.
std::vector<Case> validate_graph(Validation& v, const GraphSpec& spec) {
  core::Graph graph = datasets::load_graph(spec.graph, v.workloads, spec.load);
  auto cg = core::CompiledGraph::compile(graph);
  std::vector<Case> graph_cases = decision_cases(v, spec, cg);
  std::unique_ptr<hardware::ProfiledCostModel> profile_model;
  if (v.profiled) profile_model = profile_op_times(v, spec, graph);
  const hardware::CostModel& sim_cost =
      profile_model ? static_cast<const hardware::CostModel&>(*profile_model) : *v.cost;
  simulator::Simulator sim(cg, v.cluster, sim_cost,
                           simulator::SimulatorOptions().with_decision_source("decision"));
  for (auto& c : graph_cases) {
    c.sim = sim.simulate(c.decision);
    c.c.simulated_s = c.sim.step_time_s;
  }
  measure_cases(v, spec, graph, cg, sim, graph_cases);
  for (auto& c : graph_cases) {
    c.c.measured_s = median(c.step_times_s);
    auto [lo, hi] = std::minmax_element(c.step_times_s.begin(), c.step_times_s.end());
    c.spread = c.c.measured_s > 0 ? (*hi - *lo) / c.c.measured_s : 0;
  }
  return graph_cases;
}

Summary summarize(const std::vector<Case>& cases) {
  Summary s;
  std::vector<hardware::ValidationCase> plain;
  for (const auto& c : cases) plain.push_back(c.c);
  s.all = hardware::summarize_validation(plain);
  std::vector<hardware::ValidationCase> out_of_sample_cases;
  for (const auto& c : cases) {
    if (!c.in_sample) out_of_sample_cases.push_back(c.c);
  }
  s.out_of_sample = hardware::summarize_validation(out_of_sample_cases);
  return s;
}

int run_validate(const ValidateArgs& args, CliContext& ctx) {
  auto kind = hardware::backend::backend_kind_from_string(args.backend, "--backend");
  if (args.op_times != "calibrated" && args.op_times != "profiled") {
    throw core::InputError("--op-times", "",
                           "expected one of calibrated, profiled, found '" + args.op_times + "'");
  }
  // What would refuse the results goes before minutes of measuring them.
  if (!args.out.empty()) {
    core::check_can_write(args.out, "--out");
    std::error_code ec;
    if (!args.overwrite && std::filesystem::exists(args.out, ec)) {
      throw core::InputError(args.out, "",
                             "the results file exists; replace it with --overwrite, or choose "
                             "another --out");
    }
  }
  if (!args.ops_csv.empty()) core::check_can_write(args.ops_csv, "--ops-csv");
  Validation v(args, ctx, hardware::load_profile(args.profile));
  v.cost = hardware::make_cost_model(v.cluster);
  v.backend = hardware::backend::make_backend(kind, v.cluster.num_devices());
  datasets::register_builtin_workloads(v.workloads);
  agents::register_builtin_agents(v.registry);

  std::vector<GraphSpec> specs;
  const auto& graphs = args.graphs.empty() ? default_graphs() : args.graphs;
  for (const auto& s : graphs) {
    specs.push_back(parse_graph_spec(s));
    // The label keys the cases in the results file and the per-graph rank correlation.
    for (std::size_t i = 0; i + 1 < specs.size(); ++i) {
      if (specs[i].label != specs.back().label) continue;
      throw core::InputError("--graphs", "'" + s + "'",
                             "gives the same case label '" + specs.back().label + "' as '" +
                                 graphs[i] +
                                 "' (a file's label is its stem); name each graph once, or "
                                 "rename one of the files");
    }
  }
  std::vector<Case> cases;
  auto start = std::chrono::steady_clock::now();
  for (const auto& spec : specs) {
    for (auto& c : validate_graph(v, spec)) cases.push_back(std::move(c));
  }
  if (!args.ops_csv.empty()) core::write_text_file_atomic(args.ops_csv, v.ops_csv);
  Summary summary = summarize(cases);
  summary.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::vector<double> spreads;
  std::vector<double> shares;
  for (const auto& c : cases) {
    spreads.push_back(c.spread);
    shares.push_back(median(c.cpu_shares));
  }
  summary.median_spread = median(spreads);
  summary.median_share = median(shares);

  if (!args.out.empty()) write_results(v, specs, cases);
  if (args.json) {
    print_json(v, cases, summary);
  } else {
    print_report(v, cases, summary);
  }
  return kExitOk;
}

}  // namespace

void add_validate_command(CLI::App& app, CliContext& context) {
  auto args = std::make_shared<ValidateArgs>();
  auto* cmd = app.add_subcommand(
      "validate",
      "Run graphs under baseline decisions on a real backend and in the simulator; report\n"
      "the error (MAPE, largest) and the rank correlation (Kendall tau) of the step times");
  cmd->add_option("--profile", args->profile,
                  "Measured hardware profile of this machine (from `gopt calibrate`)")
      ->required();
  cmd->add_option("--backend", args->backend, "Execution backend: cpu or cuda")
      ->capture_default_str();
  cmd->add_option("--graphs", args->graphs,
                  "Graphs: NAME[:key=value,...] (suite name with overrides, a graph file, or an\n"
                  ".onnx model with batch=N,training=1); default: six reduced suite graphs");
  cmd->add_option("--decisions", args->decisions,
                  "Decisions per graph: single_device, round_robin, metis, human_expert, then "
                  "random ones")
      ->capture_default_str()
      ->check(positive_number());
  cmd->add_option("--rounds", args->rounds, "Interleaved measurement rounds per graph")
      ->capture_default_str()
      ->check(positive_number());
  cmd->add_option("--warmup", args->warmup, "Warm-up steps per measurement (discarded)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  cmd->add_option("--steps", args->steps, "Timed steps per measurement (median over rounds)")
      ->capture_default_str()
      ->check(positive_number());
  cmd->add_option("--op-times", args->op_times,
                  "Simulated op times: calibrated (the profile's cost model) or profiled (each\n"
                  "graph's own ops measured on the backend, every op on device 0)")
      ->capture_default_str();
  cmd->add_option("--profile-steps", args->profile_steps,
                  "Timed steps of the profiling run with --op-times profiled (per-op median)")
      ->capture_default_str()
      ->check(positive_number());
  cmd->add_option("--seed", args->seed, "Seed of the random decisions")->capture_default_str();
  cmd->add_option("--out", args->out, "Write the cases to an HDF5 results file (gopt table)");
  cmd->add_option("--ops-csv", args->ops_csv,
                  "Write every op's measured time (median) and cost-model time as CSV");
  cmd->add_flag("--overwrite", args->overwrite, "Replace an existing --out file");
  cmd->add_flag("--json", args->json,
                "Print one JSON object: mape, max_abs_pct_error, kendall_tau, cases, per_case");
  cmd->callback([&context, args] {
    context.action = [&context, args] { return run_validate(*args, context); };
  });
}

}  // namespace gopt::experiments
