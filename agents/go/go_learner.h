// What the four GO agents (go_one.cpp, go_transfer.cpp) share: the policy they train or
// load (TrainedPolicy), the base decision and the default-pipeline priors they give every
// graph, the training loop with the callbacks every agent has, and the best decision they
// found per graph, which propose() returns. Internal to agents/go.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "agents/agent.h"
#include "agents/go/go_agent.h"
#include "agents/go/go_checkpoint.h"
#include "agents/go/go_training.h"
#include "core/rng.h"

namespace gopt::agents::go {

class GoLearner {
 public:
  explicit GoLearner(GoOptions options) : options_(std::move(options)) {}

  [[nodiscard]] const GoOptions& options() const { return options_; }
  /// The agent's name (GoOptions::name, else the mode's: go_one, go_pretrain, ...).
  [[nodiscard]] std::string name() const;
  [[nodiscard]] bool has_policy() const { return static_cast<bool>(trained_.policy); }
  [[nodiscard]] const TrainedPolicy& trained() const { return trained_; }

  /// A freshly initialised policy from `seed` (go_one, go_pretrain): the heads of the tasks
  /// with a prior start at zero, so that the prior alone sets the untrained distribution.
  void create_policy(std::uint64_t seed);
  /// The policy of the checkpoint the options name (go_finetune, go_zero_shot).
  void load_policy();
  /// Restarts the agent's random stream from `seed`.
  void reseed(std::uint64_t seed) { rng_ = core::Rng(seed); }

  /// The best decision found in training on `problem`, else the policy's greedy one.
  [[nodiscard]] core::Decision propose(const Problem& problem);
  /// Keeps `decision` as the one propose() returns for `problem`.
  void remember(const Problem& problem, core::Decision decision);

  /// What decisions keep for the tasks the policy does not decide.
  [[nodiscard]] DecisionBase base_for(const Problem& problem) const;
  /// The graph's tensors with the default-pipeline priors the options ask for.
  [[nodiscard]] GraphTensors tensors_for(const Problem& problem, const DecisionBase& base) const;
  [[nodiscard]] PpoTask task_for(Environment& env) const;
  [[nodiscard]] ValidationGraph validation_graph_for(Environment& env) const;
  /// InputError when the policy cannot place on `problem`'s cluster.
  void check_devices(const Problem& problem) const;

  /// A training loop for this agent's policy with the callbacks every GO agent has: coarse
  /// to fine (GoOptions::unit_phase) and, when set_snapshots() gave a file, snapshots.
  [[nodiscard]] TrainingLoop loop() { return loop(options_.unit_phase); }
  /// The same with a unit phase of `unit_phase` updates instead of the options'.
  [[nodiscard]] TrainingLoop loop(std::int64_t unit_phase);
  /// Runs `loop` on `tasks` and remembers the best decision found on each.
  void train(TrainingLoop& loop, std::vector<PpoTask>& tasks, const TrainBudget& budget,
             TrainingObserver* observer);
  void set_snapshots(TrainSnapshots snapshots) { snapshots_ = std::move(snapshots); }
  /// The members training runs share their updates with (null: alone).
  void set_group(LearnerGroup* group) { group_ = group; }

 private:
  void set_priors(GraphTensors& tensors, const DecisionBase& base,
                  const core::CompiledGraph& graph) const;
  [[nodiscard]] const GoPolicyOptions& policy_options() const;
  /// Where the policy runs (GoOptions::device, resolved; InputError for an unusable one).
  [[nodiscard]] torch::Device device() const;

  GoOptions options_;
  TrainSnapshots snapshots_;
  LearnerGroup* group_ = nullptr;
  TrainedPolicy trained_;
  core::Rng rng_{0};
  // The best decision per graph trained on (and the cluster size it was found for).
  std::map<const core::CompiledGraph*, std::pair<DeviceId, core::Decision>> best_;
};

/// The Agent methods every GO agent implements alike; `Interface` is Agent or
/// TransferableAgent.
template <class Interface>
class GoAgentBase : public Interface {
 public:
  [[nodiscard]] std::string name() const override { return go_.name(); }
  // Zero-shot too: it does not learn, but it simulates the greedy placement (and its memory
  // repairs) on the environment, so that the samples it took are counted.
  [[nodiscard]] bool is_learner() const override { return true; }
  void set_snapshots(TrainSnapshots snapshots) override { go_.set_snapshots(std::move(snapshots)); }
  void set_learner_group(LearnerGroup* group) override { go_.set_group(group); }
  [[nodiscard]] core::Decision propose(const Problem& problem) override {
    if (!go_.has_policy()) prepare(problem);
    return go_.propose(problem);
  }

 protected:
  explicit GoAgentBase(GoOptions options) : go_(std::move(options)) {}
  /// Gives the agent a policy to place `problem` with before it trained (created, or
  /// loaded from the checkpoint).
  virtual void prepare(const Problem& problem) = 0;

  GoLearner go_;
};

/// The four agents, by GoOptions::mode (make_go_agent).
[[nodiscard]] std::unique_ptr<Agent> make_go_one(const GoOptions& options);
[[nodiscard]] std::unique_ptr<Agent> make_go_pretrain(const GoOptions& options);
[[nodiscard]] std::unique_ptr<Agent> make_go_finetune(const GoOptions& options);
[[nodiscard]] std::unique_ptr<Agent> make_go_zero_shot(const GoOptions& options);

}  // namespace gopt::agents::go
