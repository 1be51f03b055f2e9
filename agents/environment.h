// Problem and Environment: what an agent optimizes. A Problem is one graph on one cluster
// under one cost model; an Environment wraps a Problem with a Simulator and turns a
// Decision into an evaluation, counting samples and remembering the best decision seen.
// With a StepTimer, the step times of its evaluations are the timer's (measured rewards).
#pragma once

#include <cstdint>
#include <limits>
#include <memory>
#include <vector>

#include "core/compiled_graph.h"
#include "core/decision.h"
#include "core/errors.h"
#include "hardware/cluster.h"
#include "hardware/cost_model.h"
#include "simulator/simulator.h"
#include "simulator/simulator_pool.h"

namespace gopt::agents {

using core::Bytes;
using core::DeviceId;
using core::NodeId;
using core::Seconds;

/// One optimization problem. Everything is borrowed and must outlive the Problem.
struct Problem {
  const core::CompiledGraph& graph;
  const hardware::Cluster& cluster;
  const hardware::CostModel& cost_model;
  std::uint64_t seed = 0;  ///< seeds randomised agents

  [[nodiscard]] DeviceId num_devices() const { return cluster.num_devices(); }
  [[nodiscard]] NodeId num_nodes() const { return graph.num_nodes(); }
};

/// The simulated outcome of one decision.
struct Evaluation {
  Seconds step_time_s = 0;
  bool oom = false;
  DeviceId oom_device = -1;
};

/// A new best: the `samples`-th simulation found the best valid step time so far,
/// `step_time_s`. The list of them is the best-so-far curve at the resolution of one sample
/// (a learning curve has one point per update).
struct BestImprovement {
  std::int64_t samples = 0;
  Seconds step_time_s = 0;

  bool operator==(const BestImprovement& o) const {
    return samples == o.samples && step_time_s == o.step_time_s;
  }
};

/// Where the step time of an evaluation comes from when it is not the simulator's: the
/// hardware backend under `reward: measured` (experiments/run/measured_reward.h). The
/// simulator still runs every decision (its memory model decides OOM, and agents read its
/// result); a decision that fits takes the timer's step time instead of the simulated one.
class StepTimer {
 public:
  virtual ~StepTimer() = default;
  /// The step time of `decision`, valid for the Problem's graph and cluster, in seconds.
  virtual Seconds step_time_s(const core::Decision& decision) = 0;
};

/// Evaluates decisions on the simulator, one at a time or a batch at once on several
/// threads (set_threads). Not thread-safe itself: one caller at a time.
class Environment {
 public:
  explicit Environment(const Problem& problem);

  /// Threads evaluate_many() and simulate_many() spread a batch over (at least 1; the
  /// runner gives each job the cores it may use, `gopt run --simulate-threads`). The
  /// evaluations, and so everything an agent does with them, are the same for every count.
  void set_threads(int threads) { pool_.set_threads(threads); }
  [[nodiscard]] int threads() const { return pool_.threads(); }
  /// Takes the step times of every later evaluation that fits in memory from `timer`
  /// (borrowed; null: the simulator's again). Batches are simulated on threads() and then
  /// timed one decision after another, in order.
  void set_step_timer(StepTimer* timer) { timer_ = timer; }
  [[nodiscard]] StepTimer* step_timer() const { return timer_; }

  [[nodiscard]] const Problem& problem() const { return problem_; }
  /// Simulates a decision (validated), counts a sample and tracks the best valid one:
  /// simulate() then record().
  Evaluation evaluate(const core::Decision& decision);
  /// Simulates a decision without counting it: a member of a data-parallel learner
  /// simulating its share of an update's samples, which every member then record()s.
  Evaluation simulate(const core::Decision& decision);
  /// evaluate() through delta simulation (Simulator::simulate_delta): the same evaluation,
  /// faster for a decision that differs from the base in a few ops (a search move).
  Evaluation evaluate_delta(const core::Decision& decision);
  /// The decision of the last evaluate_delta() becomes the base of the next ones.
  void keep_as_base() { pool_.primary().keep_as_base(); }
  /// A batch of samples: every decision simulated (in parallel on threads()), then
  /// counted in order as evaluate() one after another would (the same best decision and
  /// improvements). The batch API of every agent that samples (GO, multi-task GO, HDP).
  std::vector<Evaluation> evaluate_many(const std::vector<core::Decision>& decisions);
  /// The same without counting (simulate()).
  std::vector<Evaluation> simulate_many(const std::vector<core::Decision>& decisions);
  /// Counts `evaluation` of `decision` as evaluate() does: a sample, and the best valid
  /// decision when it beats every earlier one (only then is `decision` read).
  void record(const Evaluation& evaluation, const core::Decision& decision);
  /// Whether record(evaluation, ...) would make it the best decision.
  [[nodiscard]] bool improves(const Evaluation& evaluation) const {
    return !evaluation.oom && evaluation.step_time_s < best_step_time_s_;
  }
  /// The full simulation result of the last evaluate() or simulate() call (not of a
  /// batch); its step time is the simulated one, also under a StepTimer.
  [[nodiscard]] const simulator::SimulationResult& last_result() const {
    GOPT_ASSERT(last_ != nullptr, "last_result() after a batch or before any evaluation");
    return *last_;
  }

  [[nodiscard]] std::int64_t samples() const { return samples_; }
  /// Best step time of a decision that fit in memory; +inf when none did yet.
  [[nodiscard]] Seconds best_step_time_s() const { return best_step_time_s_; }
  /// The decision with best_step_time_s(); empty Decision when none yet.
  [[nodiscard]] const core::Decision& best_decision() const { return best_decision_; }
  /// Every sample that improved the best step time, in order (the last one is
  /// best_step_time_s()).
  [[nodiscard]] const std::vector<BestImprovement>& improvements() const { return improvements_; }
  /// The simulator of single evaluations.
  [[nodiscard]] simulator::Simulator& simulator() { return pool_.primary(); }
  /// Sets the sample count, best decision and improvements to those of an earlier run on
  /// the same problem (a training snapshot), as if its evaluations had happened here.
  void restore(std::int64_t samples, Seconds best_step_time_s, core::Decision best_decision,
               std::vector<BestImprovement> improvements);

 private:
  Problem problem_;
  simulator::SimulatorPool pool_;
  // The evaluation of `decision` from its simulation `r`: the timer's step time when set
  // and the decision fits.
  [[nodiscard]] Evaluation evaluation_of(const simulator::SimulationResult& r,
                                         const core::Decision& decision);
  const simulator::SimulationResult* last_ = nullptr;
  StepTimer* timer_ = nullptr;
  std::int64_t samples_ = 0;
  Seconds best_step_time_s_ = std::numeric_limits<Seconds>::infinity();
  core::Decision best_decision_;
  std::vector<BestImprovement> improvements_;
};

}  // namespace gopt::agents
