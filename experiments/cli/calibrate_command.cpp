// `gopt calibrate --backend cpu|cuda --devices N --out PROFILE.yaml [--name NAME]
//                 [--quick] [--json]`: measures the machine with a real backend
// (microbenchmarks per op kind over a range of shapes, copies between devices; on CUDA also
// the CUDA Toolkit probes), fits the roofline cost model by least squares and writes a
// measured hardware profile with its provenance (docs/hardware-backend.md).
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <algorithm>
#include <cstdio>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <ostream>
#include <stdexcept>
#include <string>

#include "core/errors.h"
#include "core/graph_io.h"
#include "experiments/cli/cli.h"
#include "experiments/results/provenance.h"
#include "experiments/results/version.h"
#include "experiments/run/measure.h"
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
  bool fusion_only = false;
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

// What a backend's microbenchmarks measured, fitted: the roofline, the executor overhead
// per op, time curves and shape tables per op type, the copy fit (two or more devices) and
// the summary for --json.
struct BackendCalibration {
  hardware::RooflineFit fit;
  hardware::ExecutorFit executor;
  std::optional<hardware::LinkFit> link;
  hardware::TimeCurves curves;
  std::map<std::string, hardware::ShapeTable> shapes;
  hardware::FusedLoopRatio fused_loop;  ///< empty on CUDA (no fused loops there)
  std::string notes;
  nlohmann::json summary;
};

// A device measured through a backend: the fitted roofline and executor overhead, the time
// curves and shape tables, no copy engine (the receiving worker performs each copy, CPU and
// CUDA alike: torch_backend), and the kinds that launch no kernel.
void apply_calibration(hardware::DeviceSpec& dev, const BackendCalibration& c) {
  dev.peak_flops(core::DType::kFloat32, c.fit.peak_flops_per_s)
      .memory_bandwidth(c.fit.memory_bandwidth_bytes_per_s)
      .launch_overhead(c.fit.launch_overhead_s)
      .executor_overhead(c.executor.per_op_s)
      .copy_engine(false);
  dev.compute_efficiency = c.fit.compute_efficiency;
  dev.memory_efficiency = c.fit.memory_efficiency;
  // Ops of these kinds compute nothing (a reshape is a view): they cost the executor
  // overhead alone.
  for (auto k : {core::OpKind::kInput, core::OpKind::kVariable, core::OpKind::kReshape,
                 core::OpKind::kControl}) {
    dev.without_kernel(k);
  }
  dev.op_type_curves = c.curves.op_types;
  dev.kind_curves = c.curves.kinds;
  dev.op_type_shapes = c.shapes;
  dev.fused_loop_ratio = c.fused_loop;
}

// What the fused-loop samples found, in prose: the ratio at each size.
std::string fusion_notes(const std::vector<hardware::FusionSample>& samples,
                         const hardware::FusedLoopRatio& ratio) {
  std::string n = "Fused loops over " + std::to_string(samples.size()) +
                  " groups of elementwise ops (fused against unfused kernels):";
  for (std::size_t i = 0; i < ratio.bytes.size(); ++i) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%s %.2fx at %s", i ? "," : "", ratio.ratio[i],
                  core::format_bytes(static_cast<double>(ratio.bytes[i])).c_str());
    n += buf;
  }
  return n + " per op.";
}

nlohmann::json fusion_summary(const std::vector<hardware::FusionSample>& samples,
                              const hardware::FusedLoopRatio& ratio) {
  nlohmann::json j;
  j["bytes"] = ratio.bytes;
  j["ratio"] = ratio.ratio;
  nlohmann::json list = nlohmann::json::array();
  for (const auto& s : samples) {
    list.push_back({{"mix", s.mix},
                    {"bytes_written", s.bytes_written},
                    {"members", s.members},
                    {"fused_s", s.fused_s},
                    {"unfused_s", s.unfused_s}});
  }
  j["samples"] = std::move(list);
  return j;
}

// The measured device type and the interconnect of `devices` CPU workers: every worker
// links to a `host_memory` switch, each hop carrying half the fitted copy latency, so that a
// worker-to-worker route (two hops) costs the fitted latency plus bytes at the fitted rate.
hardware::ClusterSpec cpu_spec(const BackendCalibration& c, int devices, const std::string& name) {
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
    dev.memory_capacity(memory / devices);
    apply_calibration(dev, c);
    dev.source =
        "Executor overhead per op: slope of the step time of NoOp chains against their length. "
        "Roofline and time curves: fitted by least squares (relative error) to chains of "
        "identical LibTorch ops per op kind, less the executor overhead of each op and its "
        "input placeholders; peak and bandwidth are the best rates the fit found (efficiency 1 "
        "for the best kind). Input, variable, reshape and control ops do no work in the backend.";
    spec.add_device(dev);
  }
  if (devices > 1 && c.link) {
    spec.add_switch("host_memory");
    for (int d = 0; d < devices; ++d) {
      hardware::LinkSpec l("cpu" + std::to_string(d), "host_memory");
      l.bandwidth(c.link->bandwidth_bytes_per_s).latency(c.link->latency_s / 2);
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

// --samples: every microbenchmark and copy as CSV. measured_s: chain time per op; kernel_s:
// less the executor overhead of the op and its placeholders (what the fits describe);
// fitted_s: the roofline's kernel time.
void write_samples_csv(const std::string& path, const hardware::backend::CalibrationMeasurements& m,
                       const std::vector<hardware::OpSample>& kernels,
                       const hardware::RooflineFit& fit) {
  std::string csv = "kind,label,flops,bytes,measured_s,kernel_s,fitted_s\n";
  for (std::size_t i = 0; i < m.ops.size(); ++i) {
    const auto& s = kernels[i];
    char row[128];
    std::snprintf(row, sizeof row, ",%.6g,%lld,%.6g,%.6g,%.6g\n", s.flops,
                  static_cast<long long>(s.bytes), m.ops[i].time_s, s.time_s,
                  hardware::predict(fit, s));
    csv += std::string(core::to_string(s.kind)) + "," + s.label + row;
  }
  for (const auto& copy : m.copies) {
    char row[96];
    std::snprintf(row, sizeof row, "copy,copy,0,%lld,%.6g,,\n", static_cast<long long>(copy.bytes),
                  copy.time_s);
    csv += row;
  }
  core::write_text_file_atomic(path, csv);
}

// The copies between two workers as a link: fitted, or, when every copy drowned in noise (a
// loaded machine, --quick), at the fitted memory bandwidth and no latency, with a warning.
hardware::LinkFit fit_copies(const hardware::backend::CalibrationMeasurements& m,
                             const hardware::RooflineFit& fit, CliContext& ctx) {
  hardware::LinkFit link;
  try {
    link = hardware::fit_link(m.copies);
  } catch (const core::InputError& e) {
    ctx.err << "gopt calibrate: warning: " << e.what()
            << "; copies are costed at the memory bandwidth\n";
    link = hardware::LinkFit{0, fit.memory_bandwidth_bytes_per_s, {}, true};
  }
  if (link.degenerate) {
    ctx.err << "gopt calibrate: warning: copy times did not grow with size (noise); "
               "latency and bandwidth taken from the smallest and largest copies\n";
  }
  return link;
}

// The calibration's notes (what the fits found, in prose) and its JSON summary.
void describe(const hardware::backend::CalibrationMeasurements& m, const CalibrateArgs& args,
              BackendCalibration& c) {
  const auto& fit = c.fit;
  auto& summary = c.summary;
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
  c.notes = fit_notes(fit, c.executor, c.link) + parallel + " Time curves of " +
            std::to_string(c.curves.op_types.size()) +
            " op types (the calibrated cost model uses them): leave-one-out interpolation "
            "error rms " +
            pct(c.curves.leave_one_out.rms_rel_error) + ", max " +
            pct(c.curves.leave_one_out.max_rel_error) + " over " +
            std::to_string(c.curves.leave_one_out.samples) + " interior points.";
  summary["curves"] = {{"op_types", c.curves.op_types.size()},
                       {"leave_one_out_rms_rel_error", c.curves.leave_one_out.rms_rel_error},
                       {"leave_one_out_max_rel_error", c.curves.leave_one_out.max_rel_error}};
  summary["launch_overhead_s"] = fit.launch_overhead_s;
  summary["executor_overhead_s"] = c.executor.per_op_s;
  summary["executor_step_s"] = c.executor.per_step_s;
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
  if (c.link) {
    summary["copy"] = {{"latency_s", c.link->latency_s},
                       {"bandwidth_bytes_per_s", c.link->bandwidth_bytes_per_s},
                       {"rms_rel_error", c.link->residuals.rms_rel_error},
                       {"max_rel_error", c.link->residuals.max_rel_error}};
  }
}

// Runs the microbenchmarks, executor chains and (two or more devices) copy chains on a
// backend and fits them.
BackendCalibration calibrate_backend(hardware::backend::BackendKind kind, const CalibrateArgs& args,
                                     CliContext& ctx) {
  auto backend = hardware::backend::make_backend(kind, args.devices);
  hardware::backend::MicrobenchOptions options;
  options.with_warmup_steps(args.quick ? 1 : 2).with_timed_steps(args.quick ? 2 : args.steps);
  options.rounds = args.quick ? 1 : args.rounds;
  if (args.quick) options.with_size_scale(0.1).with_chain_length(4);
  if (args.quick) options.working_set_bytes = core::Bytes{1} << 20;
  const bool tty = ::isatty(STDERR_FILENO) != 0;
  options.progress = [&ctx, tty](const std::string& line) {
    ctx.err << (tty ? "\r\033[Kgopt calibrate: " : "gopt calibrate: ") << line << (tty ? "" : "\n")
            << std::flush;
  };
  auto m = hardware::backend::measure_for_calibration(*backend, options);
  if (tty) ctx.err << "\n";
  BackendCalibration c;
  c.executor = hardware::fit_executor_overhead(m.executor);
  auto kernels = hardware::without_executor_overhead(m.ops, c.executor.per_op_s);
  c.fit = hardware::fit_roofline(kernels);
  if (!args.samples.empty()) write_samples_csv(args.samples, m, kernels, c.fit);
  if (args.devices > 1) c.link = fit_copies(m, c.fit, ctx);
  c.curves = hardware::build_time_curves(kernels, c.fit);
  c.shapes = hardware::build_shape_tables(kernels);
  describe(m, args, c);
  if (!m.fusion.empty()) {
    c.fused_loop = hardware::fit_fused_loop_ratio(m.fusion, c.executor.per_op_s);
    c.notes += " " + fusion_notes(m.fusion, c.fused_loop);
    c.summary["fused_loop_ratio"] = fusion_summary(m.fusion, c.fused_loop);
  }
  return c;
}

// The profile of `--backend cuda`: the CUDA probes' devices and links and, with a
// CUDA-enabled LibTorch, per-kind efficiencies fitted as on the CPU. Sets `notes` and
// `summary`.
hardware::ClusterSpec cuda_spec(const CalibrateArgs& args, const std::string& name, CliContext& ctx,
                                std::string& notes, nlohmann::json& summary) {
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
  hardware::ClusterSpec spec =
      hardware::cuda::cuda_profile_spec(probes, name, machine_description());
  notes = spec.provenance.notes;
  if (auto why = hardware::backend::cuda_unavailable_reason()) {
    notes += " Per-kind efficiencies not fitted: " + *why + ".";
    return spec;
  }
  // A CUDA-enabled LibTorch: the GPUs' op times as the backend runs them (one host worker
  // per GPU, synchronised after every op), fitted as on the CPU. The probes keep the links,
  // the memory capacity and the devices' names.
  ctx.err << "gopt calibrate: microbenchmarks on the LibTorch CUDA backend\n";
  auto c = calibrate_backend(hardware::backend::BackendKind::kCuda, args, ctx);
  spec.description =
      "CUDA GPUs through the LibTorch CUDA backend (one host worker per GPU, synchronised "
      "after every op), measured by gopt calibrate; links by the CUDA probes";
  for (auto& dev : spec.devices) {
    char probed[200];
    std::snprintf(probed, sizeof probed,
                  " (the probes measured %.3g FP32 FLOP/s, %.3g B/s and %.3g s per launch)",
                  dev.peak_flops_per_s[static_cast<std::size_t>(core::DType::kFloat32)],
                  dev.memory_bandwidth_bytes_per_s, dev.launch_overhead_s);
    apply_calibration(dev, c);
    dev.source =
        "Roofline, executor overhead and time curves fitted to LibTorch CUDA op chains as "
        "gopt calibrate does on the CPU, on the first " +
        std::to_string(args.devices) + " GPU(s)" + probed;
  }
  notes += " " + c.notes;
  summary = std::move(c.summary);
  return spec;
#else
  (void)args;
  (void)name;
  (void)ctx;
  (void)notes;
  (void)summary;
  throw hardware::backend::BackendUnavailable(
      "gopt calibrate --backend cuda: this gopt was built without the CUDA Toolkit "
      "(GOPT_WITH_CUDA found no nvcc), so the CUDA probes are not available");
#endif
}

// Stamps the profile's provenance and writes it to --out, checking that it loads.
void write_profile(hardware::ClusterSpec& spec, const CalibrateArgs& args,
                   const std::string& notes) {
  spec.provenance.kind = "measured";
  spec.provenance.date = utc_now();
  spec.provenance.machine = machine_description();
  spec.provenance.sources.push_back("gopt calibrate --backend " + args.backend + " --devices " +
                                    std::to_string(args.devices) + (args.quick ? " --quick" : "") +
                                    " (gopt " + std::string(version()) + ", git " +
                                    std::string(git_revision()) + ")");
  spec.provenance.notes = notes;
  std::string yaml = hardware::profile_yaml(spec);
  try {
    (void)hardware::parse_profile_yaml(yaml, args.out);  // what we write must load
  } catch (const core::InputError& e) {
    // A writer bug: keep the measured profile beside --out rather than lose the run.
    const std::string kept = args.out + ".unreadable";
    core::write_text_file_atomic(kept, yaml);
    throw std::logic_error(std::string("internal error: the profile gopt calibrate wrote does "
                                       "not read back (") +
                           e.what() + "); the measured profile is kept in " + kept);
  }
  core::write_text_file_atomic(args.out, yaml);
  (void)hardware::load_profile(args.out);
}

// The human-readable report: the profile, the machine, the fitted constants per op kind and
// the fit's notes; a warning when two workers did not run in parallel.
void print_report(const CalibrateArgs& args, const std::string& name,
                  const hardware::ClusterSpec& spec, const std::string& notes,
                  nlohmann::json& summary, CliContext& ctx) {
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
}

// --fusion-only: the fused-loop samples alone, their ratio added to the existing measured
// CPU profile --out of this machine; every other number of it is kept.
int run_fusion_only(const CalibrateArgs& args, CliContext& ctx) {
  if (args.backend != "cpu") {
    throw core::InputError(
        "--fusion-only", "",
        "fused loops run on the CPU backend only; found --backend " + args.backend);
  }
  const hardware::Cluster existing = hardware::load_profile(args.out);
  hardware::ClusterSpec spec = existing.spec();
  const bool cpu = !spec.devices.empty() && std::all_of(spec.devices.begin(), spec.devices.end(),
                                                        [](const hardware::DeviceSpec& d) {
                                                          return d.type == "cpu_worker";
                                                        });
  if (spec.provenance.kind != "measured" || !cpu) {
    throw core::InputError(args.out, "provenance",
                           "--fusion-only adds to a CPU profile measured by gopt calibrate; this "
                           "one is not (run gopt calibrate without --fusion-only)");
  }
  if (machine_kind(spec.provenance.machine) != machine_kind(machine_description())) {
    throw core::InputError(args.out, "provenance.machine",
                           "measured on another machine (" + spec.provenance.machine +
                               "; this one is " + machine_description() + ")");
  }
  core::check_can_write(args.out, "--out");
  auto backend = hardware::backend::make_backend(hardware::backend::BackendKind::kCpu, 1);
  hardware::backend::MicrobenchOptions options;
  options.with_warmup_steps(args.quick ? 1 : 2).with_timed_steps(args.quick ? 2 : args.steps);
  options.rounds = args.quick ? 1 : args.rounds;
  if (args.quick) options.with_size_scale(0.1);
  if (args.quick) options.working_set_bytes = core::Bytes{1} << 20;
  const bool tty = ::isatty(STDERR_FILENO) != 0;
  options.progress = [&ctx, tty](const std::string& line) {
    ctx.err << (tty ? "\r\033[Kgopt calibrate: " : "gopt calibrate: ") << line << (tty ? "" : "\n")
            << std::flush;
  };
  const auto samples = hardware::backend::measure_fused_loops(*backend, options);
  if (tty) ctx.err << "\n";
  const core::Seconds overhead = spec.devices.front().executor_overhead_s;
  const auto ratio = hardware::fit_fused_loop_ratio(samples, overhead);
  for (auto& dev : spec.devices) dev.fused_loop_ratio = ratio;
  const std::string notes = fusion_notes(samples, ratio);
  spec.provenance.notes += " " + notes;
  spec.provenance.sources.push_back(
      "gopt calibrate --fusion-only" + std::string(args.quick ? " --quick" : "") + " (gopt " +
      std::string(version()) + ", git " + std::string(git_revision()) + ", " + utc_now() + ")");
  std::string yaml = hardware::profile_yaml(spec);
  (void)hardware::parse_profile_yaml(yaml, args.out);  // what we write must load
  core::write_text_file_atomic(args.out, yaml);
  if (args.json) {
    nlohmann::json summary = fusion_summary(samples, ratio);
    summary["profile"] = args.out;
    ctx.out << summary.dump() << "\n";
  } else {
    ctx.out << "profile:  " << args.out << " (fused loops added; its other numbers kept)\n"
            << "fit:      " << notes << "\n";
  }
  return kExitOk;
}

int run_calibrate(const CalibrateArgs& args, CliContext& ctx) {
  if (args.fusion_only) return run_fusion_only(args, ctx);
  auto kind = hardware::backend::backend_kind_from_string(args.backend, "--backend");
  if (args.out.empty()) throw core::InputError("--out", "", "expected a profile file to write");
  core::check_can_write(args.out, "--out");  // before minutes of measuring
  if (!args.samples.empty()) core::check_can_write(args.samples, "--samples");
  std::string name = args.name.empty() ? std::string(hardware::backend::to_string(kind)) +
                                             std::to_string(args.devices) + "_" + host_name()
                                       : args.name;
  hardware::ClusterSpec spec;
  std::string notes;
  nlohmann::json summary;
  if (kind == hardware::backend::BackendKind::kCuda) {
    spec = cuda_spec(args, name, ctx, notes, summary);
  } else {
    auto c = calibrate_backend(kind, args, ctx);
    spec = cpu_spec(c, args.devices, name);
    notes = c.notes;
    summary = std::move(c.summary);
  }
  write_profile(spec, args, notes);
  summary["profile"] = args.out;
  summary["backend"] = args.backend;
  summary["devices"] = args.devices;
  if (args.json) {
    ctx.out << summary.dump() << "\n";
    return kExitOk;
  }
  print_report(args, name, spec, notes, summary, ctx);
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
      ->check(positive_number());
  cmd->add_option("--out", args->out, "Profile file to write (YAML)")->required();
  cmd->add_option("--name", args->name, "Profile name (default <backend><N>_<host>)");
  cmd->add_flag("--quick", args->quick,
                "Small shapes and few repetitions: a smoke test, not a calibration");
  cmd->add_option("--steps", args->steps, "Timed steps per microbenchmark (median)")
      ->capture_default_str()
      ->check(positive_number());
  cmd->add_option("--rounds", args->rounds,
                  "Interleaved rounds over all microbenchmarks (median kept)")
      ->capture_default_str()
      ->check(positive_number());
  cmd->add_option("--samples", args->samples,
                  "Also write every measurement and its fitted time as CSV");
  cmd->add_flag("--json", args->json, "Print the fit as one JSON object");
  cmd->add_flag("--fusion-only", args->fusion_only,
                "Measure only the fused loops (docs/hardware-backend.md \"Fusion\") and add "
                "their ratio to --out, an existing CPU profile measured on this machine, "
                "keeping every other number of it");
  cmd->callback([&context, args] {
    context.action = [&context, args] { return run_calibrate(*args, context); };
  });
}

}  // namespace gopt::experiments
