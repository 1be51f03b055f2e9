// How long a run would take, projected from the measured job costs of an earlier run:
// `gopt run CONFIG --dry-run --costs RESULTS.h5 [--jobs N] [--ranks M]`. Each planned job's
// time is its update budget times its graph's ops times the seconds per unit of work its
// (agent, workload) took in the measured file (JobTimeModel's unit: updates x (ops + a fixed
// per-update cost), so 1000 updates cost five times 200); an agent measured on other
// workloads only takes that agent's rate, one never measured the job time model's prior
// scaled by its class. The run's wall time is the makespan of the jobs on N x M workers,
// each free worker taking the longest job whose artifact is ready, as a shared run deals
// jobs longest first (experiments/run/team/team.h).
//
//   const Plan plan = build_plan(config, registry);
//   const Projection p = project_run(plan, read_results_file("results/table1.h5").results, 16);
//   print_projection(plan, p, std::cout);
#pragma once

#include <cstddef>
#include <iosfwd>
#include <map>
#include <string>
#include <vector>

#include "experiments/results/result_sink.h"
#include "experiments/run/plan.h"

namespace gopt::experiments {

/// A run's projected times.
struct Projection {
  std::vector<double> job_s;              ///< per job of the plan, seconds
  std::map<std::string, double> agent_s;  ///< per agent label, the sum of its jobs
  double work_s = 0;                      ///< all jobs, one after the other
  double makespan_s = 0;                  ///< on `workers` in parallel
  std::size_t workers = 1;
  std::size_t measured_jobs = 0;  ///< finished jobs read from the costs file
};

/// The makespan of the plan's jobs, job j taking job_s[j], on `workers` parallel workers:
/// whenever a worker is free it takes the longest waiting job whose producer
/// (PlannedJob::waits_for) has finished, else waits for the first producer to finish.
[[nodiscard]] double list_schedule_makespan(const Plan& plan, const std::vector<double>& job_s,
                                            std::size_t workers);

/// Projects `plan` from the finished results of an earlier run (`measured`; the rows of one
/// seed of an agent that `plan` runs as a training-set job are that one job, its wall time
/// their longest). A workload's op count comes from
/// `plan_ops` (the plan's loaded graphs, by workload label), else from its results in
/// `measured`; throws core::InputError naming `costs_file` when neither has it.
[[nodiscard]] Projection project_run(const Plan& plan, const std::vector<RunResult>& measured,
                                     std::size_t workers, const std::string& costs_file = "",
                                     const std::map<std::string, double>& plan_ops = {});

/// Per agent, the projected seconds of its jobs; then the total work and the makespan.
void print_projection(const Plan& plan, const Projection& projection, std::ostream& out);

}  // namespace gopt::experiments
