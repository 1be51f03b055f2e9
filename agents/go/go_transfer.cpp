// The transfer-learning agents: go_pretrain trains one policy on a set of graphs and writes
// it to a checkpoint; go_finetune and go_zero_shot read it for a held-out graph.
#include <cmath>
#include <memory>
#include <utility>
#include <vector>

#include "agents/go/go_learner.h"
#include "agents/go/go_memory_repair.h"
#include "agents/torch_utils.h"
#include "core/errors.h"

namespace gopt::agents::go {
namespace {

// What place_greedily() simulated.
struct GreedyStart {
  core::Decision first;           // the first granularity's placement (kept if none fits)
  bool per_unit_fastest = false;  // the fastest placement that fits was the per-unit one
};

// The loaded policy's greedy placements of `env`'s graph at `granularity` (the
// checkpoint's own decisions, whole decision units, or both), each moved into memory
// (memory_fitting_decision) and simulated on `env`, which counts every simulation and
// keeps the fastest decision that fits. Where every unit is one op (small graphs, flat
// names) units decide as ops do, and `best` places once.
GreedyStart place_greedily(GoLearner& go, Environment& env, Granularity granularity) {
  const GoOptions& o = go.options();
  const Problem& problem = env.problem();
  go.check_devices(problem);
  const DecisionBase base = go.base_for(problem);
  const GraphTensors tensors = go.tensors_for(problem, base);
  const SubnormalsFlushed flushed;
  GoPolicy policy = go.trained().policy;
  const bool trained_per_unit = policy->options.unit_decisions;
  const bool units_are_ops = tensors.num_units == tensors.num_nodes;
  // Per unit or not, in the order they are tried: `best` reads the checkpoint as it was
  // trained first, then at the other granularity.
  std::vector<bool> granularities{granularity == Granularity::kUnit || trained_per_unit};
  if (granularity == Granularity::kBest && !units_are_ops) {
    granularities.push_back(!trained_per_unit);
  }
  GreedyStart start;
  bool placed = false;
  for (const bool per_unit : granularities) {
    const Seconds best_before = env.best_step_time_s();
    // The policy is shared with the learner: the granularity holds for this placement only.
    policy->options.with_unit_decisions(per_unit);
    core::Decision decision = memory_fitting_decision(policy, tensors, env, base, o.memory_repairs,
                                                      o.ppo.exploration_block);
    if (env.best_step_time_s() < best_before) start.per_unit_fastest = per_unit;
    if (!placed) start.first = std::move(decision);
    placed = true;
  }
  policy->options.with_unit_decisions(trained_per_unit);
  return start;
}

class GoPretrainAgent final : public GoAgentBase<TransferableAgent> {
 public:
  explicit GoPretrainAgent(GoOptions options) : GoAgentBase(std::move(options)) {}

  std::string checkpoint_path() const override { return go_.options().checkpoint; }
  void set_validation(std::vector<Environment*> environments) override {
    validation_ = std::move(environments);
  }
  std::int64_t checkpoint_steps() const override { return checkpoint_steps_; }

  void train(Environment& env, const TrainBudget& budget, TrainingObserver* observer) override {
    train_on_set({&env}, budget, observer);
  }

  void train_on_set(const std::vector<Environment*>& environments, const TrainBudget& budget,
                    TrainingObserver* observer) override {
    const GoOptions& o = go_.options();
    if (environments.empty()) {
      throw core::Error(name() + ": pretraining needs at least one training graph");
    }
    go_.create_policy(core::mix_seed(o.seed, environments.front()->problem().seed));
    std::vector<PpoTask> tasks;
    for (auto* env : environments) tasks.push_back(go_.task_for(*env));
    TrainingLoop loop = go_.loop();
    loop.batches(o.graphs_per_batch, o.switch_steps).graphs_per_update(o.graphs_per_update);
    ModelSelection* selection = nullptr;
    if (!validation_.empty()) {
      if (o.checkpoint.empty()) {
        throw core::Error(name() +
                          ": validation graphs need a checkpoint file to keep the best "
                          "policy in");
      }
      std::vector<ValidationGraph> graphs;
      for (auto* env : validation_) graphs.push_back(go_.validation_graph_for(*env));
      selection = &loop.add(std::make_unique<ModelSelection>(std::move(graphs), o.validate_every,
                                                             o.checkpoint, o.memory_repairs,
                                                             o.ppo.exploration_block));
    }
    go_.train(loop, tasks, budget, observer);
    if (selection) {
      // The checkpoint was written at each new best, the last update included.
      checkpoint_steps_ = selection->best_updates();
    } else {
      checkpoint_steps_ = go_.trained().updates;
      if (!o.checkpoint.empty()) save_checkpoint(o.checkpoint);
    }
  }

  void save_checkpoint(const std::string& path) const override {
    if (!go_.has_policy()) throw core::Error(name() + ": no policy to save (train first)");
    go::save_checkpoint(path, go_.trained());
  }

 private:
  void prepare(const Problem& problem) override {
    go_.create_policy(core::mix_seed(go_.options().seed, problem.seed));
  }

  std::vector<Environment*> validation_;
  std::int64_t checkpoint_steps_ = 0;
};

class GoFinetuneAgent final : public GoAgentBase<Agent> {
 public:
  explicit GoFinetuneAgent(GoOptions options) : GoAgentBase(std::move(options)) {}

  void train(Environment& env, const TrainBudget& budget, TrainingObserver* observer) override {
    const GoOptions& o = go_.options();
    if (!go_.has_policy()) go_.load_policy();
    go_.reseed(core::mix_seed(o.seed, env.problem().seed));
    // From `best`'s start the unit phase runs only where whole units placed the graph
    // faster. Fine-tuning never ends behind its start (the environment keeps it), and from
    // a greedy start it ends per op whatever the checkpoint was trained at (a policy
    // pretrained per unit, too, refines per op after its unit phase).
    std::int64_t unit_phase = o.unit_phase;
    if (o.granularity != Granularity::kPolicy) {
      const bool per_unit_fastest = place_greedily(go_, env, o.granularity).per_unit_fastest;
      if (o.granularity == Granularity::kBest && !per_unit_fastest) unit_phase = 0;
      GoPolicy policy = go_.trained().policy;  // shares the learner's network
      policy->options.with_unit_decisions(false);
    }
    TrainingLoop loop = go_.loop(unit_phase);
    loop.max_updates(o.finetune_steps);
    std::vector<PpoTask> tasks;
    tasks.push_back(go_.task_for(env));
    go_.train(loop, tasks, budget, observer);
  }

 private:
  void prepare(const Problem& /*problem*/) override { go_.load_policy(); }
};

// The greedy placement of the loaded policy, moved into memory if it does not fit
// (memory_fitting_decision); no parameter changes.
class GoZeroShotAgent final : public GoAgentBase<Agent> {
 public:
  explicit GoZeroShotAgent(GoOptions options) : GoAgentBase(std::move(options)) {}

  void train(Environment& env, const TrainBudget& /*budget*/,
             TrainingObserver* /*observer*/) override {
    const GoOptions& o = go_.options();
    if (!go_.has_policy()) go_.load_policy();
    GreedyStart start = place_greedily(go_, env, o.granularity);
    // The environment kept the fastest decision that fits; none fits: the first greedy one.
    go_.remember(env.problem(), std::isfinite(env.best_step_time_s()) ? env.best_decision()
                                                                      : std::move(start.first));
  }

 private:
  void prepare(const Problem& /*problem*/) override { go_.load_policy(); }
};

}  // namespace

std::unique_ptr<Agent> make_go_pretrain(const GoOptions& options) {
  return std::make_unique<GoPretrainAgent>(options);
}

std::unique_ptr<Agent> make_go_finetune(const GoOptions& options) {
  return std::make_unique<GoFinetuneAgent>(options);
}

std::unique_ptr<Agent> make_go_zero_shot(const GoOptions& options) {
  return std::make_unique<GoZeroShotAgent>(options);
}

}  // namespace gopt::agents::go
