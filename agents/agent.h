// The one interface behind everything that produces a Decision, learned or not
// (STYLE.md point 5): baselines answer propose() directly; learners are trained on an
// Environment first and then propose the best decision they know.
//
//   AgentRegistry registry;
//   register_builtin_agents(registry);
//   auto agent = registry.create("hdp", {{"learning_rate", "0.05"}});
//   Environment env(problem);
//   if (agent->is_learner()) agent->train(env, TrainBudget().with_max_steps(200), nullptr);
//   core::Decision d = agent->propose(problem);
#pragma once

#include <cstdint>
#include <limits>
#include <string>
#include <vector>

#include "agents/environment.h"
#include "agents/learner_group.h"
#include "core/decision.h"
#include "core/options.h"

namespace gopt::agents {

/// Limits on a learner's training; training stops at the first limit reached.
struct TrainBudget {
  GOPT_OPTION(std::int64_t, max_steps, 100)  ///< policy updates
  GOPT_OPTION(std::int64_t, max_samples, std::numeric_limits<std::int64_t>::max())  ///< simulations
  GOPT_OPTION(double, max_seconds, std::numeric_limits<double>::infinity())         ///< wall time
};

/// One point of a learning curve, reported after every policy update.
struct LearningCurvePoint {
  std::int64_t step = 0;         ///< policy updates so far
  std::int64_t samples = 0;      ///< simulations so far
  Seconds best_step_time_s = 0;  ///< best valid step time found so far (inf when none)
  Seconds mean_step_time_s = 0;  ///< mean step time of this update's samples (OOM counted
                                 ///< at the agent's penalty step time)
  double wall_s = 0;             ///< wall-clock seconds since training started
};

/// Where a learner keeps the state of an unfinished training run, so that a run stopped in
/// the middle (Ctrl-C, a killed process, a machine that went away) continues from its last
/// snapshot instead of starting over, with the same result as an uninterrupted run. `gopt
/// run` gives every job one (docs/config.md "Resuming").
struct TrainSnapshots {
  std::string path;        ///< the snapshot file ("": none); read at the start of training
  std::string identity;    ///< what it belongs to: a snapshot of anything else is not used
  double interval_s = 60;  ///< wall-clock seconds between two snapshots; also written when
                           ///< the observer stops training (throws)
};

/// Receives training progress (progress display, result sinks). Read-only callbacks.
class TrainingObserver {
 public:
  virtual ~TrainingObserver() = default;
  virtual void on_training_step(const LearningCurvePoint& point) = 0;

 protected:
  TrainingObserver() = default;
  TrainingObserver(const TrainingObserver&) = default;
  TrainingObserver& operator=(const TrainingObserver&) = default;
};

/// What every optimizer implements.
class Agent {
 public:
  virtual ~Agent() = default;
  Agent(const Agent&) = delete;
  Agent& operator=(const Agent&) = delete;

  /// The registry name ("metis", "hdp").
  [[nodiscard]] virtual std::string name() const = 0;
  /// A decision for the problem. Learners return the best decision found in training
  /// on this problem, or their policy's greedy decision when they have not trained on it.
  [[nodiscard]] virtual core::Decision propose(const Problem& problem) = 0;
  /// True for agents that learn from rewards and implement train().
  [[nodiscard]] virtual bool is_learner() const { return false; }
  /// Trains on `environment` within `budget`, reporting each update to `observer` (may be
  /// null). The default (non-learners) does nothing.
  virtual void train(Environment& environment, const TrainBudget& budget,
                     TrainingObserver* observer);
  /// Where the next training run keeps its snapshots. A learner that supports them resumes
  /// from `snapshots.path` when it holds a snapshot of the same identity, replaying its
  /// learning-curve points to the observer first. The default ignores them (training
  /// starts over).
  virtual void set_snapshots(TrainSnapshots snapshots);
  /// Shares the next training run with the other members of `group` (data parallelism,
  /// agents/learner_group.h; null: alone). Meant for agents whose registry entry says
  /// `data_parallel`: every member then trains alike and ends in the state one learner
  /// alone would reach, sooner. The default ignores the group (each member trains alone).
  virtual void set_learner_group(LearnerGroup* group);

 protected:
  Agent() = default;
};

/// A learner that trains one policy over several problems and carries it between runs
/// in a checkpoint (GO pretraining). The runner trains it on every training graph of a
/// generalization experiment, then fine-tuning and zero-shot agents load the checkpoint.
class TransferableAgent : public Agent {
 public:
  /// Trains one policy on all `environments` within `budget` (updates over all graphs).
  virtual void train_on_set(const std::vector<Environment*>& environments,
                            const TrainBudget& budget, TrainingObserver* observer) = 0;
  /// Validation graphs for train_on_set (model selection; none by default): the
  /// checkpoint it writes is then the policy that did best on them, checked at intervals
  /// the agent's options set, instead of the last one. Not trained on.
  virtual void set_validation(std::vector<Environment*> environments) = 0;
  /// Updates behind the policy the checkpoint holds (after train_on_set).
  [[nodiscard]] virtual std::int64_t checkpoint_steps() const = 0;
  /// Writes the policy, the optimizer state and the options to `path` (atomically).
  virtual void save_checkpoint(const std::string& path) const = 0;
  /// Where train_on_set's result goes, from the agent's `checkpoint` option ("" = unset).
  [[nodiscard]] virtual std::string checkpoint_path() const = 0;

 protected:
  TransferableAgent() = default;
};

}  // namespace gopt::agents
