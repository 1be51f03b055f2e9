// GO-one as an agent (agents/go/go_agent.h): learning placements whose optimum is known,
// its options (weight-gradient units, the oversize learning rate, critical-path order,
// coarse-to-fine), the unit phase's end, and determinism.
#include <gtest/gtest.h>

#include <limits>
#include <map>

#include "agents/baselines/list_scheduling.h"
#include "agents/go/go_agent.h"
#include "agents/go/go_inspect.h"
#include "agents/go/go_learner.h"
#include "agents/go/go_training.h"
#include "agents/registry.h"
#include "datasets/workload_registry.h"
#include "tests/agents/agents_test_util.h"
#include "tests/agents/go/go_test_support.h"
#include "tests/support/expect_error.h"

namespace gopt::agents::go {
namespace {

using testing::Curve;

// The mean sampled step time of each of `steps` training updates, and the placement the
// agent proposes after them.
std::pair<std::vector<double>, std::vector<core::DeviceId>> train_and_propose(
    Agent& agent, const Problem& problem, std::int64_t steps) {
  Environment env(problem);
  Curve curve;
  agent.train(env, TrainBudget().with_max_steps(steps), &curve);
  std::vector<double> means;
  for (const auto& p : curve.points) means.push_back(p.mean_step_time_s);
  return {means, *agent.propose(problem).placement};
}

// GoOptions::weight_gradient_units reaches the tensors the agents train on: off keeps whole
// units, always splits, fewer_units_than_devices splits on four devices and not on two;
// an unknown value names the option.
TEST(GoAgentTest, WeightGradientUnitsOptionSetsTheTrainingUnits) {
  datasets::WorkloadRegistry workloads;
  datasets::register_builtin_workloads(workloads);
  testing::ProblemFixture four(workloads.generate("transformer_xl_2"), "p100x4_pcie", 1);
  testing::ProblemFixture two(workloads.generate("transformer_xl_2"), "p100x2_pcie", 1);
  const auto units = [](const testing::ProblemFixture& f, WeightGradientUnits split) {
    GoOptions options;
    options.weight_gradient_units = split;
    const GoLearner learner(options);
    return learner.tensors_for(f.problem, learner.base_for(f.problem)).num_units;
  };
  const std::int64_t whole = units(four, WeightGradientUnits::kOff);
  EXPECT_EQ(units(four, WeightGradientUnits::kAlways), whole + 2);
  EXPECT_EQ(units(two, WeightGradientUnits::kAlways), whole + 2);
  EXPECT_EQ(units(four, WeightGradientUnits::kFewerUnitsThanDevices), whole + 2);
  EXPECT_EQ(units(two, WeightGradientUnits::kFewerUnitsThanDevices), whole);

  AgentRegistry r;
  register_builtin_agents(r);
  (void)r.create("go_one", {{"weight_gradient_units", "fewer_units_than_devices"}}, "exp.yaml");
  const auto message = gopt::testing::error_of([&] {
    (void)r.create("go_one", {{"weight_gradient_units", "some"}}, "exp.yaml");
  });
  EXPECT_TRUE(gopt::testing::contains(message, "agents.go_one.weight_gradient_units")) << message;
}

TEST(GoAgentTest, GoOneWithUnitDecisionsFindsTheBestPlacementOfUnits) {
  testing::ProblemFixture f(unit_graph(40), "p100x2_pcie", 1);
  Environment reference(f.problem);
  // The hand-made optimum: the decoder side (layer and attention) on device 1.
  core::Decision split;
  split.placement = std::vector<core::DeviceId>(f.compiled.num_nodes(), 0);
  for (core::NodeId v = 0; v < f.compiled.num_nodes(); ++v) {
    if (f.compiled.node_names()[static_cast<std::size_t>(v)].rfind("dec/", 0) == 0) {
      (*split.placement)[static_cast<std::size_t>(v)] = 1;
    }
  }
  const double optimum = reference.evaluate(split).step_time_s;
  core::Decision single;
  single.placement = std::vector<core::DeviceId>(f.compiled.num_nodes(), 0);
  ASSERT_LT(optimum, 0.75 * reference.evaluate(single).step_time_s);

  AgentRegistry r;
  register_builtin_agents(r);
  auto agent = r.create(
      "go_one",
      {{"hidden", "16"}, {"segment_length", "8"}, {"unit_decisions", "true"}, {"seed", "1"}});
  Environment env(f.problem);
  agent->train(env, TrainBudget().with_max_steps(20), nullptr);
  EXPECT_LE(env.best_step_time_s(), 1.001 * optimum);
  EXPECT_LE(env.samples(), 20 * 17);
}

TEST(GoAgentTest, GoOneLearnsAPlacementWithAKnownOptimum) {
  testing::ProblemFixture f(parallel_chains(2, 12), "p100x2_pcie", 7);
  Environment reference(f.problem);
  const double optimum = reference.evaluate(chains_optimum(f.compiled)).step_time_s;
  core::Decision single;
  single.placement = std::vector<core::DeviceId>(f.compiled.num_nodes(), 0);
  const double single_time = reference.evaluate(single).step_time_s;
  ASSERT_LT(optimum, 0.6 * single_time);  // the problem is worth solving

  AgentRegistry r;
  register_builtin_agents(r);
  auto agent = r.create(
      "go_one",
      {{"hidden", "32"}, {"segment_length", "8"}, {"samples_per_step", "16"}, {"seed", "1"}});
  Environment env(f.problem);
  Curve curve;
  agent->train(env, TrainBudget().with_max_steps(150), &curve);
  ASSERT_EQ(curve.points.size(), 150u);
  // The reward moved: the last updates sample placements within a few percent of the
  // optimum, and the best found is at it. (Seeds 1, 3, 4 and 5 get there in 150 updates;
  // seed 2's samples stay spread although its best is within 2%.)
  EXPECT_LT(curve.points.back().mean_step_time_s, 1.05 * optimum)
      << "first mean " << curve.points.front().mean_step_time_s << " optimum " << optimum;
  EXPECT_LT(env.best_step_time_s(), 1.02 * optimum);
  Environment check(f.problem);
  EXPECT_LT(check.evaluate(agent->propose(f.problem)).step_time_s, 1.02 * optimum);
}

// GO-one trains at `oversize_learning_rate` on a graph that runs out of memory on one
// device, and at `learning_rate` on one that fits: two chains of 12 ops holding 1 GiB of
// parameters each need 24 GiB, more than a P100's 16 GiB, but fit one chain per device.
TEST(GoAgentTest, GoOneTakesTheOversizeLearningRateOnlyOnAGraphTooLargeForOneDevice) {
  auto chains = [](core::Bytes params) {
    core::GraphBuilder b("heavy_chains");
    auto in = b.add("in", "Placeholder").output({256, 1024});
    for (int c = 0; c < 2; ++c) {
      core::NodeId prev = in;
      for (int i = 0; i < 12; ++i) {
        auto n =
            b.add("c" + std::to_string(c) + "_" + std::to_string(i), c == 0 ? "MatMul" : "Conv2D")
                .output({256, 1024})
                .flops(2.0 * 256 * 1024 * 1024 * 8)
                .param_bytes(params);
        b.connect(prev, n);
        prev = n;
      }
    }
    return std::move(b).build();
  };
  AgentRegistry r;
  register_builtin_agents(r);
  auto run = [&](const testing::ProblemFixture& f, const std::string& lr,
                 const std::string& oversize_lr) {
    auto agent = r.create("go_one", {{"hidden", "16"},
                                     {"segment_length", "8"},
                                     {"seed", "3"},
                                     {"learning_rate", lr},
                                     {"oversize_learning_rate", oversize_lr}});
    return train_and_propose(*agent, f.problem, 5);
  };

  testing::ProblemFixture oversize(chains(core::Bytes{1} << 30), "p100x2_pcie", 4);
  ASSERT_TRUE(Environment(oversize.problem).evaluate(core::Decision{}).oom);
  const auto both = run(oversize, "0.0003", "0.003");
  EXPECT_EQ(both, run(oversize, "0.003", "0"));
  EXPECT_NE(both, run(oversize, "0.0003", "0"));  // the rate matters on this problem

  testing::ProblemFixture fits(chains(core::Bytes{1} << 20), "p100x2_pcie", 4);
  ASSERT_FALSE(Environment(fits.problem).evaluate(core::Decision{}).oom);
  const auto small = run(fits, "0.0003", "0.003");
  EXPECT_EQ(small, run(fits, "0.0003", "0"));
  EXPECT_NE(small, run(fits, "0.003", "0"));

  const auto message = gopt::testing::error_of([&] {
    (void)r.create("go_one", {{"oversize_learning_rate", "-1"}}, "exp.yaml");
  });
  EXPECT_TRUE(gopt::testing::contains(message, "exp.yaml")) << message;
  EXPECT_TRUE(gopt::testing::contains(message, "agents.go_one.oversize_learning_rate")) << message;
}

TEST(GoAgentTest, SameSeedSameRun) {
  testing::ProblemFixture f(parallel_chains(3, 4), "p100x4_pcie", 2);
  AgentRegistry r;
  register_builtin_agents(r);
  auto run = [&] {
    auto agent = r.create("go_one", {{"hidden", "16"}, {"segment_length", "4"}, {"seed", "9"}});
    return train_and_propose(*agent, f.problem, 4);
  };
  auto a = run();
  auto b = run();
  EXPECT_EQ(a.first, b.first);
  EXPECT_EQ(a.second, b.second);
}

// order: critical_path: every placement GO-one samples runs in critical-path order, and its
// decision carries those priorities; an agent that decides priorities itself refuses it.
TEST(GoAgentTest, CriticalPathOrderGivesEverySampledPlacementItsPriorities) {
  testing::ProblemFixture f(testing::parallel_chains(3, 4, /*join=*/true), "p100x4_pcie", 2);
  AgentRegistry r;
  register_builtin_agents(r);
  auto agent = r.create(
      "go_one",
      {{"hidden", "16"}, {"segment_length", "4"}, {"seed", "9"}, {"order", "critical_path"}});
  Environment env(f.problem);
  agent->train(env, TrainBudget().with_max_steps(3), nullptr);
  const core::Decision best = env.best_decision();
  ASSERT_TRUE(best.placement.has_value());
  ASSERT_TRUE(best.priority.has_value());
  EXPECT_EQ(*best.priority, critical_path_priorities(f.problem, *best.placement));
  const core::Decision proposed = agent->propose(f.problem);
  ASSERT_TRUE(proposed.priority.has_value());
  EXPECT_EQ(*proposed.priority, critical_path_priorities(f.problem, *proposed.placement));
  // The executor's order (the default) leaves the priorities to the executor.
  auto plain = r.create("go_one", {{"hidden", "16"}, {"segment_length", "4"}, {"seed", "9"}});
  Environment plain_env(f.problem);
  plain->train(plain_env, TrainBudget().with_max_steps(1), nullptr);
  EXPECT_FALSE(plain_env.best_decision().priority.has_value());
  const auto message = gopt::testing::error_of([&] {
    (void)r.create("go_scheduling", {{"order", "critical_path"}}, "exp.yaml");
  });
  EXPECT_NE(message.find("decides priorities itself"), std::string::npos) << message;
}

// Coarse to fine (unit_phase): the first updates are exactly those of unit decisions, the
// later ones per op; unit_phase over the whole budget is unit decisions.
TEST(GoAgentTest, CoarseToFineDecidesPerUnitFirstThenPerOp) {
  testing::ProblemFixture f(unit_graph(), "p100x2_pcie", 1);
  AgentRegistry r;
  register_builtin_agents(r);
  auto curve_of = [&](const std::map<std::string, std::string>& extra) {
    std::vector<double> means;
    for (const auto& p : small_go_one_curve(f.problem, extra, 8)) {
      means.push_back(p.mean_step_time_s);
    }
    return means;
  };
  const auto units = curve_of({{"unit_decisions", "true"}});
  const auto per_op = curve_of({});
  const auto phased = curve_of({{"unit_phase", "4"}});
  ASSERT_EQ(units.size(), 8u);
  EXPECT_EQ(curve_of({{"unit_phase", "8"}}), units);
  EXPECT_EQ(std::vector<double>(phased.begin(), phased.begin() + 4),
            std::vector<double>(units.begin(), units.begin() + 4));
  EXPECT_NE(phased, units);
  EXPECT_NE(phased, per_op);

  const auto message = gopt::testing::error_of([&] {
    (void)r.create("go_one", {{"unit_phase", "4"}, {"unit_decisions", "true"}}, "exp.yaml");
  });
  EXPECT_TRUE(gopt::testing::contains(message, "agents.go_one.unit_phase")) << message;

  // A handover of 2 updates after a unit phase of 4: the unit phase is unchanged, the
  // handover's updates differ from an abrupt switch.
  const auto handed = curve_of({{"unit_phase", "4"}, {"unit_handover", "2"}});
  EXPECT_EQ(std::vector<double>(handed.begin(), handed.begin() + 4),
            std::vector<double>(units.begin(), units.begin() + 4));
  EXPECT_NE(handed, phased);
  const auto lone = gopt::testing::error_of([&] {
    (void)r.create("go_one", {{"unit_handover", "2"}}, "exp.yaml");
  });
  EXPECT_TRUE(gopt::testing::contains(lone, "agents.go_one.unit_handover")) << lone;
  EXPECT_TRUE(gopt::testing::contains(lone, "unit_phase > 0")) << lone;
}

// The unit phase's end with a patience: the first update after which the best step time has
// not improved over the last `patience` updates; without a valid time, never.
TEST(GoTrainingTest, UnitPhaseEndsOnceTheBestStopsImproving) {
  std::vector<LearningCurvePoint> curve;
  const double inf = std::numeric_limits<double>::infinity();
  for (const double best : {inf, inf, inf, 5.0, 4.0, 4.0, 4.0, 3.0, 3.0, 3.0}) {
    curve.push_back(LearningCurvePoint{static_cast<std::int64_t>(curve.size()) + 1, 0, best, 0, 0});
  }
  EXPECT_EQ(unit_phase_end(curve, 10, 8, 0), 8);    // no patience: the fixed phase
  EXPECT_EQ(unit_phase_end(curve, 10, 8, 2), 7);    // 4.0 after updates 5 and 7
  EXPECT_EQ(unit_phase_end(curve, 6, 8, 2), 8);     // not yet told at update 6
  EXPECT_EQ(unit_phase_end(curve, 10, 8, 1), 6);    // 4.0 after updates 5 and 6
  EXPECT_EQ(unit_phase_end(curve, 10, 5, 1), 5);    // the cap first
  EXPECT_EQ(unit_phase_end(curve, 10, 20, 3), 20);  // 5, 4, 3: always improving over 3
  EXPECT_EQ(
      unit_phase_end(std::vector<LearningCurvePoint>(curve.begin(), curve.begin() + 3), 3, 8, 1),
      8);  // no valid placement yet is no stall
}

// A unit phase with a patience decides per unit until unit_phase_end() of its own curve,
// then per op, and a patience needs a unit phase.
TEST(GoAgentTest, CoarseToFineWithPatienceSwitchesOnceTheUnitPhaseStalls) {
  testing::ProblemFixture f(unit_graph(), "p100x2_pcie", 1);
  AgentRegistry r;
  register_builtin_agents(r);
  auto curve_of = [&](const std::map<std::string, std::string>& extra) {
    return small_go_one_curve(f.problem, extra, 12);
  };
  const auto units = curve_of({{"unit_decisions", "true"}});
  const std::int64_t end = unit_phase_end(units, 12, 12, 2);
  ASSERT_LT(end, 12) << "the unit decisions' best should stall within 12 updates";
  const auto means = [](const std::vector<LearningCurvePoint>& c, std::int64_t n) {
    std::vector<double> m;
    for (std::int64_t i = 0; i < n; ++i)
      m.push_back(c[static_cast<std::size_t>(i)].mean_step_time_s);
    return m;
  };
  const auto patient = curve_of({{"unit_phase", "12"}, {"unit_patience", "2"}});
  ASSERT_EQ(patient.size(), 12u);
  EXPECT_EQ(means(patient, end), means(units, end));
  EXPECT_NE(means(patient, 12), means(units, 12));
  // Switching at `end` is what a fixed unit phase of `end` updates does.
  EXPECT_EQ(means(patient, 12), means(curve_of({{"unit_phase", std::to_string(end)}}), 12));

  const auto lone = gopt::testing::error_of([&] {
    (void)r.create("go_one", {{"unit_patience", "2"}}, "exp.yaml");
  });
  EXPECT_TRUE(gopt::testing::contains(lone, "agents.go_one.unit_patience")) << lone;
  EXPECT_TRUE(gopt::testing::contains(lone, "unit_phase > 0")) << lone;
}

}  // namespace
}  // namespace gopt::agents::go
