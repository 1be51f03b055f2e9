// Training on measured rewards (`reward: measured`, docs/config.md "Agents"): the step time
// of each decision a learner samples is executed on this machine's hardware backend instead
// of taken from the simulator, as the GO paper trained on real systems. The simulator still
// runs every sample and decides out-of-memory; identical decisions run once (a cache keyed by
// decision). Executions take the machine's CPUs, so a run with measured rewards runs one job
// at a time.
//
//   auto backend = hardware::backend::make_backend(BackendKind::kCpu, 2);
//   MeasuredReward reward(*backend, graph);
//   env.set_step_timer(&reward);        // every later sample that fits runs on the backend
//   agent->train(env, budget, nullptr);
//   env.set_step_timer(nullptr);        // the final evaluation is simulated, as for any agent
//   Selection s = reward.select(agent->propose(env.problem()));   // the decision proposed
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>

#include "agents/environment.h"
#include "core/graph.h"
#include "core/options.h"
#include "experiments/run/decision_order.h"
#include "experiments/run/measure.h"
#include "hardware/backend/backend.h"

namespace gopt::experiments {

/// How a sample is measured, and how the decision a job proposes is chosen; defaults here
/// and nowhere else. A sample takes fewer steps than `gopt measure` takes: a learner samples
/// thousands of decisions. The fastest of them by those few steps is the luckiest as much as
/// the fastest (the minimum of many noisy times), so the job proposes the fastest of its
/// `final_candidates` best decisions measured again as `gopt measure` measures
/// (MeasuredReward::select).
struct MeasuredRewardOptions {
  GOPT_OPTION(int, warmup_steps, 1)  ///< steps run and discarded before the timed ones
  GOPT_OPTION(int, timed_steps, 3)   ///< timed steps; a sample's step time is their median
  /// The decisions with the fastest sample times measured again at the end, the agent's own
  /// proposal among them.
  GOPT_OPTION(int, final_candidates, 8)
  GOPT_OPTION(int, final_rounds, MeasureOptions().rounds)              ///< interleaved rounds
  GOPT_OPTION(int, final_warmup_steps, MeasureOptions().warmup_steps)  ///< per round
  GOPT_OPTION(int, final_timed_steps, MeasureOptions().timed_steps)    ///< per round
};

/// What MeasuredReward::select measured.
struct Selection {
  core::Decision decision;        ///< the fastest candidate by its median timed step
  core::Seconds step_time_s = 0;  ///< that median
  std::size_t candidates = 0;     ///< distinct decisions measured
  bool changed = false;           ///< it is not the decision the agent proposed
};

/// The agents::StepTimer of one graph on a backend: each distinct decision executed once.
/// Not thread-safe; the backend must not run anything else meanwhile.
class MeasuredReward final : public agents::StepTimer {
 public:
  /// `backend` and `graph` are borrowed and must outlive this object.
  MeasuredReward(hardware::backend::Backend& backend, const core::Graph& graph,
                 const MeasuredRewardOptions& options = {});

  /// The median timed step of `decision` on the backend, from the cache when it ran
  /// before.
  core::Seconds step_time_s(const core::Decision& decision) override;

  /// Of `proposed` and the options' final_candidates - 1 other decisions with the fastest
  /// sample times, the one with the fastest median step, each measured again in interleaved
  /// rounds (fresh steps, the cache unused) with the final_* options, as `gopt measure`
  /// does. Ties keep the earlier candidate: `proposed`, then by sample time.
  [[nodiscard]] Selection select(const core::Decision& proposed);

  /// Distinct decisions executed so far.
  [[nodiscard]] std::int64_t executions() const { return static_cast<std::int64_t>(times_.size()); }
  /// Step times asked for, those answered from the cache included.
  [[nodiscard]] std::int64_t requests() const { return requests_; }
  /// Wall-clock seconds spent executing.
  [[nodiscard]] double execution_s() const { return execution_s_; }

 private:
  hardware::backend::Backend& backend_;
  const core::Graph& graph_;
  MeasuredRewardOptions options_;
  hardware::backend::ExecutionOptions execution_;
  std::map<core::Decision, core::Seconds, DecisionLess> times_;
  std::int64_t requests_ = 0;
  double execution_s_ = 0;
};

}  // namespace gopt::experiments
