// `gopt calibrate --backend cpu|cuda --devices N --out PROFILE.yaml [--name NAME]
//                 [--quick] [--json]`: measures the machine with a real backend
// (microbenchmarks per op kind over a range of shapes, copies between devices; on CUDA also
// the CUDA Toolkit probes), fits the roofline cost model by least squares and writes a
// measured hardware profile with its provenance (docs/hardware-backend.md).
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <ostream>
#include <string>

#include "core/errors.h"
#include "core/graph_io.h"
#include "experiments/cli.h"
#include "experiments/machine_info.h"
#include "experiments/version.h"
#include "hardware/backend/backend.h"
#include "hardware/backend/microbench.h"
#include "hardware/calibration.h"
#include "hardware/profile.h"
#if defined(GOPT_HAVE_CUDA_PROBES)
#include "hardware/cuda/cuda_probes.h"
#include "hardware/cuda/cuda_profile.h"
#endif

namespace gopt::experiments {
namespace {

struct CalibrateArgs {
  std::string backend = "cpu";
  int devices = 2;
  std::string out;
  std::string name;
  bool quick = false;
  int steps = 5;
  int rounds = 3;
  std::string samples;
  bool json = false;
};

std::string pct(double fraction) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.1f%%", 100.0 * fraction);
  return buf;
}

std::string sci(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.3g", v);
  return buf;
}

// The measured device type and the interconnect of `devices` CPU workers: every worker
// links to a `host_memory` switch, each hop carrying half the fitted copy latency, so that a
// worker-to-worker route (two hops) costs the fitted latency plus bytes at the fitted rate.
hardware::ClusterSpec cpu_spec(const hardware::RooflineFit& fit,
                               const hardware::ExecutorFit& executor,
                               const std::optional<hardware::LinkFit>& link, int devices,
                               const std::string& name) {
  hardware::ClusterSpec spec;
  spec.name = name;
  spec.description = "CPU backend: " + std::to_string(devices) +
                     " worker threads with one LibTorch intra-op thread each, measured by "
                     "gopt calibrate";
  long pages = ::sysconf(_SC_PHYS_PAGES);
  long page_size = ::sysconf(_SC_PAGE_SIZE);
  core::Bytes memory = pages > 0 && page_size > 0 ? static_cast<core::Bytes>(pages) * page_size
                                                  : (core::Bytes{8} << 30);
  for (int d = 0; d < devices; ++d) {
    hardware::DeviceSpec dev("cpu" + std::to_string(d), "cpu_worker");
    dev.peak_flops(core::DType::kFloat32, fit.peak_flops_per_s)
        .memory_bandwidth(fit.memory_bandwidth_bytes_per_s)
        .memory_capacity(memory / devices)
        .launch_overhead(fit.launch_overhead_s)
        .executor_overhead(executor.per_op_s)
        .copy_engine(false);  // the receiving worker performs each copy (torch_backend)
    dev.compute_efficiency = fit.compute_efficiency;
    dev.memory_efficiency = fit.memory_efficiency;
    // Ops of these kinds compute nothing (a reshape is a view): they cost the executor
    // overhead alone.
    for (auto k : {core::OpKind::kInput, core::OpKind::kVariable, core::OpKind::kReshape,
                   core::OpKind::kControl}) {
      dev.without_kernel(k);
    }
    dev.source =
        "Executor overhead per op: slope of the step time of NoOp chains against their length. "
        "Roofline and time curves: fitted by least squares (relative error) to chains of "
        "identical LibTorch ops per op kind, less the executor overhead of each op and its "
        "input placeholders; peak and bandwidth are the best rates the fit found (efficiency 1 "
        "for the best kind). Input, variable, reshape and control ops do no work in the backend.";
    spec.add_device(dev);
  }
  if (devices > 1 && link) {
    spec.add_switch("host_memory");
    for (int d = 0; d < devices; ++d) {
      hardware::LinkSpec l("cpu" + std::to_string(d), "host_memory");
      l.bandwidth(link->bandwidth_bytes_per_s).latency(link->latency_s / 2);
      l.source =
          "fitted to the durations of copies between two workers (from the copy's start on "
          "the receiving worker to its landing); half the latency per hop";
      spec.add_link(l);
    }
  }
  return spec;
}

std::string fit_notes(const hardware::RooflineFit& fit, const hardware::ExecutorFit& executor,
                      const std::optional<hardware::LinkFit>& link) {
  std::string n = "Executor overhead " + core::format_seconds(executor.per_op_s) + " per op and " +
                  core::format_seconds(executor.per_step_s) + " per step over " +
                  std::to_string(executor.residuals.samples) + " NoOp chains (rms " +
                  pct(executor.residuals.rms_rel_error) + "). Roofline fit over " +
                  std::to_string(fit.overall.samples) + " microbenchmarks: relative error rms " +
                  pct(fit.overall.rms_rel_error) + ", max " + pct(fit.overall.max_rel_error) +
                  ". Per kind (rms / max):";
  for (int k = 0; k < core::kNumOpKinds; ++k) {
    const auto& r = fit.residuals[static_cast<std::size_t>(k)];
    if (r.samples == 0) continue;
    n += " " + std::string(core::to_string(static_cast<core::OpKind>(k))) + " " +
         pct(r.rms_rel_error) + "/" + pct(r.max_rel_error) + " (" + std::to_string(r.samples) +
         ");";
  }
  if (link) {
    n += " Copy fit over " + std::to_string(link->residuals.samples) + " copies: latency " +
         core::format_seconds(link->latency_s) + ", bandwidth " +
         core::format_bytes(link->bandwidth_bytes_per_s) + "/s, rms " +
         pct(link->residuals.rms_rel_error) + ", max " + pct(link->residuals.max_rel_error) +
         (link->degenerate ? " (times did not grow with size: not a least-squares fit)" : "") + ".";
  }
  return n;
}

int run_calibrate(const CalibrateArgs& args, CliContext& ctx) {
  auto kind = hardware::backend::backend_kind_from_string(args.backend, "--backend");
  if (args.out.empty()) throw core::InputError("--out", "", "expected a profile file to write");
  std::string name = args.name.empty() ? std::string(hardware::backend::to_string(kind)) +
                                             std::to_string(args.devices) + "_" + host_name()
                                       : args.name;
  hardware::ClusterSpec spec;
  std::string notes;
  nlohmann::json summary;
  if (kind == hardware::backend::BackendKind::kCuda) {
#if defined(GOPT_HAVE_CUDA_PROBES)
    if (auto why = hardware::cuda::cuda_probe_unavailable_reason()) {
      throw hardware::backend::BackendUnavailable("gopt calibrate --backend cuda: " + *why);
    }
    ctx.err << "gopt calibrate: running the CUDA probes\n";
    auto probes = hardware::cuda::run_cuda_probes();
    if (static_cast<int>(probes.gpus.size()) < args.devices) {
      throw hardware::backend::BackendUnavailable("gopt calibrate --backend cuda: asked for " +
                                                  std::to_string(args.devices) + " GPUs, found " +
                                                  std::to_string(probes.gpus.size()));
    }
    spec = hardware::cuda::cuda_profile_spec(probes, name, machine_description());
    notes = spec.provenance.notes;
    if (auto why = hardware::backend::cuda_unavailable_reason()) {
      notes += " Per-kind efficiencies not fitted: " + *why + ".";
    }
#else
    throw hardware::backend::BackendUnavailable(
        "gopt calibrate --backend cuda: this gopt was built without the CUDA Toolkit "
        "(GOPT_WITH_CUDA found no nvcc), so the CUDA probes are not available");
#endif
  } else {
    auto backend = hardware::backend::make_backend(kind, args.devices);
    hardware::backend::MicrobenchOptions options;
    options.steps(args.quick ? 1 : 2, args.quick ? 2 : args.steps);
    options.rounds = args.quick ? 1 : args.rounds;
    if (args.quick) options.scale(0.1).chain(4);
    if (args.quick) options.working_set_bytes = core::Bytes{1} << 20;
    const bool tty = ::isatty(STDERR_FILENO) != 0;
    options.progress = [&ctx, tty](const std::string& line) {
      ctx.err << (tty ? "\r\033[Kgopt calibrate: " : "gopt calibrate: ") << line
              << (tty ? "" : "\n") << std::flush;
    };
    auto m = hardware::backend::measure_for_calibration(*backend, options);
    if (tty) ctx.err << "\n";
    auto executor = hardware::fit_executor_overhead(m.executor);
    auto kernels = hardware::without_executor_overhead(m.ops, executor.per_op_s);
    auto fit = hardware::fit_roofline(kernels);
    if (!args.samples.empty()) {
      // measured_s: chain time per op; kernel_s: less the executor overhead of the op and
      // its placeholders (what the fits describe); fitted_s: the roofline's kernel time.
      std::string csv = "kind,label,flops,bytes,measured_s,kernel_s,fitted_s\n";
      for (std::size_t i = 0; i < m.ops.size(); ++i) {
        const auto& s = kernels[i];
        char row[128];
        std::snprintf(row, sizeof row, ",%.6g,%lld,%.6g,%.6g,%.6g\n", s.flops,
                      static_cast<long long>(s.bytes), m.ops[i].time_s, s.time_s,
                      hardware::predict(fit, s));
        csv += std::string(core::to_string(s.kind)) + "," + s.label + row;
      }
      for (const auto& c : m.copies) {
        char row[96];
        std::snprintf(row, sizeof row, "copy,copy,0,%lld,%.6g,,\n", static_cast<long long>(c.bytes),
                      c.time_s);
        csv += row;
      }
      core::write_text_file_atomic(args.samples, csv);
    }
    std::optional<hardware::LinkFit> link;
    if (args.devices > 1) {
      try {
        link = hardware::fit_link(m.copies);
      } catch (const core::InputError& e) {
        // Every copy drowned in noise (a loaded machine, --quick): keep the profile usable
        // with copies at the fitted memory bandwidth and no latency, and say so.
        ctx.err << "gopt calibrate: warning: " << e.what()
                << "; copies are costed at the memory bandwidth\n";
        link = hardware::LinkFit{0, fit.memory_bandwidth_bytes_per_s, {}, true};
      }
      if (link->degenerate) {
        ctx.err << "gopt calibrate: warning: copy times did not grow with size (noise); "
                   "latency and bandwidth taken from the smallest and largest copies\n";
      }
    }
    auto curves = hardware::build_time_curves(kernels, fit);
    spec = cpu_spec(fit, executor, link, args.devices, name);
    auto shapes = hardware::build_shape_tables(kernels);
    for (auto& dev : spec.devices) {
      dev.op_type_curves = curves.op_types;
      dev.kind_curves = curves.kinds;
      dev.op_type_shapes = shapes;
    }
    char parallel[320] = "";
    if (args.devices > 1) {
      std::snprintf(parallel, sizeof parallel,
                    " Two independent chains ran %.2fx as fast on two workers as on one%s.",
                    m.parallel_speedup,
                    m.parallel_speedup < 1.5 ? " (the workers shared a processor: other load "
                                               "on this machine; multi-device times are not "
                                               "representative)"
                                             : "");
      summary["parallel_speedup"] = m.parallel_speedup;
    }
    notes = fit_notes(fit, executor, link) + parallel + " Time curves of " +
            std::to_string(curves.op_types.size()) +
            " op types (the calibrated cost model uses them): leave-one-out interpolation error "
            "rms " +
            pct(curves.leave_one_out.rms_rel_error) + ", max " +
            pct(curves.leave_one_out.max_rel_error) + " over " +
            std::to_string(curves.leave_one_out.samples) + " interior points.";
    summary["curves"] = {{"op_types", curves.op_types.size()},
                         {"leave_one_out_rms_rel_error", curves.leave_one_out.rms_rel_error},
                         {"leave_one_out_max_rel_error", curves.leave_one_out.max_rel_error}};
    summary["launch_overhead_s"] = fit.launch_overhead_s;
    summary["executor_overhead_s"] = executor.per_op_s;
    summary["executor_step_s"] = executor.per_step_s;
    summary["peak_flops_per_s"] = fit.peak_flops_per_s;
    summary["memory_bandwidth_bytes_per_s"] = fit.memory_bandwidth_bytes_per_s;
    summary["rms_rel_error"] = fit.overall.rms_rel_error;
    summary["max_rel_error"] = fit.overall.max_rel_error;
    summary["samples"] = fit.overall.samples;
    for (int k = 0; k < core::kNumOpKinds; ++k) {
      auto i = static_cast<std::size_t>(k);
      if (!fit.fitted[i]) continue;
      summary["kinds"][std::string(core::to_string(static_cast<core::OpKind>(k)))] = {
          {"compute_efficiency", fit.compute_efficiency[i]},
          {"memory_efficiency", fit.memory_efficiency[i]},
          {"rms_rel_error", fit.residuals[i].rms_rel_error},
          {"max_rel_error", fit.residuals[i].max_rel_error},
          {"samples", fit.residuals[i].samples}};
    }
    if (link) {
      summary["copy"] = {{"latency_s", link->latency_s},
                         {"bandwidth_bytes_per_s", link->bandwidth_bytes_per_s},
                         {"rms_rel_error", link->residuals.rms_rel_error},
                         {"max_rel_error", link->residuals.max_rel_error}};
    }
  }
  spec.provenance.kind = "measured";
  spec.provenance.date = utc_now();
  spec.provenance.machine = machine_description();
  spec.provenance.sources.push_back("gopt calibrate --backend " + args.backend + " --devices " +
                                    std::to_string(args.devices) + (args.quick ? " --quick" : "") +
                                    " (gopt " + std::string(version()) + ", git " +
                                    std::string(git_revision()) + ")");
  spec.provenance.notes = notes;
  std::string yaml = hardware::profile_yaml(spec);
  (void)hardware::parse_profile_yaml(yaml, args.out);  // what we write must load
  core::write_text_file_atomic(args.out, yaml);
  (void)hardware::load_profile(args.out);

  summary["profile"] = args.out;
  summary["backend"] = args.backend;
  summary["devices"] = args.devices;
  if (args.json) {
    ctx.out << summary.dump() << "\n";
    return kExitOk;
  }
  auto& out = ctx.out;
  out << "profile:  " << args.out << " (" << name << ", " << args.devices << " " << args.backend
      << " devices)\n";
  out << "machine:  " << spec.provenance.machine << "\n";
  if (summary.contains("launch_overhead_s")) {
    out << "executor overhead "
        << core::format_seconds(summary["executor_overhead_s"].get<double>()) << " per op, "
        << "launch overhead " << core::format_seconds(summary["launch_overhead_s"].get<double>())
        << ", peak " << sci(summary["peak_flops_per_s"].get<double>()) << " FLOP/s, bandwidth "
        << core::format_bytes(summary["memory_bandwidth_bytes_per_s"].get<double>()) << "/s\n";
    out << "kind             compute  memory   rms err  max err  samples\n";
    for (auto it = summary["kinds"].begin(); it != summary["kinds"].end(); ++it) {
      char line[160];
      std::snprintf(line, sizeof line, "%-16s %-8s %-8s %-8s %-8s %d\n", it.key().c_str(),
                    sci((*it)["compute_efficiency"].get<double>()).c_str(),
                    sci((*it)["memory_efficiency"].get<double>()).c_str(),
                    pct((*it)["rms_rel_error"].get<double>()).c_str(),
                    pct((*it)["max_rel_error"].get<double>()).c_str(), (*it)["samples"].get<int>());
      out << line;
    }
  }
  out << "fit:      " << notes << "\n";
  if (summary.contains("parallel_speedup") && summary["parallel_speedup"].get<double>() < 1.5) {
    char speedup[32];
    std::snprintf(speedup, sizeof speedup, "%.2f", summary["parallel_speedup"].get<double>());
    ctx.err << "gopt calibrate: warning: two workers ran only " << speedup
            << "x as fast as one on independent work: this machine does not give them a "
               "processor each now (other processes), so multi-device measurements will "
               "not match a simulator that runs devices in parallel\n";
  }
  return kExitOk;
}

}  // namespace

void add_calibrate_command(CLI::App& app, CliContext& context) {
  auto args = std::make_shared<CalibrateArgs>();
  auto* cmd = app.add_subcommand(
      "calibrate",
      "Measure this machine with a real backend (op microbenchmarks, copies; CUDA probes on\n"
      "GPUs), fit the roofline cost model and write a measured hardware profile");
  cmd->add_option("--backend", args->backend, "Execution backend: cpu or cuda")
      ->capture_default_str();
  cmd->add_option("--devices", args->devices,
                  "Devices to calibrate (CPU: worker threads; CUDA: GPUs)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--out", args->out, "Profile file to write (YAML)")->required();
  cmd->add_option("--name", args->name, "Profile name (default <backend><N>_<host>)");
  cmd->add_flag("--quick", args->quick,
                "Small shapes and few repetitions: a smoke test, not a calibration");
  cmd->add_option("--steps", args->steps, "Timed steps per microbenchmark (median)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--rounds", args->rounds,
                  "Interleaved rounds over all microbenchmarks (median kept)")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  cmd->add_option("--samples", args->samples,
                  "Also write every measurement and its fitted time as CSV");
  cmd->add_flag("--json", args->json, "Print the fit as one JSON object");
  cmd->callback([&context, args] {
    context.action = [&context, args] { return run_calibrate(*args, context); };
  });
}

}  // namespace gopt::experiments
