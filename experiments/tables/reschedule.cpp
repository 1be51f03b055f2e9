#include "experiments/tables/reschedule.h"

#include <map>
#include <set>
#include <vector>

#include "agents/agent.h"
#include "agents/baselines/list_scheduling.h"
#include "core/errors.h"
#include "experiments/results/version.h"
#include "experiments/run/runner.h"
#include "experiments/tables/bound_refresh.h"
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

}  // namespace gopt::experiments
