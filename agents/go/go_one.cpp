// go_one and the multi-task agents: a policy trained from scratch on one graph.
#include <memory>
#include <utility>
#include <vector>

#include "agents/go/go_learner.h"

namespace gopt::agents::go {
namespace {

class GoOneAgent final : public GoAgentBase<Agent> {
 public:
  explicit GoOneAgent(GoOptions options) : GoAgentBase(std::move(options)) {}

  void train(Environment& env, const TrainBudget& budget, TrainingObserver* observer) override {
    const GoOptions& o = go_.options();
    go_.create_policy(core::mix_seed(o.seed, env.problem().seed));
    TrainingLoop loop = go_.loop();
    if (o.oversize_learning_rate > 0 && oversize(env)) {
      loop.add(LearningRateSchedule::constant(o.oversize_learning_rate));
    }
    std::vector<PpoTask> tasks;
    tasks.push_back(go_.task_for(env));
    go_.train(loop, tasks, budget, observer);
  }

 private:
  void prepare(const Problem& problem) override {
    go_.create_policy(core::mix_seed(go_.options().seed, problem.seed));
  }

  // Whether the graph runs out of memory with every op on one device. Asked of the
  // simulator directly: a property of the problem, not a sample of the search.
  static bool oversize(Environment& env) { return env.simulator().simulate(core::Decision{}).oom; }
};

}  // namespace

std::unique_ptr<Agent> make_go_one(const GoOptions& options) {
  return std::make_unique<GoOneAgent>(options);
}

}  // namespace gopt::agents::go
