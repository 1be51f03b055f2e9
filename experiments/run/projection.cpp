#include "experiments/run/projection.h"

#include <algorithm>
#include <iomanip>
#include <limits>
#include <ostream>
#include <set>
#include <tuple>
#include <utility>

#include "core/errors.h"
#include "core/strings.h"

namespace gopt::experiments {
namespace {

// A finished job of the costs file: its rows (several for a training-set job), what it
// cost and what it was.
struct MeasuredJob {
  JobCost cost;
  std::string workload;  ///< "" for a training-set job (several rows)
  double wall_s = 0;
};

// The agents that `plan` runs as training-set jobs (go_pretrain): their rows of one seed
// are one job. Their wall times differ in the last digits (each row is timed as it is
// written), so they are not what tells a job's rows apart.
std::set<std::string> training_set_agents(const Plan& plan) {
  std::set<std::string> agents;
  for (const auto& job : plan.jobs) {
    if (job.training_set) agents.insert(job.agent->name);
  }
  return agents;
}

std::vector<MeasuredJob> measured_jobs(const std::vector<RunResult>& results,
                                       const std::set<std::string>& training_agents) {
  // A training-set job: (agent, seed, its rows); any other job: (agent, seed, workload).
  std::map<std::tuple<std::string, std::uint64_t, std::string>, std::vector<const RunResult*>>
      by_job;
  for (const auto& r : results) {
    const bool set = training_agents.count(r.key.agent) > 0;
    by_job[{r.key.agent, r.key.seed, set ? std::string() : r.key.workload}].push_back(&r);
  }
  std::vector<MeasuredJob> jobs;
  for (const auto& [key, rows] : by_job) {
    MeasuredJob job;
    job.cost.agent = std::get<0>(key);
    job.workload = std::get<2>(key);
    for (const RunResult* r : rows) {
      job.wall_s = std::max(job.wall_s, r->wall_s);
      job.cost.nodes += static_cast<double>(r->num_nodes);
      job.cost.learner = job.cost.learner || r->learner;
      // The updates it ran (one curve point each), not its budget: fine-tuning stops early.
      job.cost.steps =
          std::max(job.cost.steps, static_cast<std::int64_t>(r->learning_curve.size()));
    }
    jobs.push_back(std::move(job));
  }
  return jobs;
}

std::string workload_of(const PlannedJob& job) {
  return job.training_set ? "" : job.rows.front().key.workload;
}

}  // namespace

double list_schedule_makespan(const Plan& plan, const std::vector<double>& job_s,
                              std::size_t workers) {
  const std::size_t n = plan.jobs.size();
  std::vector<std::size_t> waiting(n);
  for (std::size_t j = 0; j < n; ++j) waiting[j] = j;
  std::stable_sort(waiting.begin(), waiting.end(),
                   [&](std::size_t a, std::size_t b) { return job_s[a] > job_s[b]; });
  constexpr double kNotYet = std::numeric_limits<double>::infinity();
  std::vector<double> end(n, kNotYet);
  std::vector<double> free_at(std::max<std::size_t>(1, workers), 0.0);
  double makespan = 0;
  const auto ready_at = [&](std::size_t j) {
    const auto producer = plan.jobs[j].waits_for;
    return producer < 0 ? 0.0 : end[static_cast<std::size_t>(producer)];
  };
  while (!waiting.empty()) {
    auto worker = std::min_element(free_at.begin(), free_at.end());
    const double now = *worker;
    // The longest job ready now, else the one whose producer ends first.
    auto pick = std::find_if(waiting.begin(), waiting.end(),
                             [&](std::size_t j) { return ready_at(j) <= now; });
    if (pick == waiting.end()) {
      pick = std::min_element(waiting.begin(), waiting.end(), [&](std::size_t a, std::size_t b) {
        return ready_at(a) < ready_at(b);
      });
    }
    const std::size_t j = *pick;
    waiting.erase(pick);
    // A producer never waits itself (build_plan), so while consumers wait for an
    // unscheduled producer, that producer is ready and picked first.
    const double start = std::max(now, ready_at(j));
    end[j] = start + job_s[j];
    *worker = end[j];
    makespan = std::max(makespan, end[j]);
  }
  return makespan;
}

Projection project_run(const Plan& plan, const std::vector<RunResult>& measured,
                       std::size_t workers, const std::string& costs_file,
                       const std::map<std::string, double>& plan_ops) {
  std::map<std::string, double> ops_of(plan_ops);
  for (const auto& r : measured) ops_of.emplace(r.key.workload, static_cast<double>(r.num_nodes));
  JobTimeModel by_agent;
  std::map<std::pair<std::string, std::string>, std::pair<double, double>> rate;  // s, work
  const auto jobs = measured_jobs(measured, training_set_agents(plan));
  for (const auto& job : jobs) {
    by_agent.add(job.cost, job.wall_s);
    auto& [seconds, work] = rate[{job.cost.agent, job.workload}];
    seconds += job.wall_s;
    work += job.cost.work();
  }

  Projection p;
  p.workers = std::max<std::size_t>(1, workers);
  p.measured_jobs = jobs.size();
  for (const auto& job : plan.jobs) {
    for (const auto& row : job.rows) {
      if (ops_of.count(row.key.workload) == 0) {
        throw core::InputError(costs_file, "",
                               "no result for workload '" + row.key.workload +
                                   "' to take its op count from; run the "
                                   "config at a small budget into it first");
      }
    }
    const JobCost cost = job_cost(plan, job, ops_of);
    const auto it = rate.find({cost.agent, workload_of(job)});
    const double s = it != rate.end() && it->second.second > 0
                         ? it->second.first / it->second.second * cost.work()
                         : by_agent.expected_s(cost);
    p.job_s.push_back(s);
    p.agent_s[cost.agent] += s;
    p.work_s += s;
  }
  p.makespan_s = list_schedule_makespan(plan, p.job_s, p.workers);
  return p;
}

void print_projection(const Plan& plan, const Projection& projection, std::ostream& out) {
  out << "projected from " << projection.measured_jobs << " measured jobs:\n";
  for (const auto& [agent, s] : projection.agent_s) {
    out << "  " << std::left << std::setw(24) << agent << core::format_seconds(s) << "\n";
  }
  out << "total work: " << core::format_seconds(projection.work_s) << " in " << plan.jobs.size()
      << " jobs; on " << projection.workers
      << (projection.workers == 1 ? " worker" : " workers (--jobs x --ranks)")
      << ", longest first: " << core::format_seconds(projection.makespan_s) << "\n";
}

}  // namespace gopt::experiments
