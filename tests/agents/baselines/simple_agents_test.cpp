#include <gtest/gtest.h>

#include "agents/environment.h"
#include "agents/registry.h"
#include "core/decision.h"
#include "core/errors.h"
#include "tests/agents/agents_test_util.h"
#include "tests/support/random_dag.h"

namespace gopt::agents {
namespace {

TEST(SimpleAgentsTest, ValidDecisionsThatRespectColocation) {
  core::GraphBuilder b("coloc");
  auto v = b.add("var", "VariableV2").output({256, 256}).param_bytes(256 * 256 * 4).colocation("w");
  auto x = b.add("x", "Placeholder").output({32, 256});
  auto mm = b.add("mm", "MatMul").output({32, 256}).flops(2.0 * 32 * 256 * 256);
  auto g = b.add("grad", "MatMul").output({256, 256}).flops(2.0 * 32 * 256 * 256);
  auto u = b.add("update", "ApplyGradientDescent").output({256, 256}).colocation("w");
  b.connect(v, mm).connect(x, mm).connect(mm, g).connect(x, g).connect(g, u).connect(v, u);
  testing::ProblemFixture f(std::move(b).build(), "p100x4_pcie");
  AgentRegistry r;
  register_builtin_agents(r);
  for (const char* name : {"single_device", "round_robin", "random"}) {
    auto d = r.create(name)->propose(f.problem);
    ASSERT_TRUE(d.placement.has_value()) << name;
    EXPECT_NO_THROW(core::validate_decision(d, f.problem.num_nodes(), f.problem.num_devices()));
    EXPECT_EQ(d.device_of(v), d.device_of(u)) << name;
  }
  auto single = r.create("single_device", {{"device", "2"}})->propose(f.problem);
  for (auto dev : *single.placement) EXPECT_EQ(dev, 2);
  EXPECT_THROW((void)r.create("single_device", {{"device", "9"}})->propose(f.problem),
               core::InputError);
}

TEST(SimpleAgentsTest, RandomIsSeededAndRoundRobinSpreads) {
  testing::ProblemFixture f(
      gopt::testing::random_dag(gopt::testing::RandomDagOptions().with_nodes(400)), "p100x4_pcie");
  AgentRegistry r;
  register_builtin_agents(r);
  auto a = r.create("random", {{"seed", "5"}})->propose(f.problem);
  auto b = r.create("random", {{"seed", "5"}})->propose(f.problem);
  auto c = r.create("random", {{"seed", "6"}})->propose(f.problem);
  EXPECT_EQ(*a.placement, *b.placement);
  EXPECT_NE(*a.placement, *c.placement);
  auto rr = r.create("round_robin")->propose(f.problem);
  std::vector<int> per_device(4, 0);
  for (auto d : *rr.placement) per_device[static_cast<std::size_t>(d)]++;
  for (int count : per_device) EXPECT_EQ(count, 100);
}

// The environment keeps every sample that improved the best valid step time, so that
// convergence is counted sample by sample: not samples that tie or lose, and not one that
// runs out of memory however fast.
TEST(EnvironmentTest, KeepsTheSamplesThatImprovedTheBest) {
  testing::ProblemFixture f(
      gopt::testing::random_dag(gopt::testing::RandomDagOptions().with_nodes(60)), "p100x4_pcie");
  Environment env(f.problem);
  const auto n = static_cast<std::size_t>(f.problem.num_nodes());
  core::Decision one;
  one.placement = std::vector<core::DeviceId>(n, 0);
  core::Decision spread;
  spread.placement = std::vector<core::DeviceId>(n);
  for (std::size_t i = 0; i < n; ++i) (*spread.placement)[i] = static_cast<core::DeviceId>(i % 4);
  const Evaluation a = env.evaluate(spread);
  const Evaluation b = env.evaluate(one);
  (void)env.evaluate(spread);                     // a tie: no improvement
  env.record({a.step_time_s / 4, true, 0}, one);  // out of memory: never the best
  ASSERT_FALSE(a.oom);
  ASSERT_FALSE(b.oom);
  ASSERT_NE(a.step_time_s, b.step_time_s);
  std::vector<BestImprovement> expected{{1, a.step_time_s}};
  if (b.step_time_s < a.step_time_s) expected.push_back({2, b.step_time_s});
  EXPECT_EQ(env.samples(), 4);
  EXPECT_EQ(env.improvements(), expected);
  EXPECT_EQ(env.improvements().back().step_time_s, env.best_step_time_s());

  Environment restored(f.problem);
  restored.restore(env.samples(), env.best_step_time_s(), env.best_decision(), env.improvements());
  restored.record({env.best_step_time_s() / 2, false, -1}, spread);
  expected.push_back({5, env.best_step_time_s() / 2});
  EXPECT_EQ(restored.improvements(), expected);
}

}  // namespace
}  // namespace gopt::agents
