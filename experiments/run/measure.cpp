// Executing a results file's decisions on a real backend (experiments/run/measure.h).
#include "experiments/run/measure.h"

#include <algorithm>
#include <chrono>
#include <map>
#include <memory>
#include <ostream>
#include <utility>
#include <vector>

#include "agents/cpu_numerics.h"
#include "core/errors.h"
#include "experiments/config/config.h"
#include "experiments/results/hdf5_sink.h"
#include "experiments/results/provenance.h"
#include "experiments/results/results_file.h"
#include "experiments/run/decision_order.h"
#include "experiments/run/runner.h"
#include "experiments/tables/bound_refresh.h"
#include "hardware/backend/backend.h"
#include "hardware/profile.h"
#include "hardware/validation.h"
#include "simulator/simulator.h"

namespace gopt::experiments {
namespace {

using Clock = std::chrono::steady_clock;

// Why `cluster` (the hardware of `file`'s results) cannot be measured here with `options`,
// or "" when it can.
std::string refusal(const hardware::Cluster& cluster, const std::string& config_hardware,
                    const MeasureOptions& options) {
  const auto& p = cluster.provenance();
  if (p.kind != "measured") {
    return "its hardware '" + config_hardware + "' is a " +
           (p.kind.empty() ? std::string("simulated") : p.kind) +
           " profile, not one measured on this machine: gopt measure runs decisions on this "
           "machine's backend, which only a profile from `gopt calibrate` here describes; run "
           "the experiment with `hardware: PROFILE.yaml` from `gopt calibrate` (as "
           "experiments/configs/table1_real_cpu.yaml does)";
  }
  const std::string here = machine_description();
  if (machine_kind(p.machine) != machine_kind(here)) {
    return "its hardware '" + config_hardware + "' was measured on another machine (" + p.machine +
           "; this one is " + here +
           "): its simulated times describe that machine; calibrate this one (`gopt "
           "calibrate`) and run the experiment on that profile";
  }
  if (!options.profile.empty()) {
    const hardware::Cluster given = hardware::load_profile(options.profile);
    if (hardware::profile_yaml(given.spec()) != hardware::profile_yaml(cluster.spec())) {
      return "--profile " + options.profile +
             " is not the profile its results were simulated on ('" + config_hardware +
             "'): the simulated times beside the measured ones would be of other hardware; give "
             "that profile, or leave --profile out";
    }
  }
  return "";
}

// One distinct decision of a workload and the results that chose it.
struct Execution {
  core::Decision decision;
  std::vector<const RunResult*> results;
  double simulated_s = 0;
  std::vector<double> step_times_s;
  std::vector<double> cpu_shares;
  struct {
    std::int64_t fused_groups = 0, fused_ops = 0, fused_loop_ops = 0;
  } fused;  // what the backend ran the decision's fusion as
};

bool stop_requested(const MeasureOptions& options) {
  return options.stop != nullptr && options.stop->load();
}

}  // namespace

std::string backend_of(const hardware::Cluster& cluster) {
  const auto& devices = cluster.spec().devices;
  const bool cpu = std::all_of(devices.begin(), devices.end(), [](const hardware::DeviceSpec& d) {
    return d.type == "cpu_worker";
  });
  return cpu ? "cpu" : "cuda";
}

std::string machine_kind(const std::string& machine) {
  const auto colon = machine.find(": ");
  return colon == std::string::npos ? machine : machine.substr(colon + 2);
}

void check_measurable(const ExperimentConfig& config, const std::string& source,
                      const MeasureOptions& options) {
  const hardware::Cluster cluster = hardware::load_profile(config.hardware);
  const std::string why = refusal(cluster, config.hardware, options);
  if (!why.empty()) throw core::InputError(source, "hardware", why);
  if (!options.backend.empty() && options.backend != backend_of(cluster)) {
    throw core::InputError(source, "hardware",
                           "its hardware '" + config.hardware + "' describes the " +
                               backend_of(cluster) + " backend, not --backend " + options.backend);
  }
}

void check_measured_rewards(const ExperimentConfig& config, const std::string& source) {
  const auto measured = std::find_if(config.agents.begin(), config.agents.end(),
                                     [](const AgentConfig& a) { return a.reward == "measured"; });
  if (measured == config.agents.end()) return;
  try {
    check_measurable(config, source);
  } catch (const core::InputError& e) {
    throw core::InputError(
        source, "agents." + measured->name + ".reward",
        "measured rewards run each sample on this machine's backend, but " + e.problem());
  }
}

MeasureSummary measure_results(const std::string& path, const MeasureOptions& options) {
  const auto start = Clock::now();
  if (options.rounds < 1 || options.timed_steps < 1 || options.warmup_steps < 0) {
    throw core::InputError(path, "", "rounds and timed steps must be at least 1, warm-up steps 0");
  }
  ResultsFile file = read_results_file(path);
  if (file.format_version != kResultsFormatVersion) {
    throw core::InputError(path, "",
                           "results format version " + std::to_string(file.format_version) +
                               ": gopt measure adds to files of version " +
                               std::to_string(kResultsFormatVersion) +
                               " only; the file was left untouched");
  }
  if (std::any_of(file.results.begin(), file.results.end(),
                  [](const RunResult& r) { return r.measured_step_time_s >= 0; })) {
    throw core::InputError(path, "",
                           "holds simulator-validation results, which `gopt validate` measured "
                           "itself; gopt measure executes the decisions of `gopt run` results");
  }

  // Every config of the file is checked before anything runs.
  std::string backend_name = options.backend;
  core::DeviceId num_devices = 0;
  for_each_file_config(
      file, "its decisions cannot be measured",
      [&](const FileConfigSetup& setup, const std::vector<RunResult*>& /*results*/) {
        const std::string why = refusal(setup.cluster, setup.config.hardware, options);
        if (!why.empty()) throw core::InputError(path, "hardware", why);
        const std::string inferred = backend_of(setup.cluster);
        if (backend_name.empty()) backend_name = inferred;
        if (backend_name != inferred) {
          throw core::InputError(path, "hardware",
                                 "its hardware '" + setup.config.hardware + "' describes the " +
                                     inferred + " backend, not --backend " + backend_name);
        }
        if (num_devices != 0 && num_devices != setup.cluster.num_devices()) {
          throw core::InputError(path, "hardware",
                                 "its configs name hardware of different device counts; measure "
                                 "each in a file of its own");
        }
        num_devices = setup.cluster.num_devices();
      });
  if (file.results.empty()) return {};
  const auto kind = hardware::backend::backend_kind_from_string(backend_name, "--backend");
  auto backend = hardware::backend::make_backend(
      kind, num_devices, hardware::backend::BackendOptions().with_pin_workers(options.pin_workers));
  const auto options_run = hardware::backend::ExecutionOptions()
                               .with_warmup_steps(options.warmup_steps)
                               .with_timed_steps(options.timed_steps);

  Hdf5Sink sink(path, Hdf5SinkOptions().with_open_mode(OpenMode::kResume));
  MeasureSummary summary;
  bool stopped = false;
  for_each_file_config(
      file, "its decisions cannot be measured",
      [&](const FileConfigSetup& setup, const std::vector<RunResult*>& results) {
        if (stopped) return;
        std::map<std::string, std::vector<const RunResult*>> by_workload;
        for (const RunResult* r : results) {
          if (!options.remeasure && file.measurement(r->key) != nullptr) {
            ++summary.kept;
            continue;
          }
          by_workload[r->key.workload].push_back(r);
        }
        for (const auto& workload : setup.config.workloads) {
          const auto it = by_workload.find(workload.name);
          if (it == by_workload.end()) continue;
          const core::Graph graph = load_workload(workload, setup.workloads);
          const auto cg = core::CompiledGraph::compile(graph);
          std::vector<Execution> executions;
          std::map<core::Decision, std::size_t, DecisionLess> index;
          for (const RunResult* r : it->second) {
            if (r->num_nodes != cg.num_nodes()) {
              throw core::InputError(path, "/results/" + result_group_name(r->key),
                                     "decides " + std::to_string(r->num_nodes) +
                                         " ops, but workload '" + workload.name +
                                         "' rebuilds with " + std::to_string(cg.num_nodes()) +
                                         " (its generator changed since the run); measure it with "
                                         "the gopt that ran it");
            }
            auto [at, fresh] = index.emplace(r->decision, executions.size());
            if (fresh) executions.push_back({r->decision, {}, 0, {}, {}, {}});
            executions[at->second].results.push_back(r);
          }
          simulator::Simulator sim(cg, setup.cluster, *setup.cost,
                                   simulator::SimulatorOptions().with_decision_source(
                                       path + " (" + workload.name + ")"));
          for (auto& e : executions) e.simulated_s = sim.simulate(e.decision).step_time_s;
          for (int round = 0; round < options.rounds; ++round) {
            for (auto& e : executions) {
              if (stop_requested(options)) {
                stopped = true;
                return;
              }
              if (options.progress != nullptr) {
                *options.progress << "gopt measure: " << workload.name << " / "
                                  << e.results.front()->key.agent << " seed "
                                  << e.results.front()->key.seed;
                if (e.results.size() > 1) {
                  *options.progress << " (and " << e.results.size() - 1 << " identical)";
                }
                *options.progress << " (round " << round + 1 << "/" << options.rounds << ")\n";
              }
              const auto r = backend->execute(graph, e.decision, options_run);
              e.step_times_s.insert(e.step_times_s.end(), r.step_times_s.begin(),
                                    r.step_times_s.end());
              e.cpu_shares.push_back(r.cpu_share);
              e.fused = {r.fused_groups, r.fused_ops, r.fused_loop_ops};
            }
          }
          for (const auto& e : executions) {
            const double median_s = hardware::median(e.step_times_s);
            const auto [lo, hi] = std::minmax_element(e.step_times_s.begin(), e.step_times_s.end());
            for (std::size_t i = 0; i < e.results.size(); ++i) {
              Measurement m;
              m.key = e.results[i]->key;
              m.simulated_step_time_s = e.simulated_s;
              m.measured_step_time_s = median_s;
              m.measured_spread = median_s > 0 ? (*hi - *lo) / median_s : 0;
              m.step_times_s = e.step_times_s;
              m.repeats = static_cast<std::int64_t>(e.step_times_s.size());
              m.rounds = options.rounds;
              m.warmup_steps = options.warmup_steps;
              m.cpu_share = hardware::median(e.cpu_shares);
              m.fused_groups = e.fused.fused_groups;
              m.fused_ops = e.fused.fused_ops;
              m.fused_loop_ops = e.fused.fused_loop_ops;
              m.measured_backend = backend->describe();
              m.profile = setup.cluster.name();
              m.measured_at = utc_now();
              m.provenance =
                  process_provenance(config_yaml_of(file, *e.results[i]), options.command,
                                     agents::cpu_numerics_description());
              sink.write_measurement(m);
              ++summary.measured;
            }
          }
          summary.executions += executions.size();
          ++summary.workloads;
        }
      });
  summary.interrupted = stopped;
  summary.wall_s = std::chrono::duration<double>(Clock::now() - start).count();
  return summary;
}

}  // namespace gopt::experiments
