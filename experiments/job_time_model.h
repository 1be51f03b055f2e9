// Expected run times of experiment jobs, for `gopt run`'s ETA. A job's cost is modelled
// before anything runs, from its graph's op count, whether its agent learns and its update
// budget: a learner's time grows with ops x updates (a GO update on gnmt_2, 17.7k ops,
// costs 5x one on rnnlm_2, 4.2k), a baseline's with ops. Finished jobs correct the model:
// an agent's own finished jobs set its seconds per unit of work, and the jobs of its class
// (learner or not) scale the prior for agents that have not finished one yet, so a run
// whose fast baselines finish first does not project its learners at baseline speed.
#pragma once

#include <cstdint>
#include <map>
#include <string>

namespace gopt::experiments {

/// What a job is, for its cost: agent label, op count (a pretraining unit: its training
/// graphs' total), whether the agent learns and its update budget.
struct JobCost {
  std::string agent;
  double nodes = 0;
  bool learner = false;
  std::int64_t steps = 0;  ///< the budget's updates (learners)

  /// The model's unit of work: ops x updates for a learner, ops for a baseline.
  [[nodiscard]] double work() const;
};

class JobTimeModel {
 public:
  /// Prior seconds per unit of work before any job of the class finished (measured on a
  /// two-core development machine: a GO update costs about 0.3 ms per op, a baseline
  /// about 5 us per op). Finished jobs rescale them; they only set the first ETA.
  static constexpr double kLearnerPriorSecondsPerWork = 3e-4;
  static constexpr double kBaselinePriorSecondsPerWork = 5e-6;

  /// A finished job took `seconds`.
  void add(const JobCost& job, double seconds);
  /// Expected seconds of `job`: from its agent's finished jobs, else the prior scaled by its
  /// class's finished jobs (measured / prior), else by every finished job's, else the prior.
  [[nodiscard]] double expected_s(const JobCost& job) const;
  [[nodiscard]] bool empty() const { return all_.count == 0; }

 private:
  struct Totals {
    double seconds = 0;
    double work = 0;
    double prior_s = 0;  ///< the prior's seconds for the same jobs
    std::int64_t count = 0;
  };
  static double prior_s(const JobCost& job);
  std::map<std::string, Totals> by_agent_;
  Totals learners_;
  Totals baselines_;
  Totals all_;
};

}  // namespace gopt::experiments
