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
#include <memory>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>
#include <vector>

#include "agents/registry.h"
#include "core/compiled_graph.h"
#include "core/errors.h"
#include "core/graph_io.h"
#include "datasets/workload_registry.h"
#include "experiments/cli.h"
#include "experiments/hdf5_sink.h"
#include "experiments/machine_info.h"
#include "hardware/backend/backend.h"
#include "hardware/cost_model.h"
#include "hardware/profile.h"
#include "hardware/profiled_cost_model.h"
#include "hardware/validation.h"
#include "simulator/simulator.h"

namespace gopt::experiments {
namespace {

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

struct ValidateArgs {
  std::string profile;
  std::string backend = "cpu";
  std::vector<std::string> graphs;
  int decisions = 5;
  int rounds = 3;
  int warmup = 2;
  int steps = 5;
  std::string op_times = "calibrated";
  int profile_steps = 10;
  std::uint64_t seed = 1;
  std::string out;
  std::string ops_csv;
  bool overwrite = false;
  bool json = false;
};

struct GraphSpec {
  std::string label;  ///< "rnnlm_2[batch=8]", "model[batch=4]" for model.onnx
  std::string graph;  ///< suite name or path
  datasets::LoadOptions load;
};

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
        try {
          g.load.onnx_batch = std::stoll(value);
        } catch (const std::exception&) {
          throw core::InputError("--graphs", "'" + spec + "'", "batch: expected an integer");
        }
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

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  std::size_t n = v.size();
  if (n == 0) return 0;
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

std::string pct(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.1f%%", v);
  return buf;
}

/// Whether every op of `decision` runs on one device. Under profiled op times such a case is
/// in sample: the profiling run measured its op times on that device (type) with the same
/// neighbours, so its simulated time all but restates the profile's sum.
bool on_one_device(const core::Decision& decision) {
  if (!decision.placement || decision.placement->empty()) return true;
  const auto& p = *decision.placement;
  return std::all_of(p.begin(), p.end(), [&](core::DeviceId d) { return d == p.front(); });
}

struct Case {
  hardware::ValidationCase c;
  bool in_sample = false;  ///< profiled op times measured under this placement
  core::Decision decision;
  std::string agent_type;
  std::uint64_t seed = 0;
  simulator::SimulationResult sim;
  std::vector<double> step_times_s;
  std::vector<double> cpu_shares;
  double spread = 0;
  std::int32_t proxy_ops = 0;
  std::int64_t num_nodes = 0;
  std::string graph;
};

int run_validate(const ValidateArgs& args, CliContext& ctx) {
  auto kind = hardware::backend::backend_kind_from_string(args.backend, "--backend");
  if (args.op_times != "calibrated" && args.op_times != "profiled") {
    throw core::InputError("--op-times", "",
                           "expected one of calibrated, profiled, found '" + args.op_times + "'");
  }
  const bool profiled = args.op_times == "profiled";
  auto cluster = hardware::load_profile(args.profile);
  auto cost_model = hardware::make_cost_model(cluster);
  const hardware::CostModel& cost = *cost_model;
  auto backend = hardware::backend::make_backend(kind, cluster.num_devices());
  datasets::WorkloadRegistry workloads;
  datasets::register_builtin_workloads(workloads);
  agents::AgentRegistry registry;
  agents::register_builtin_agents(registry);

  std::vector<GraphSpec> specs;
  for (const auto& s : args.graphs.empty() ? default_graphs() : args.graphs) {
    specs.push_back(parse_graph_spec(s));
  }
  std::vector<Case> cases;
  std::string ops_csv = "graph,decision,op,op_type,kind,device,flops,bytes,measured_s,model_s\n";
  std::int64_t proxy_total = 0;
  std::map<std::string, std::int32_t> proxy_types;
  auto start = std::chrono::steady_clock::now();
  for (const auto& spec : specs) {
    core::Graph graph = datasets::load_graph(spec.graph, workloads, spec.load);
    auto cg = core::CompiledGraph::compile(graph);
    // The decisions: baselines in order, then random ones with successive seeds. Agents see
    // the profile's cost model in both modes, so that both validate the same decisions.
    std::vector<Case> graph_cases;
    std::uint64_t random_seed = args.seed;
    for (std::size_t i = 0; static_cast<int>(graph_cases.size()) < args.decisions; ++i) {
      std::string agent = i < decision_agents().size() ? decision_agents()[i] : "random";
      if (i >= decision_agents().size() + 16) break;
      std::uint64_t seed = agent == "random" ? random_seed++ : args.seed;
      agents::Problem problem{cg, cluster, cost, seed};
      core::Decision d;
      try {
        d = registry.create(agent, {}, "decision agent")->propose(problem);
      } catch (const core::Error& e) {
        ctx.err << "gopt validate: " << spec.label << ": skipping " << agent << " (" << e.what()
                << ")\n";
        continue;
      }
      d.fusion.reset();  // the backends run ops unfused; compare like with like
      Case c;
      c.c.graph = spec.label;
      c.c.decision = agent == "random" ? "random_" + std::to_string(seed) : agent;
      c.agent_type = agent;
      c.seed = seed;
      c.decision = std::move(d);
      c.in_sample = profiled && on_one_device(c.decision);
      c.num_nodes = cg.num_nodes();
      c.graph = spec.graph;
      graph_cases.push_back(std::move(c));
    }
    // Profiled op times: one run of the graph with every op on device 0 (the single-device
    // decision), separate from the cases' measurements; each op's median kernel time.
    std::unique_ptr<hardware::ProfiledCostModel> profile_model;
    if (profiled) {
      ctx.err << "gopt validate: " << spec.label << " / profiling op times (every op on device 0, "
              << args.profile_steps << " timed steps)\n";
      auto r = backend->execute(
          graph, core::Decision{},
          hardware::backend::ExecutionOptions().warmup(args.warmup).timed(args.profile_steps));
      if (r.cpu_share < 0.8) {
        ctx.err << "gopt validate: warning: " << spec.label << ": the profiling run had its CPU "
                << static_cast<int>(100 * r.cpu_share)
                << "% of a step; other processes inflate its op times\n";
      }
      profile_model = std::make_unique<hardware::ProfiledCostModel>(cost, std::move(r.op_time_s),
                                                                    /*measured_device=*/0);
    }
    const hardware::CostModel& sim_cost =
        profile_model ? static_cast<const hardware::CostModel&>(*profile_model) : cost;
    simulator::Simulator sim(cg, cluster, sim_cost,
                             simulator::SimulatorOptions().source("decision"));
    for (auto& c : graph_cases) {
      c.sim = sim.simulate(c.decision);
      c.c.simulated_s = c.sim.step_time_s;
    }
    // Measure in interleaved rounds so that slow drifts of a shared machine's load spread
    // over every decision instead of biasing one.
    for (int round = 0; round < args.rounds; ++round) {
      for (auto& c : graph_cases) {
        ctx.err << "gopt validate: " << spec.label << " / " << c.c.decision << " (round "
                << round + 1 << "/" << args.rounds << ")\n";
        auto r = backend->execute(
            graph, c.decision,
            hardware::backend::ExecutionOptions().warmup(args.warmup).timed(args.steps));
        c.step_times_s.insert(c.step_times_s.end(), r.step_times_s.begin(), r.step_times_s.end());
        c.cpu_shares.push_back(r.cpu_share);
        c.proxy_ops = r.num_proxy_ops;
        if (!args.ops_csv.empty() && round == 0) {
          for (core::NodeId v = 0; v < cg.num_nodes(); ++v) {
            auto i = static_cast<std::size_t>(v);
            core::DeviceId dev = c.decision.device_of(v);
            char row[160];
            std::snprintf(row, sizeof row, ",%d,%.6g,%lld,%.6g,%.6g\n", dev, cg.flops()[i],
                          static_cast<long long>(cg.bytes_read()[i] + cg.bytes_written()[i]),
                          r.op_time_s[i], sim.op_time(v, dev));
            ops_csv += "\"" + spec.label + "\"," + c.c.decision + "," + cg.node_names()[i] + "," +
                       cg.op_types()[i] + "," + std::string(core::to_string(cg.kind()[i])) + row;
          }
        }
        if (round == 0 && &c == &graph_cases.front()) {
          proxy_total += r.num_proxy_ops;
          for (const auto& [type, n] : r.proxy_ops) proxy_types[type] += n;
        }
      }
    }
    for (auto& c : graph_cases) {
      c.c.measured_s = median(c.step_times_s);
      auto [lo, hi] = std::minmax_element(c.step_times_s.begin(), c.step_times_s.end());
      c.spread = c.c.measured_s > 0 ? (*hi - *lo) / c.c.measured_s : 0;
      cases.push_back(std::move(c));
    }
  }
  if (!args.ops_csv.empty()) core::write_text_file_atomic(args.ops_csv, ops_csv);
  std::vector<hardware::ValidationCase> plain;
  for (const auto& c : cases) plain.push_back(c.c);
  auto summary = hardware::summarize_validation(plain);
  // Profiled op times were measured under the single-device placement: the statistics that
  // say how well the simulator predicts what it was not given are over the other cases.
  std::vector<hardware::ValidationCase> out_of_sample_cases;
  for (const auto& c : cases) {
    if (!c.in_sample) out_of_sample_cases.push_back(c.c);
  }
  auto out_of_sample = hardware::summarize_validation(out_of_sample_cases);
  double wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::vector<double> spreads;
  std::vector<double> shares;
  for (const auto& c : cases) {
    spreads.push_back(c.spread);
    shares.push_back(median(c.cpu_shares));
  }
  double median_spread = median(spreads);
  double median_share = median(shares);

  if (!args.out.empty()) {
    Hdf5Sink sink(args.out, Hdf5SinkOptions().mode(args.overwrite ? OpenMode::kOverwrite
                                                                  : OpenMode::kCreate));
    RunMetadata meta;
    meta.experiment = "validate";
    meta.table = "validation";
    meta.config_source = "gopt validate --profile " + args.profile;
    std::string yaml = "profile: " + args.profile + "\nbackend: " + args.backend +
                       "\ndecisions: " + std::to_string(args.decisions) +
                       "\nrounds: " + std::to_string(args.rounds) +
                       "\nsteps: " + std::to_string(args.steps) + "\nop_times: " + args.op_times +
                       (profiled ? "\nprofile_steps: " + std::to_string(args.profile_steps) : "") +
                       "\ngraphs:\n";
    for (const auto& s : specs) yaml += "  - \"" + s.label + "\"\n";
    meta.config_yaml = yaml;
    meta.provenance = process_provenance(yaml, ctx.command_line, "");
    meta.start_time = utc_now();
    sink.begin(meta);
    std::int64_t order = 0;
    for (const auto& c : cases) {
      RunResult r;
      r.key = ResultKey{c.c.graph, c.c.decision, c.seed};
      r.order = order++;
      r.agent_type = c.agent_type;
      r.graph = c.graph;
      r.hardware = cluster.name();
      r.problem_seed = c.seed;
      r.num_nodes = c.num_nodes;
      r.num_devices = cluster.num_devices();
      r.best_step_time_s = c.c.simulated_s;
      r.oom = c.sim.oom;
      r.oom_device = c.sim.oom_device;
      r.lower_bound_critical_path_s = c.sim.lower_bound_critical_path_s;
      r.lower_bound_work_s = c.sim.lower_bound_work_s;
      r.bytes_moved = c.sim.bytes_moved;
      r.samples = 1;
      r.decision = c.decision;
      for (const auto& d : c.sim.devices) {
        r.device_busy_s.push_back(d.busy_s);
        r.device_peak_memory_bytes.push_back(d.peak_memory_bytes);
      }
      r.measured_step_time_s = c.c.measured_s;
      r.measured_backend = backend->describe();
      r.measured_spread = c.spread;
      r.op_times = args.op_times;
      r.op_times_in_sample = c.in_sample;
      r.provenance = meta.provenance;
      sink.write(r);
    }
  }

  if (args.json) {
    nlohmann::json j;
    j["mape"] = summary.mape;
    j["max_abs_pct_error"] = summary.max_abs_pct_error;
    j["worst_case"] = summary.worst_case;
    j["mean_pct_error"] = summary.mean_pct_error;
    j["kendall_tau"] = summary.kendall_tau;
    j["mean_graph_kendall_tau"] = summary.mean_graph_kendall_tau;
    j["cases"] = summary.cases;
    j["graphs"] = summary.graphs;
    j["median_spread"] = median_spread;
    j["median_cpu_share"] = median_share;
    j["proxy_ops"] = proxy_total;
    j["profile"] = args.profile;
    j["backend"] = backend->describe();
    j["wall_s"] = wall_s;
    j["op_times"] = args.op_times;
    if (profiled) {
      j["profile_steps"] = args.profile_steps;
      j["cases_out_of_sample"] = out_of_sample.cases;
      if (out_of_sample.cases > 0) {
        j["mape_out_of_sample"] = out_of_sample.mape;
        j["max_abs_pct_error_out_of_sample"] = out_of_sample.max_abs_pct_error;
        j["mean_pct_error_out_of_sample"] = out_of_sample.mean_pct_error;
        j["kendall_tau_out_of_sample"] = out_of_sample.kendall_tau;
        j["mean_graph_kendall_tau_out_of_sample"] = out_of_sample.mean_graph_kendall_tau;
      } else {  // every decision ran on one device: nothing out of sample
        for (const char* key : {"mape_out_of_sample", "max_abs_pct_error_out_of_sample",
                                "mean_pct_error_out_of_sample", "kendall_tau_out_of_sample",
                                "mean_graph_kendall_tau_out_of_sample"}) {
          j[key] = nullptr;
        }
      }
    }
    for (const auto& c : cases) {
      nlohmann::json row = {{"graph", c.c.graph},
                            {"decision", c.c.decision},
                            {"measured_s", c.c.measured_s},
                            {"simulated_s", c.c.simulated_s},
                            {"pct_error", c.c.pct_error()},
                            {"spread", c.spread},
                            {"cpu_share", median(c.cpu_shares)}};
      if (profiled) row["in_sample"] = c.in_sample;
      j["per_case"].push_back(std::move(row));
    }
    ctx.out << j.dump() << "\n";
    return kExitOk;
  }
  auto& out = ctx.out;
  out << "backend: " << backend->describe() << "; profile: " << args.profile << " ("
      << cluster.name() << ")\n";
  if (profiled) {
    out << "op times: profiled (each graph's ops measured on device 0, median of "
        << args.profile_steps << " steps; * = in sample: every op on one device)\n\n";
  } else {
    out << "op times: calibrated (the profile's cost model)\n\n";
  }
  char line[512];
  std::snprintf(line, sizeof line, "%-40s %-16s %12s %12s %8s %7s %5s\n", "graph", "decision",
                "measured", "simulated", "error", "noise", "cpu");
  out << line;
  for (const auto& c : cases) {
    std::string g = c.c.graph.size() > 40 ? c.c.graph.substr(0, 37) + "..." : c.c.graph;
    std::string decision = c.c.decision + (c.in_sample ? " *" : "");
    std::snprintf(line, sizeof line, "%-40s %-16s %12s %12s %8s %6.1f%% %4.0f%%\n", g.c_str(),
                  decision.c_str(), core::format_seconds(c.c.measured_s).c_str(),
                  core::format_seconds(c.c.simulated_s).c_str(), pct(c.c.pct_error()).c_str(),
                  100 * c.spread, 100 * median(c.cpu_shares));
    out << line;
  }
  std::snprintf(line, sizeof line,
                "\ncases %d over %d graphs: MAPE %.1f%%, max |error| %.1f%% (%s), mean error "
                "%+.1f%%\nKendall tau %.3f over all cases, %.3f mean within a graph\n",
                summary.cases, summary.graphs, summary.mape, summary.max_abs_pct_error,
                summary.worst_case.c_str(), summary.mean_pct_error, summary.kendall_tau,
                summary.mean_graph_kendall_tau);
  out << line;
  if (profiled && out_of_sample.cases > 0) {
    std::snprintf(line, sizeof line,
                  "out of sample (%d cases not on one device): MAPE %.1f%%, max |error| %.1f%% "
                  "(%s), mean error %+.1f%%; Kendall tau %.3f, %.3f mean within a graph\n",
                  out_of_sample.cases, out_of_sample.mape, out_of_sample.max_abs_pct_error,
                  out_of_sample.worst_case.c_str(), out_of_sample.mean_pct_error,
                  out_of_sample.kendall_tau, out_of_sample.mean_graph_kendall_tau);
    out << line;
  } else if (profiled) {
    out << "out of sample: no case (every decision ran on one device)\n";
  }
  std::snprintf(line, sizeof line,
                "noise: median (max - min) / median of a case's measured steps %.1f%%; the "
                "busiest worker had its CPU %.0f%% of a step (median; 100%% on an idle machine)\n",
                100 * median_spread, 100 * median_share);
  out << line;
  if (proxy_total > 0) {
    out << "proxy kernels (same FLOPs and bytes, another kernel): " << proxy_total << " ops:";
    for (const auto& [type, n] : proxy_types) out << " " << type << " " << n;
    out << "\n";
  }
  if (!args.out.empty()) out << "results: " << args.out << " (gopt table " << args.out << ")\n";
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
