// The GO agents' training loop: PPO updates (PpoTrainer) over a set of graphs, switching
// to the next batch of graphs every `switch_steps` updates, within a TrainBudget. What
// differs between the agents attaches to it as callbacks, in the spirit of the training
// loops of ML frameworks: model selection on validation graphs (ModelSelection), training
// snapshots (Snapshots), a learning-rate schedule (LearningRateSchedule) and the
// coarse-to-fine decision schedule (CoarseToFine).
//
//   TrainingLoop loop(trained, rng, ppo);
//   loop.batches(graphs_per_batch, switch_steps).max_updates(50);
//   loop.add(std::make_unique<Snapshots>(snapshots));
//   loop.run(tasks, budget, observer);
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "agents/agent.h"
#include "agents/go/go_checkpoint.h"
#include "agents/go/go_ppo.h"
#include "core/rng.h"

namespace gopt::agents::go {

class TrainingCallback;

/// A training run as the callbacks see it.
struct TrainingRun {
  TrainedPolicy& trained;       ///< the policy, its optimizer and its update count
  core::Rng& rng;               ///< the agent's random stream (the trainer's seed)
  PpoTrainer& trainer;          ///< the sampling generator
  std::vector<PpoTask>& tasks;  ///< the graphs trained on
  std::int64_t limit = 0;       ///< the number of the last update
  std::int64_t first_step = 0;  ///< updates done before (a restored snapshot)
  double earlier_s = 0;         ///< wall seconds the run took before (a restored snapshot)
  std::vector<LearningCurvePoint> curve;     ///< one point per update, restored ones included
  std::vector<TrainingCallback*> callbacks;  ///< every callback attached, in order
  /// The members the run shares its updates with (null: alone). Every member runs the same
  /// loop with the same callbacks; a decision that depends on the clock (a snapshot due, the time
  /// budget spent) is rank 0's, so that all of them take it at the same update.
  LearnerGroup* group = nullptr;
  /// Rank 0's `flag`, on every member (the flag itself when alone). A collective.
  [[nodiscard]] bool rank0(bool flag) const;
};

/// Something that attaches to the training loop. Every hook does nothing by default.
class TrainingCallback {
 public:
  virtual ~TrainingCallback() = default;
  /// Before the first update: a callback may restore an interrupted run here
  /// (TrainingRun::first_step, earlier_s, curve).
  virtual void on_begin(TrainingRun& /*run*/) {}
  /// Before update `step` (counted from 0).
  virtual void before_update(TrainingRun& /*run*/, std::int64_t /*step*/) {}
  /// After update `step`, with TrainedPolicy::updates counted, before its curve point.
  virtual void after_update(TrainingRun& /*run*/, std::int64_t /*step*/) {}
  /// After the update's curve point (TrainingRun::curve's last).
  virtual void on_point(TrainingRun& /*run*/) {}
  /// When the observer stops training (throws) after an update.
  virtual void on_stop(TrainingRun& /*run*/) {}
  /// The state the callback keeps that a snapshot must carry (model selection's best).
  virtual void save_state(TrainingSnapshot& /*snapshot*/) const {}
  virtual void restore_state(const TrainingSnapshot& /*snapshot*/) {}

 protected:
  TrainingCallback() = default;
  TrainingCallback(const TrainingCallback&) = default;
  TrainingCallback& operator=(const TrainingCallback&) = default;
};

/// PPO over a set of graphs with callbacks.
class TrainingLoop {
 public:
  TrainingLoop(TrainedPolicy& trained, core::Rng& rng, PpoOptions ppo);
  /// Trains `graphs_per_batch` graphs together (0: all), the next batch after every
  /// `switch_steps` updates; by default one batch of every graph.
  TrainingLoop& batches(std::int64_t graphs_per_batch, std::int64_t switch_steps);
  /// At most this many updates (besides the budget's).
  TrainingLoop& max_updates(std::int64_t updates);
  /// Each update trains this many graphs of the current batch at once (distinct ones, at
  /// most the batch's size), its gradient their mean (go_shared_update.h); a learner group
  /// splits them among its members. 1 (the default): one graph per update.
  TrainingLoop& graphs_per_update(std::int64_t graphs) {
    graphs_per_update_ = graphs;
    return *this;
  }
  /// Shares every update with the other members of `group` (data parallelism; null:
  /// alone): each member simulates its share of the samples (PpoTrainer::share) and every
  /// member ends the run in the state one loop alone reaches.
  TrainingLoop& share(LearnerGroup* group) {
    group_ = group;
    return *this;
  }
  /// Attaches `callback`; callbacks run in the order attached.
  template <class Callback>
  Callback& add(std::unique_ptr<Callback> callback) {
    Callback& added = *callback;
    callbacks_.push_back(std::move(callback));
    return added;
  }
  /// Trains on `tasks` until the budget, or max_updates, is spent, reporting every update
  /// to `observer` (may be null); an exception from the observer stops training. Shared,
  /// rank 0's observer stops every member (the others throw core::Error) and theirs are
  /// not heard.
  void run(std::vector<PpoTask>& tasks, const TrainBudget& budget, TrainingObserver* observer);

 private:
  std::vector<PpoTask*> slots_of(std::vector<PpoTask>& tasks, std::int64_t step) const;
  PpoStepStats update(TrainingRun& run, const std::vector<PpoTask*>& slots);

  TrainedPolicy& trained_;
  core::Rng& rng_;
  PpoOptions ppo_;
  std::int64_t graphs_per_batch_ = 0;
  std::int64_t switch_steps_ = 1;
  std::int64_t max_updates_ = std::numeric_limits<std::int64_t>::max();
  std::int64_t graphs_per_update_ = 1;
  LearnerGroup* group_ = nullptr;
  std::vector<std::unique_ptr<TrainingCallback>> callbacks_;
};

/// Sets the Adam learning rate before every update from `rate(step)`.
class LearningRateSchedule final : public TrainingCallback {
 public:
  explicit LearningRateSchedule(std::function<double(std::int64_t step)> rate);
  /// One learning rate throughout.
  [[nodiscard]] static std::unique_ptr<LearningRateSchedule> constant(double learning_rate);
  void before_update(TrainingRun& run, std::int64_t step) override;

 private:
  std::function<double(std::int64_t)> rate_;
};

/// The update at which a unit phase of at most `unit_updates` updates ends, as far as the
/// curve's first `step` points tell: with a `patience` (> 0), the first update s
/// (patience < s <= step) where the best step time after s updates is finite and no lower than
/// after s - patience updates; otherwise `unit_updates`.
[[nodiscard]] std::int64_t unit_phase_end(const std::vector<LearningCurvePoint>& curve,
                                          std::int64_t step, std::int64_t unit_updates,
                                          std::int64_t patience);

/// Coarse to fine (GoOptions::unit_phase, unit_patience, unit_handover): the updates before
/// unit_phase_end() decide per decision unit; the next `handover_updates` decide per op from
/// logits blended between the unit's mean and the op's own (GoPolicyOptions::unit_blend:
/// 1/(H+1), ..., H/(H+1)); the others as the policy's options say. The policy's own options
/// are what checkpoints and snapshots record. The schedule depends on the update's number
/// and the curve only, and a snapshot restores the curve, so a resumed run follows it.
class CoarseToFine final : public TrainingCallback {
 public:
  CoarseToFine(std::int64_t unit_updates, std::int64_t handover_updates, std::int64_t patience = 0)
      : unit_updates_(unit_updates), handover_updates_(handover_updates), patience_(patience) {}
  void before_update(TrainingRun& run, std::int64_t step) override;
  void after_update(TrainingRun& run, std::int64_t step) override;

 private:
  std::int64_t unit_updates_;
  std::int64_t handover_updates_;
  std::int64_t patience_;
  bool per_unit_ = false;
  double blend_ = 1.0;
};

/// A graph the policy is checked on and not trained on.
struct ValidationGraph {
  Environment* env;
  DecisionBase base;
  GraphTensors tensors;
};

/// Model selection: every `every` updates and after the last, the policy's zero-shot
/// placements (greedy, moved into memory as go_zero_shot does, memory_fitting_decision)
/// of the validation graphs; when their score beats every earlier check, the policy
/// becomes the checkpoint at `checkpoint`. The score is the mean log step time over the
/// graphs (each graph weighs the same whatever its size), an out-of-memory placement
/// counting 10x its time. Greedy and simulated only: neither the random state nor the
/// training graphs' sample counts change.
class ModelSelection final : public TrainingCallback {
 public:
  ModelSelection(std::vector<ValidationGraph> graphs, std::int64_t every, std::string checkpoint,
                 std::int64_t memory_repairs, std::int64_t exploration_block);
  void after_update(TrainingRun& run, std::int64_t step) override;
  void save_state(TrainingSnapshot& snapshot) const override;
  void restore_state(const TrainingSnapshot& snapshot) override;
  /// The updates behind the best policy so far (0: none checked).
  [[nodiscard]] std::int64_t best_updates() const { return best_steps_; }

 private:
  std::vector<ValidationGraph> graphs_;
  std::int64_t every_;
  std::string checkpoint_;
  std::int64_t memory_repairs_;
  std::int64_t exploration_block_;
  double best_score_ = std::numeric_limits<double>::infinity();
  std::int64_t best_steps_ = 0;
};

/// Training snapshots (TrainSnapshots): restores the run a snapshot at `where.path` of the
/// same identity, policy and graphs holds, replaying its curve; writes one every
/// `where.interval_s` seconds (by rank 0's clock in a shared run: every member writes its
/// own at the same update) and when the observer stops training.
class Snapshots final : public TrainingCallback {
 public:
  explicit Snapshots(TrainSnapshots where) : where_(std::move(where)) {}
  void on_begin(TrainingRun& run) override;
  void on_point(TrainingRun& run) override;
  void on_stop(TrainingRun& run) override;

 private:
  bool restore(TrainingRun& run) const;
  void write(const TrainingRun& run) const;

  TrainSnapshots where_;
  std::chrono::steady_clock::time_point last_;
};

}  // namespace gopt::agents::go
