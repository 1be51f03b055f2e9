#include <gtest/gtest.h>

#include <cmath>
#include <map>
#include <string>

#include "agents/baselines/list_scheduling.h"
#include "agents/registry.h"
#include "tests/agents/agents_test_util.h"

namespace gopt::agents {
namespace {

using testing::Curve;
using testing::parallel_chains;

double mean_of(const std::vector<LearningCurvePoint>& p, std::size_t from, std::size_t to) {
  double s = 0;
  for (std::size_t i = from; i < to; ++i) s += p[i].mean_step_time_s;
  return s / static_cast<double>(to - from);
}

TEST(HdpTest, ImprovesItsRewardOnASmallProblem) {
  testing::ProblemFixture f(parallel_chains(2, 8), "p100x2_pcie", 3);
  AgentRegistry r;
  register_builtin_agents(r);
  // Two groups: the grouper must separate the op types and the placer the groups.
  auto agent = r.create("hdp", {{"groups", "2"}, {"seed", "1"}});
  Environment env(f.problem);
  Curve curve;
  agent->train(env, TrainBudget().with_max_steps(150), &curve);
  ASSERT_EQ(curve.points.size(), 150u);
  double early = mean_of(curve.points, 0, 20);
  double late = mean_of(curve.points, 130, 150);
  EXPECT_LT(late, early * 0.85) << "early " << early << " late " << late;
  // Better than a random placement of the same graph.
  Environment check(f.problem);
  auto random = r.create("random", {{"seed", "1"}})->propose(f.problem);
  EXPECT_LT(env.best_step_time_s(), check.evaluate(random).step_time_s);
  auto best = agent->propose(f.problem);
  ASSERT_TRUE(best.placement.has_value());
  EXPECT_DOUBLE_EQ(env.evaluate(best).step_time_s, env.best_step_time_s());
}

TEST(HdpTest, BeatsOneDeviceOnASmallGraph) {
  // Two independent heavy chains joined at the end, two GPUs: one chain per device halves
  // the step. Defaults, and the reference implementation's settings (docs/agents.md "hdp").
  testing::ProblemFixture f(parallel_chains(2, 8, /*join=*/true), "p100x2_pcie", 5);
  AgentRegistry r;
  register_builtin_agents(r);
  Environment one(f.problem);
  const double single = one.evaluate(core::Decision{}).step_time_s;
  const std::map<std::string, std::string> reference = {
      {"learning_rate", "0.1"},       {"lr_decay", "0.95"},
      {"lr_decay_start", "400"},      {"tanh_constant", "1"},
      {"baseline_from_invalid", "1"}, {"noise_relative", "1"},
      {"noise_steps", "750"},         {"seed", "2"}};
  for (auto options : {std::map<std::string, std::string>{{"seed", "2"}}, reference}) {
    options["groups"] = "4";  // fewer groups than the default 40: a faster test
    auto agent = r.create("hdp", options);
    Environment env(f.problem);
    agent->train(env, TrainBudget().with_max_steps(60), nullptr);
    Environment check(f.problem);
    const Evaluation e = check.evaluate(agent->propose(f.problem));
    EXPECT_FALSE(e.oom);
    EXPECT_LT(e.step_time_s, 0.8 * single) << options.size() << " options";
  }
}

// Chains of identical MatMuls joined at the end, chain c in layer c: only the layer
// metadata tells them apart (the chains of parallel_chains differ in op type).
core::Graph layered_chains(int chains, int length) {
  core::GraphBuilder b("layered");
  auto in = b.add("in", "Placeholder").output({256, 1024});
  auto sum = b.add("sum", "AddN").output({256, 1024});
  for (int c = 0; c < chains; ++c) {
    core::NodeId prev = in;
    for (int i = 0; i < length; ++i) {
      auto n = b.add("c" + std::to_string(c) + "_" + std::to_string(i), "MatMul")
                   .output({256, 1024})
                   .flops(2.0 * 256 * 1024 * 1024 * 8)
                   .layer(c);
      b.connect(prev, n);
      prev = n;
    }
    b.connect(prev, sum);
  }
  return std::move(b).build();
}

TEST(HdpTest, LayerFeaturesGroupByLayerAndBeatOneDevice) {
  // A dominant layer one-hot and sharp grouper logits: from the first update, every sampled
  // grouping keeps each chain whole, so the first samples are no slower than one device
  // (each chain runs on one device). Trained, one chain per device.
  testing::ProblemFixture f(layered_chains(2, 8), "p100x2_pcie", 5);
  AgentRegistry r;
  register_builtin_agents(r);
  Environment one(f.problem);
  const double single = one.evaluate(core::Decision{}).step_time_s;
  const std::map<std::string, std::string> options = {{"layer_feature_weight", "20"},
                                                      {"grouper_logit_scale", "10"},
                                                      {"groups", "4"},
                                                      {"seed", "2"}};
  {
    Environment env(f.problem);
    Curve curve;
    r.create("hdp", options)->train(env, TrainBudget().with_max_steps(1), &curve);
    EXPECT_LE(curve.points.at(0).mean_step_time_s, single * (1 + 1e-9));
  }

  auto agent = r.create("hdp", options);
  Environment env(f.problem);
  agent->train(env, TrainBudget().with_max_steps(60), nullptr);
  Environment check(f.problem);
  const Evaluation e = check.evaluate(agent->propose(f.problem));
  EXPECT_FALSE(e.oom);
  EXPECT_LT(e.step_time_s, 0.8 * single);
}

TEST(HdpTest, SameSeedSameTraining) {
  std::vector<double> runs[2];
  for (auto& run : runs) {
    testing::ProblemFixture f(parallel_chains(3, 4), "p100x2_pcie", 7);
    AgentRegistry r;
    register_builtin_agents(r);
    auto agent = r.create("hdp", {{"groups", "6"}});
    Environment env(f.problem);
    Curve curve;
    agent->train(env, TrainBudget().with_max_steps(8), &curve);
    for (const auto& p : curve.points) run.push_back(p.mean_step_time_s);
  }
  EXPECT_EQ(runs[0], runs[1]);
}

TEST(HdpTest, TrainedDecisionIsNotReusedOnAnotherCluster) {
  // The same graph object on four devices, then on two.
  auto graph = core::CompiledGraph::compile(parallel_chains(2, 3));
  auto four = hardware::load_profile("p100x4_pcie");
  auto two = hardware::load_profile("p100x2_pcie");
  hardware::RooflineCostModel cost_four(four);
  hardware::RooflineCostModel cost_two(two);
  Problem on_four{graph, four, cost_four, 1};
  Problem on_two{graph, two, cost_two, 1};
  AgentRegistry r;
  register_builtin_agents(r);
  auto agent = r.create("hdp", {{"groups", "4"}});
  Environment env(on_four);
  agent->train(env, TrainBudget().with_max_steps(3), nullptr);
  auto d = agent->propose(on_two);
  EXPECT_NO_THROW(core::validate_decision(d, graph.num_nodes(), 2));
}

TEST(HdpTest, ProposeWithoutTrainingIsValid) {
  testing::ProblemFixture f(parallel_chains(2, 3), "p100x4_pcie");
  AgentRegistry r;
  register_builtin_agents(r);
  auto d = r.create("hdp")->propose(f.problem);
  ASSERT_TRUE(d.placement.has_value());
  EXPECT_NO_THROW(core::validate_decision(d, f.problem.num_nodes(), f.problem.num_devices()));
}

// order: critical_path: every placement it samples runs in critical-path order, and its
// decision carries those priorities.
TEST(HdpTest, CriticalPathOrderGivesEverySampledPlacementItsPriorities) {
  testing::ProblemFixture f(parallel_chains(2, 8, /*join=*/true), "p100x2_pcie", 5);
  AgentRegistry r;
  register_builtin_agents(r);
  auto agent = r.create("hdp", {{"order", "critical_path"}});
  Environment env(f.problem);
  agent->train(env, TrainBudget().with_max_steps(2), nullptr);
  const core::Decision best = env.best_decision();
  ASSERT_TRUE(best.priority.has_value());
  EXPECT_EQ(*best.priority, critical_path_priorities(f.problem, *best.placement));
  const core::Decision proposed = agent->propose(f.problem);
  ASSERT_TRUE(proposed.priority.has_value());
  EXPECT_EQ(*proposed.priority, critical_path_priorities(f.problem, *proposed.placement));
  EXPECT_FALSE(r.create("hdp")->propose(f.problem).priority.has_value());
}

}  // namespace
}  // namespace gopt::agents
