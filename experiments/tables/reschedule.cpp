#include "experiments/tables/reschedule.h"

#include <map>
#include <memory>
#include <optional>
#include <set>
#include <vector>

#include "agents/agent.h"
#include "agents/baselines/list_scheduling.h"
#include "core/errors.h"
#include "experiments/results/version.h"
#include "experiments/run/runner.h"
#include "experiments/tables/bound_refresh.h"
#include "hardware/profile.h"
#include "simulator/simulator.h"

namespace gopt::experiments {

Reschedule reschedule_critical_path(ResultsFile& file) {
  for (const auto& r : file.results) {
    if (r.measured_step_time_s >= 0) {
      throw core::InputError(file.path, "--schedule",
                             "result '" + r.key.text() +
                                 "' was measured on hardware in its own order (gopt validate); "
                                 "its simulated time is not re-scheduled");
    }
  }
  Reschedule done;
  std::set<std::string> labels;
  for_each_file_config(
      file, "the decisions cannot be re-simulated",
      [&](const FileConfigSetup& setup, const std::vector<RunResult*>& results) {
        const hardware::Cluster& cluster = setup.cluster;
        const hardware::CostModel& cost = *setup.cost;
        std::map<std::string, std::vector<RunResult*>> by_workload;
        for (RunResult* r : results) by_workload[r->key.workload].push_back(r);
        for (const auto& w : setup.config.workloads) {
          const auto it = by_workload.find(w.name);
          if (it == by_workload.end()) continue;
          const core::CompiledGraph graph = compile_workload(w, setup.workloads);
          const agents::Problem problem{graph, cluster, cost, 0};
          simulator::Simulator sim(
              graph, cluster, cost,
              simulator::SimulatorOptions().with_decision_source(file.path + " (" + w.name + ")"));
          for (RunResult* r : it->second) {
            core::Decision decision = r->decision;
            decision.priority = agents::critical_path_priorities(problem, decision);
            const auto& s = sim.simulate(decision);
            r->best_step_time_s = s.step_time_s;
            r->oom = s.oom;
            r->oom_device = s.oom_device;
            r->bytes_moved = s.bytes_moved;
            r->device_busy_s.clear();
            r->device_peak_memory_bytes.clear();
            for (const auto& d : s.devices) {
              r->device_busy_s.push_back(d.busy_s);
              r->device_peak_memory_bytes.push_back(d.peak_memory_bytes);
            }
            ++done.results;
          }
          labels.insert(w.name);
        }
      });
  done.workloads = labels.size();  // a workload of several configs counts once
  return done;
}

std::string reschedule_note(const Reschedule& done) {
  return "Step times re-simulated by gopt " + std::string(version()) + " (revision " +
         std::string(git_revision()) + ") for " + std::to_string(done.results) + " results on " +
         std::to_string(done.workloads) +
         " workloads, each decision's placement (and fusion) run in critical-path order "
         "(--schedule critical_path: its priorities replaced by the longest path to the end "
         "first), not in the order the agent chose or the executor's default; the "
         "convergence table, which reads the recorded learning curves, is left out.";
}

Resimulation resimulate_measurements(ResultsFile& file, const std::string& hardware) {
  std::map<std::string, Measurement*> measured;  // by result key text
  for (auto& m : file.measurements) measured[m.key.text()] = &m;
  Resimulation done;
  std::set<std::string> labels;
  std::optional<hardware::Cluster> other;
  std::unique_ptr<hardware::CostModel> other_cost;
  if (!hardware.empty()) {
    other = hardware::load_profile(hardware);
    other_cost = hardware::make_cost_model(*other);
  }
  for_each_file_config(
      file, "its measured decisions cannot be re-simulated",
      [&](const FileConfigSetup& setup, const std::vector<RunResult*>& results) {
        const hardware::Cluster& cluster = other ? *other : setup.cluster;
        const hardware::CostModel& cost = other ? *other_cost : *setup.cost;
        if (cluster.num_devices() != setup.cluster.num_devices()) {
          throw core::InputError(hardware, "devices",
                                 "has " + std::to_string(cluster.num_devices()) +
                                     " devices, but the decisions of " + file.path + " are for " +
                                     std::to_string(setup.cluster.num_devices()) + " (" +
                                     setup.cluster.name() + ")");
        }
        std::map<std::string, std::vector<RunResult*>> by_workload;
        for (RunResult* r : results) {
          if (measured.count(r->key.text()) != 0) by_workload[r->key.workload].push_back(r);
        }
        for (const auto& w : setup.config.workloads) {
          const auto it = by_workload.find(w.name);
          if (it == by_workload.end()) continue;
          const core::CompiledGraph graph = compile_workload(w, setup.workloads);
          simulator::Simulator sim(
              graph, cluster, cost,
              simulator::SimulatorOptions().with_decision_source(file.path + " (" + w.name + ")"));
          for (RunResult* r : it->second) {
            if (r->num_nodes != graph.num_nodes()) {
              throw core::InputError(file.path, "/results/" + result_group_name(r->key),
                                     "decides " + std::to_string(r->num_nodes) +
                                         " ops, but workload '" + w.name + "' rebuilds with " +
                                         std::to_string(graph.num_nodes()) +
                                         " (its generator changed since the run)");
            }
            measured.at(r->key.text())->simulated_step_time_s =
                sim.simulate(r->decision).step_time_s;
            ++done.measurements;
          }
          labels.insert(w.name);
        }
        done.hardware = cluster.name();
      });
  done.workloads = labels.size();
  return done;
}

std::string resimulation_note(const Resimulation& done) {
  return "Simulated times beside the measurements re-simulated by gopt " + std::string(version()) +
         " (revision " + std::string(git_revision()) + ") on " + done.hardware + " for " +
         std::to_string(done.measurements) + " measurements on " + std::to_string(done.workloads) +
         " workloads (--resimulate): the measured tables show this cost model's error on the "
         "decisions measured; the other tables keep the recorded times.";
}

}  // namespace gopt::experiments
