// The outputs of `gopt validate`: the results file, JSON and the report
// (experiments/cli/validate_report.h).
#include "experiments/cli/validate_report.h"

#include <algorithm>
#include <cstdio>
#include <nlohmann/json.hpp>
#include <ostream>

#include "core/units.h"
#include "experiments/results/hdf5_sink.h"
#include "experiments/results/provenance.h"

namespace gopt::experiments::validate {
namespace {

std::string pct(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%+.1f%%", v);
  return buf;
}

// The run's settings as the results file's config.
std::string validation_yaml(const ValidateArgs& args, bool profiled,
                            const std::vector<GraphSpec>& specs) {
  std::string yaml = "profile: " + args.profile + "\nbackend: " + args.backend +
                     "\ndecisions: " + std::to_string(args.decisions) +
                     "\nrounds: " + std::to_string(args.rounds) +
                     "\nsteps: " + std::to_string(args.steps) + "\nop_times: " + args.op_times +
                     (profiled ? "\nprofile_steps: " + std::to_string(args.profile_steps) : "") +
                     "\ngraphs:\n";
  for (const auto& s : specs) yaml += "  - \"" + s.label + "\"\n";
  return yaml;
}

// Case `c` as a validation result row.
RunResult result_of(const Validation& v, const Case& c, std::int64_t order,
                    const Provenance& provenance) {
  RunResult r;
  r.key = ResultKey{c.c.graph, c.c.decision, c.seed};
  r.order = order;
  r.agent_type = c.agent_type;
  r.graph = c.graph;
  r.hardware = v.cluster.name();
  r.problem_seed = c.seed;
  r.num_nodes = c.num_nodes;
  r.num_devices = v.cluster.num_devices();
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
  r.measured_backend = v.backend->describe();
  r.measured_spread = c.spread;
  r.op_times = v.args.op_times;
  r.op_times_in_sample = c.in_sample;
  r.provenance = provenance;
  return r;
}

}  // namespace

void write_results(const Validation& v, const std::vector<GraphSpec>& specs,
                   const std::vector<Case>& cases) {
  const ValidateArgs& args = v.args;
  Hdf5Sink sink(args.out, Hdf5SinkOptions().with_open_mode(args.overwrite ? OpenMode::kOverwrite
                                                                          : OpenMode::kCreate));
  RunMetadata meta;
  meta.experiment = "validate";
  meta.table = "validation";
  meta.config_source = "gopt validate --profile " + args.profile;
  meta.config_yaml = validation_yaml(args, v.profiled, specs);
  meta.provenance = process_provenance(meta.config_yaml, v.ctx.command_line, "");
  meta.start_time = utc_now();
  sink.begin(meta);
  std::int64_t order = 0;
  for (const auto& c : cases) sink.write(result_of(v, c, order++, meta.provenance));
}

void print_json(const Validation& v, const std::vector<Case>& cases, const Summary& s) {
  const ValidateArgs& args = v.args;
  nlohmann::json j;
  j["mape"] = s.all.mape;
  j["max_abs_pct_error"] = s.all.max_abs_pct_error;
  j["worst_case"] = s.all.worst_case;
  j["mean_pct_error"] = s.all.mean_pct_error;
  j["kendall_tau"] = s.all.kendall_tau;
  j["mean_graph_kendall_tau"] = s.all.mean_graph_kendall_tau;
  j["cases"] = s.all.cases;
  j["graphs"] = s.all.graphs;
  j["median_spread"] = s.median_spread;
  j["median_cpu_share"] = s.median_share;
  j["proxy_ops"] = v.proxy_total;
  j["profile"] = args.profile;
  j["backend"] = v.backend->describe();
  j["wall_s"] = s.wall_s;
  j["op_times"] = args.op_times;
  if (v.profiled) {
    j["profile_steps"] = args.profile_steps;
    j["cases_out_of_sample"] = s.out_of_sample.cases;
    if (s.out_of_sample.cases > 0) {
      j["mape_out_of_sample"] = s.out_of_sample.mape;
      j["max_abs_pct_error_out_of_sample"] = s.out_of_sample.max_abs_pct_error;
      j["mean_pct_error_out_of_sample"] = s.out_of_sample.mean_pct_error;
      j["kendall_tau_out_of_sample"] = s.out_of_sample.kendall_tau;
      j["mean_graph_kendall_tau_out_of_sample"] = s.out_of_sample.mean_graph_kendall_tau;
    } else {  // every decision ran on one device: nothing out of sample
      for (const char* key :
           {"mape_out_of_sample", "max_abs_pct_error_out_of_sample", "mean_pct_error_out_of_sample",
            "kendall_tau_out_of_sample", "mean_graph_kendall_tau_out_of_sample"}) {
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
    if (v.profiled) row["in_sample"] = c.in_sample;
    j["per_case"].push_back(std::move(row));
  }
  v.ctx.out << j.dump() << "\n";
}

void print_report(const Validation& v, const std::vector<Case>& cases, const Summary& s) {
  const ValidateArgs& args = v.args;
  auto& out = v.ctx.out;
  out << "backend: " << v.backend->describe() << "; profile: " << args.profile << " ("
      << v.cluster.name() << ")\n";
  if (v.profiled) {
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
  const auto& all = s.all;
  std::snprintf(line, sizeof line,
                "\ncases %d over %d graphs: MAPE %.1f%%, max |error| %.1f%% (%s), mean error "
                "%+.1f%%\nKendall tau %.3f over all cases, %.3f mean within a graph\n",
                all.cases, all.graphs, all.mape, all.max_abs_pct_error, all.worst_case.c_str(),
                all.mean_pct_error, all.kendall_tau, all.mean_graph_kendall_tau);
  out << line;
  const auto& oos = s.out_of_sample;
  if (v.profiled && oos.cases > 0) {
    std::snprintf(line, sizeof line,
                  "out of sample (%d cases not on one device): MAPE %.1f%%, max |error| %.1f%% "
                  "(%s), mean error %+.1f%%; Kendall tau %.3f, %.3f mean within a graph\n",
                  oos.cases, oos.mape, oos.max_abs_pct_error, oos.worst_case.c_str(),
                  oos.mean_pct_error, oos.kendall_tau, oos.mean_graph_kendall_tau);
    out << line;
  } else if (v.profiled) {
    out << "out of sample: no case (every decision ran on one device)\n";
  }
  std::snprintf(line, sizeof line,
                "noise: median (max - min) / median of a case's measured steps %.1f%%; the "
                "busiest worker had its CPU %.0f%% of a step (median; 100%% on an idle machine)\n",
                100 * s.median_spread, 100 * s.median_share);
  out << line;
  if (v.proxy_total > 0) {
    out << "proxy kernels (same FLOPs and bytes, another kernel): " << v.proxy_total << " ops:";
    for (const auto& [type, n] : v.proxy_types) out << " " << type << " " << n;
    out << "\n";
  }
  if (!args.out.empty()) out << "results: " << args.out << " (gopt table " << args.out << ")\n";
}

}  // namespace gopt::experiments::validate
