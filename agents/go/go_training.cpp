#include "agents/go/go_training.h"

#include <algorithm>
#include <cmath>
#include <exception>
#include <sstream>
#include <utility>

#include "agents/go/go_memory_repair.h"
#include "agents/go/go_shared_update.h"
#include "agents/tensor_memory.h"
#include "agents/torch_utils.h"
#include "core/errors.h"

namespace gopt::agents::go {
namespace {

using Clock = std::chrono::steady_clock;

std::int64_t samples_of(const std::vector<PpoTask>& tasks) {
  std::int64_t total = 0;
  for (const auto& t : tasks) total += t.env->samples();
  return total;
}

// A shared run: every member must go on from the same update (all restored the same
// snapshot, or none did).
void check_same_start(const TrainingRun& run) {
  LearnerGroup* group = run.group;
  if (group == nullptr || group->size() == 1) return;
  std::vector<double> first(static_cast<std::size_t>(group->size()), 0.0);
  first[static_cast<std::size_t>(group->rank())] = static_cast<double>(run.first_step);
  group->all_reduce_sum(first);
  for (std::size_t r = 1; r < first.size(); ++r) {
    if (first[r] == first[0]) continue;
    std::ostringstream why;
    why << "data-parallel training: rank " << r << " of the learner group goes on from update "
        << first[r] << " and rank 0 from update " << first[0]
        << " (they restored different training snapshots; every member must read the same "
           "snapshot file, on one machine or a shared filesystem; delete the snapshots to start "
           "over)";
    throw core::Error(why.str());
  }
}

}  // namespace

bool TrainingRun::rank0(bool flag) const { return rank0_flag(group, flag); }

TrainingLoop::TrainingLoop(TrainedPolicy& trained, core::Rng& rng, PpoOptions ppo)
    : trained_(trained), rng_(rng), ppo_(ppo) {}

TrainingLoop& TrainingLoop::batches(std::int64_t graphs_per_batch, std::int64_t switch_steps) {
  graphs_per_batch_ = graphs_per_batch;
  switch_steps_ = switch_steps;
  return *this;
}

TrainingLoop& TrainingLoop::max_updates(std::int64_t updates) {
  max_updates_ = updates;
  return *this;
}

// The graphs update `step` trains on: batch after batch of graphs_per_batch graphs, each for
// switch_steps updates, cycling through the graphs of the batch, graphs_per_update distinct
// ones at a time (at most the batch's size) from the position step x graphs_per_update.
std::vector<PpoTask*> TrainingLoop::slots_of(std::vector<PpoTask>& tasks, std::int64_t step) const {
  const auto n = static_cast<std::int64_t>(tasks.size());
  const std::int64_t per_batch = graphs_per_batch_ > 0 ? std::min(graphs_per_batch_, n) : n;
  const std::int64_t batches = (n + per_batch - 1) / per_batch;
  const std::int64_t batch = (step / std::max<std::int64_t>(1, switch_steps_)) % batches;
  const std::int64_t first = batch * per_batch;
  const std::int64_t size = std::min(per_batch, n - first);
  const std::int64_t count = std::min(graphs_per_update_, size);
  std::vector<PpoTask*> slots;
  for (std::int64_t j = 0; j < count; ++j) {
    slots.push_back(&tasks[static_cast<std::size_t>(first + (step * count + j) % size)]);
  }
  return slots;
}

PpoStepStats TrainingLoop::update(TrainingRun& run, const std::vector<PpoTask*>& slots) {
  if (graphs_per_update_ <= 1) return run.trainer.step(*slots.front());
  return shared_update(trained_, rng_, ppo_, slots, group_);
}

void TrainingLoop::run(std::vector<PpoTask>& tasks, const TrainBudget& budget,
                       TrainingObserver* observer) {
  const SubnormalsFlushed flushed;  // a trained policy's subnormals cost 6x (torch_utils.h)
  const TensorCacheScope cache;     // every pass reuses the last one's blocks (tensor_memory.h)
  PpoTrainer trainer(trained_.policy, *trained_.optimizer, ppo_, make_generator(rng_));
  trainer.share(group_);
  const auto start = Clock::now();
  TrainingRun run{trained_, rng_, trainer, tasks, std::min(budget.max_steps, max_updates_),
                  0,        0.0,  {},      {},    group_};
  for (const auto& c : callbacks_) run.callbacks.push_back(c.get());
  for (auto* c : run.callbacks) c->on_begin(run);
  check_same_start(run);
  if (observer) {
    for (const auto& p : run.curve) observer->on_training_step(p);
  }
  auto wall = [&] {
    return run.earlier_s + std::chrono::duration<double>(Clock::now() - start).count();
  };
  for (std::int64_t step = run.first_step; step < run.limit; ++step) {
    const std::vector<PpoTask*> slots = slots_of(tasks, step);
    if (samples_of(tasks) + trainer.samples_per_update() * static_cast<std::int64_t>(slots.size()) >
            budget.max_samples ||
        run.rank0(wall() >= budget.max_seconds)) {
      break;
    }
    PpoTask& task = *slots.front();
    for (auto* c : run.callbacks) c->before_update(run, step);
    const PpoStepStats stats = update(run, slots);
    ++trained_.updates;
    for (auto* c : run.callbacks) c->after_update(run, step);
    LearningCurvePoint point;
    point.step = step + 1;
    point.samples = samples_of(tasks);
    point.best_step_time_s = task.env->best_step_time_s();
    point.mean_step_time_s = stats.mean_step_time_s;
    point.wall_s = wall();
    run.curve.push_back(point);
    for (auto* c : run.callbacks) c->on_point(run);
    if (observer) {
      std::exception_ptr stopped;
      try {
        observer->on_training_step(point);
      } catch (...) {
        stopped = std::current_exception();
      }
      // Shared, rank 0's observer decides for every member: the others go on until it stops.
      if (run.rank0(stopped != nullptr)) {
        for (auto* c : run.callbacks) c->on_stop(run);  // keep this update
        if (stopped) std::rethrow_exception(stopped);
        throw core::Error("training stopped by rank 0 of the data-parallel learner group");
      }
    }
  }
}

LearningRateSchedule::LearningRateSchedule(std::function<double(std::int64_t)> rate)
    : rate_(std::move(rate)) {}

std::unique_ptr<LearningRateSchedule> LearningRateSchedule::constant(double learning_rate) {
  return std::make_unique<LearningRateSchedule>(
      [learning_rate](std::int64_t) { return learning_rate; });
}

void LearningRateSchedule::before_update(TrainingRun& run, std::int64_t step) {
  run.trained.set_learning_rate(rate_(step));
}

std::int64_t unit_phase_end(const std::vector<LearningCurvePoint>& curve, std::int64_t step,
                            std::int64_t unit_updates, std::int64_t patience) {
  if (patience <= 0) return unit_updates;
  const std::int64_t last = std::min({step, unit_updates, static_cast<std::int64_t>(curve.size())});
  for (std::int64_t s = patience + 1; s <= last; ++s) {
    const Seconds now = curve[static_cast<std::size_t>(s - 1)].best_step_time_s;
    const Seconds before = curve[static_cast<std::size_t>(s - 1 - patience)].best_step_time_s;
    if (std::isfinite(now) && now >= before) return s;
  }
  return unit_updates;
}

void CoarseToFine::before_update(TrainingRun& run, std::int64_t step) {
  auto& options = run.trained.policy->options;
  per_unit_ = options.unit_decisions;
  blend_ = options.unit_blend;
  const std::int64_t end = unit_phase_end(run.curve, step, unit_updates_, patience_);
  if (step < end) {
    options.with_unit_decisions(true);
  } else if (step < end + handover_updates_) {
    options.with_unit_blend(static_cast<double>(step - end + 1) /
                            static_cast<double>(handover_updates_ + 1));
  }
}

void CoarseToFine::after_update(TrainingRun& run, std::int64_t /*step*/) {
  run.trained.policy->options.with_unit_decisions(per_unit_).with_unit_blend(blend_);
}

ModelSelection::ModelSelection(std::vector<ValidationGraph> graphs, std::int64_t every,
                               std::string checkpoint, std::int64_t memory_repairs,
                               std::int64_t exploration_block)
    : graphs_(std::move(graphs)),
      every_(every),
      checkpoint_(std::move(checkpoint)),
      memory_repairs_(memory_repairs),
      exploration_block_(exploration_block) {}

void ModelSelection::after_update(TrainingRun& run, std::int64_t step) {
  const std::int64_t steps = step + 1;
  if (graphs_.empty() || (steps % every_ != 0 && steps != run.limit)) return;
  double score = 0;
  for (auto& v : graphs_) {
    const core::Decision decision = memory_fitting_decision(
        run.trained.policy, v.tensors, *v.env, v.base, memory_repairs_, exploration_block_);
    const Evaluation e = v.env->evaluate(decision);
    score += std::log(e.step_time_s) + (e.oom ? std::log(10.0) : 0.0);
  }
  score /= static_cast<double>(graphs_.size());
  if (score < best_score_) {
    best_score_ = score;
    best_steps_ = steps;
    save_checkpoint(checkpoint_, run.trained);
  }
}

void ModelSelection::save_state(TrainingSnapshot& snapshot) const {
  snapshot.best_validation = best_score_;
  snapshot.best_validation_steps = best_steps_;
}

void ModelSelection::restore_state(const TrainingSnapshot& snapshot) {
  best_score_ = snapshot.best_validation;
  best_steps_ = snapshot.best_validation_steps;
}

void Snapshots::on_begin(TrainingRun& run) {
  (void)restore(run);
  last_ = Clock::now();
}

void Snapshots::on_point(TrainingRun& run) {
  if (run.rank0(std::chrono::duration<double>(Clock::now() - last_).count() >= where_.interval_s)) {
    write(run);
    last_ = Clock::now();
  }
}

void Snapshots::on_stop(TrainingRun& run) { write(run); }

// The state after the run's last update: the policy, the optimizer, both random streams,
// every graph's samples, best decision and reward reference, the callbacks' state and the
// curve.
void Snapshots::write(const TrainingRun& run) const {
  TrainingSnapshot s;
  s.identity = where_.identity;
  s.options = policy_options_text(run.trained.policy->options);
  s.steps = run.curve.back().step;
  s.updates = run.trained.updates;
  std::ostringstream rng;
  rng << run.rng.engine();
  s.rng = rng.str();
  s.generator = run.trainer.generator().get_state();
  for (const auto& task : run.tasks) {
    const Environment& env = *task.env;
    s.tasks.push_back({static_cast<std::int64_t>(env.problem().num_nodes()), env.samples(),
                       env.best_step_time_s(), task.reference_s, env.best_decision(),
                       env.improvements()});
  }
  for (const auto* c : run.callbacks) c->save_state(s);
  s.curve = run.curve;
  write_snapshot(where_.path, s, run.trained);
}

// Restores the state write() saved when the file holds a snapshot of this identity, policy
// shape and set of graphs; false (nothing changed) otherwise. A file that does not read as
// one is ignored the same way: training starts over and replaces it.
bool Snapshots::restore(TrainingRun& run) const {
  std::vector<std::int64_t> nodes;
  for (const auto& task : run.tasks) nodes.push_back(task.env->problem().num_nodes());
  auto file =
      read_snapshot(where_.path, where_.identity, policy_options_text(run.trained.policy->options),
                    nodes, run.trained.policy->device());
  if (!file) return false;
  TrainingSnapshot& s = file->snapshot;
  std::istringstream rng_text(s.rng);
  core::Rng::Engine engine;
  rng_text >> engine;
  if (!rng_text) return false;
  // Shapes and names were checked (same policy options), so a failure from here on is a
  // damaged file, which must not leave a half-restored run behind.
  try {
    run.trained.policy->load(file->policy);
    run.trained.optimizer->load(file->optimizer);
    run.trainer.generator().set_state(s.generator);
  } catch (const c10::Error& e) {
    throw core::Error("restoring training snapshot " + where_.path + ": " +
                      e.what_without_backtrace() + " (delete the file to start over)");
  }
  run.rng.engine() = engine;
  run.first_step = s.steps;
  run.trained.updates = s.updates;
  for (auto* c : run.callbacks) c->restore_state(s);
  for (std::size_t i = 0; i < run.tasks.size(); ++i) {
    auto& task = s.tasks[i];
    run.tasks[i].env->restore(task.samples, task.best_s, std::move(task.best),
                              std::move(task.improvements));
    run.tasks[i].reference_s = task.reference_s;
  }
  run.curve = std::move(s.curve);
  run.earlier_s = run.curve.empty() ? 0.0 : run.curve.back().wall_s;
  return true;
}

}  // namespace gopt::agents::go
