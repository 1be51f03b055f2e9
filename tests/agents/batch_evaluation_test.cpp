// Batched evaluation (issue #56): Environment::evaluate_many counts a batch as evaluate()
// one by one would, and every agent that samples through it (GO, multi-task GO, HDP, the
// search reference) trains to the same curve and decision on 1 and on 2 threads, bit for
// bit.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <vector>

#include "agents/agent.h"
#include "agents/registry.h"
#include "core/errors.h"
#include "core/rng.h"
#include "tests/agents/agents_test_util.h"
#include "tests/support/expect_error.h"
#include "tests/support/random_dag.h"

namespace gopt::agents {
namespace {

using testing::Curve;

// Random placements (and priorities) of `f`'s graph.
std::vector<core::Decision> random_decisions(const testing::ProblemFixture& f, int count,
                                             std::uint64_t seed) {
  core::Rng rng(seed);
  std::vector<core::Decision> out;
  for (int i = 0; i < count; ++i) {
    std::vector<DeviceId> placement(static_cast<std::size_t>(f.compiled.num_nodes()));
    for (auto& d : placement)
      d = static_cast<DeviceId>(rng.uniform_int(0, f.problem.num_devices() - 1));
    core::Decision d;
    d.placement = std::move(placement);
    out.push_back(std::move(d));
  }
  return out;
}

TEST(EvaluateManyTest, CountsABatchAsEvaluationsOneByOne) {
  testing::ProblemFixture f(
      gopt::testing::random_dag(gopt::testing::RandomDagOptions().with_nodes(300)), "p100x4_pcie");
  const auto decisions = random_decisions(f, 23, 5);
  Environment serial(f.problem);
  std::vector<Evaluation> expected;
  for (const auto& d : decisions) expected.push_back(serial.evaluate(d));
  for (int threads : {1, 2, 3}) {
    Environment batched(f.problem);
    batched.set_threads(threads);
    EXPECT_EQ(batched.threads(), threads);
    const auto got = batched.evaluate_many(decisions);
    ASSERT_EQ(got.size(), expected.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i].step_time_s, expected[i].step_time_s) << "threads " << threads << " i " << i;
      EXPECT_EQ(got[i].oom, expected[i].oom);
    }
    EXPECT_EQ(batched.samples(), serial.samples());
    EXPECT_EQ(batched.best_step_time_s(), serial.best_step_time_s());
    EXPECT_EQ(*batched.best_decision().placement, *serial.best_decision().placement);
    EXPECT_EQ(batched.improvements(), serial.improvements());
  }
}

TEST(EvaluateManyTest, ABadDecisionIsReportedAsASerialLoopWould) {
  testing::ProblemFixture f(testing::parallel_chains(2, 6), "p100x2_pcie");
  auto decisions = random_decisions(f, 8, 2);
  (*decisions[3].placement)[0] = 7;  // no device 7
  (*decisions[6].placement)[0] = 9;
  Environment env(f.problem);
  env.set_threads(2);
  const std::string message = gopt::testing::error_of([&] { (void)env.evaluate_many(decisions); });
  EXPECT_NE(message.find("placed on device 7,"), std::string::npos) << message;
  EXPECT_EQ(env.samples(), 0);  // nothing of the failed batch is counted
}

// A StepTimer whose time of a decision is the number of ops it places on device 1, in
// milliseconds, and that counts what it was asked.
class DeviceOneTimer : public StepTimer {
 public:
  Seconds step_time_s(const core::Decision& d) override {
    ++calls;
    return 1e-3 * static_cast<double>(std::count(d.placement->begin(), d.placement->end(), 1));
  }
  int calls = 0;
};

// Measured rewards (experiments/run/measured_reward.h): with a timer, every evaluation that
// fits takes the timer's step time, batches and delta simulation included, the best
// decision is the timer's best, and the simulation itself keeps its simulated time.
TEST(StepTimerTest, EvaluationsTakeTheTimersStepTimes) {
  testing::ProblemFixture f(testing::parallel_chains(2, 6), "p100x2_pcie");
  const auto decisions = random_decisions(f, 9, 4);
  DeviceOneTimer timer;
  Environment env(f.problem);
  env.set_threads(2);
  env.set_step_timer(&timer);
  EXPECT_EQ(env.step_timer(), &timer);
  const auto batch = env.evaluate_many(decisions);
  EXPECT_EQ(timer.calls, 9);
  double best = 1e30;
  for (std::size_t i = 0; i < decisions.size(); ++i) {
    const auto on_one =
        std::count(decisions[i].placement->begin(), decisions[i].placement->end(), 1);
    EXPECT_DOUBLE_EQ(batch[i].step_time_s, 1e-3 * static_cast<double>(on_one)) << i;
    best = std::min(best, batch[i].step_time_s);
  }
  EXPECT_DOUBLE_EQ(env.best_step_time_s(), best);
  const Evaluation single = env.evaluate(decisions[0]);
  EXPECT_DOUBLE_EQ(single.step_time_s, batch[0].step_time_s);
  EXPECT_NE(env.last_result().step_time_s, single.step_time_s);  // the simulation's own
  EXPECT_DOUBLE_EQ(env.evaluate_delta(decisions[1]).step_time_s, batch[1].step_time_s);
  EXPECT_EQ(timer.calls, 11);
  EXPECT_EQ(env.samples(), 11);
  env.set_step_timer(nullptr);  // the simulator's again
  Environment plain(f.problem);
  EXPECT_DOUBLE_EQ(env.evaluate(decisions[2]).step_time_s,
                   plain.evaluate(decisions[2]).step_time_s);
  EXPECT_EQ(timer.calls, 11);
}

// An agent's learning curve and proposal after `steps` updates with `threads` threads.
struct Trained {
  std::vector<double> best;
  std::vector<double> mean;
  std::vector<std::int64_t> samples;
  core::Decision decision;
};

Trained train(const std::string& agent_name, const std::map<std::string, std::string>& options,
              const Problem& problem, int threads, std::int64_t steps) {
  AgentRegistry r;
  register_builtin_agents(r);
  auto agent = r.create(agent_name, options);
  Environment env(problem);
  env.set_threads(threads);
  Curve curve;
  agent->train(env, TrainBudget().with_max_steps(steps), &curve);
  Trained t;
  for (const auto& p : curve.points) {
    t.best.push_back(p.best_step_time_s);
    t.mean.push_back(p.mean_step_time_s);
    t.samples.push_back(p.samples);
  }
  t.decision = agent->propose(problem);
  return t;
}

void expect_same(const Trained& a, const Trained& b, const std::string& what) {
  EXPECT_EQ(a.best, b.best) << what;
  EXPECT_EQ(a.mean, b.mean) << what;
  EXPECT_EQ(a.samples, b.samples) << what;
  EXPECT_EQ(a.decision.placement, b.decision.placement) << what;
  EXPECT_EQ(a.decision.priority, b.decision.priority) << what;
  EXPECT_EQ(a.decision.fusion, b.decision.fusion) << what;
}

TEST(EvaluateManyTest, EveryAgentThatSamplesTrainsAlikeOnOneAndTwoThreads) {
  testing::ProblemFixture f(testing::parallel_chains(3, 6, /*join=*/true), "p100x4_pcie", 7);
  const std::map<std::string, std::map<std::string, std::string>> agents = {
      {"go_one", {{"hidden", "16"}, {"segment_length", "4"}, {"seed", "3"}}},
      {"go_multitask", {{"hidden", "16"}, {"segment_length", "4"}, {"seed", "3"}}},
      {"hdp", {{"groups", "4"}, {"seed", "2"}}},
      {"annealing", {{"seed", "4"}, {"samples_per_step", "4"}}},
  };
  for (const auto& [name, options] : agents) {
    const Trained one = train(name, options, f.problem, 1, 4);
    const Trained two = train(name, options, f.problem, 2, 4);
    ASSERT_FALSE(one.best.empty()) << name;
    expect_same(one, two, name);
  }
}

}  // namespace
}  // namespace gopt::agents
