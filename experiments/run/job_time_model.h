// Expected run times of experiment jobs, for `gopt run`'s ETA. A job's cost is modelled
// before anything runs, from its graph's op count, whether its agent learns and its update
// budget: a learner's time grows with updates x (ops + a fixed per-update cost; a GO update
// on gnmt_2, 17.7k ops, costs 5x one on rnnlm_2, 4.2k, while HDP's grouped updates cost
// about the same on 374 and 1,000 ops), a baseline's with ops. Finished jobs correct the
// model: an agent's own finished jobs set its seconds per unit of work, and finished
// learners scale the prior of learners that have not finished one yet (baselines likewise);
// a baseline's pace says nothing about a learner's, so it never scales one.
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

  /// The model's unit of work: updates x (ops + kLearnerFixedOps) for a learner, ops for a
  /// baseline.
  [[nodiscard]] double work() const;
};

class JobTimeModel {
 public:
  /// A learner update's fixed cost, in ops: what an update costs beyond its per-op work.
  static constexpr double kLearnerFixedOps = 2000;
  /// Prior seconds per unit of work before any job of the class finished (the quickstart
  /// on a two-core machine: HDP about 0.25 s and GO-one 0.1-0.2 s per update on 374 to
  /// 1,000 ops; METIS 45 us and HEFT 9 us per op). Finished jobs rescale them.
  static constexpr double kLearnerPriorSecondsPerWork = 1e-4;
  static constexpr double kBaselinePriorSecondsPerWork = 1e-5;

  /// A finished job took `seconds`.
  void add(const JobCost& job, double seconds);
  /// Expected seconds of `job`: from its agent's finished jobs, else the prior scaled by its
  /// class's finished jobs (measured / prior), else the prior.
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
