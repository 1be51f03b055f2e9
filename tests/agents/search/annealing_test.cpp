// The equal-budget search reference (`annealing`): never worse than its best start,
// deterministic per seed, exactly its sample budget, and it finds what one device misses.
#include "agents/search/annealing.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>

#include "agents/baselines/list_scheduling.h"
#include "agents/decision_utils.h"
#include "agents/placement_utils.h"
#include "core/errors.h"
#include "core/graph.h"
#include "tests/agents/agents_test_util.h"

namespace gopt::agents::search {
namespace {

using testing::Curve;
using testing::parallel_chains;
using testing::ProblemFixture;

std::unique_ptr<Agent> create(const std::map<std::string, std::string>& options = {}) {
  AgentRegistry registry;
  register_builtin_agents(registry);
  return registry.create("annealing", options);
}

double evaluate(const Problem& problem, const core::Decision& d) {
  Environment env(problem);
  const Evaluation e = env.evaluate(d);
  return e.oom ? std::numeric_limits<double>::infinity() : e.step_time_s;
}

// Never worse than its best start, each start taken as far as the search decides: HEFT's
// and m-ETF's placements without their priorities, which a placement search does not set.
TEST(AnnealingTest, NeverWorseThanItsBestStart) {
  ProblemFixture f(parallel_chains(4, 6, /*join=*/true), "p100x4_pcie");
  AgentRegistry registry;
  register_builtin_agents(registry);
  double best_start = std::numeric_limits<double>::infinity();
  for (const char* start : {"single_device", "human_expert", "metis", "heft", "m_etf"}) {
    core::Decision d = registry.create(start)->propose(f.problem);
    d.priority.reset();
    best_start = std::min(best_start, evaluate(f.problem, d));
  }
  for (std::uint64_t seed : {1, 2, 3}) {
    auto agent = create({{"seed", std::to_string(seed)}, {"initial_temperature", "0.5"}});
    Environment env(f.problem);
    agent->train(env, TrainBudget().with_max_steps(3), nullptr);
    const core::Decision d = agent->propose(f.problem);
    EXPECT_FALSE(d.priority.has_value()) << "a placement search decides placements only";
    EXPECT_LE(evaluate(f.problem, d), best_start) << "seed " << seed;
  }
  // Started from HEFT alone, it still decides placements only.
  auto from_heft = create({{"starts", "heft"}});
  Environment env(f.problem);
  from_heft->train(env, TrainBudget().with_max_samples(2), nullptr);
  const core::Decision d = from_heft->propose(f.problem);
  EXPECT_TRUE(d.placement.has_value());
  EXPECT_FALSE(d.priority.has_value());
  EXPECT_FALSE(d.fusion.has_value());
}

TEST(AnnealingTest, RespectsItsSampleBudgetExactly) {
  ProblemFixture f(parallel_chains(4, 6, true), "p100x4_pcie");
  {
    auto agent = create();
    Environment env(f.problem);
    Curve curve;
    agent->train(env, TrainBudget().with_max_steps(3), &curve);
    EXPECT_EQ(env.samples(), 3 * kGoSamplesPerUpdate);  // the starts included
    ASSERT_EQ(curve.points.size(), 3U);
    EXPECT_EQ(curve.points[0].samples, kGoSamplesPerUpdate);
    EXPECT_EQ(curve.points[2].samples, 3 * kGoSamplesPerUpdate);
    EXPECT_EQ(curve.points[2].step, 3);
  }
  {
    auto agent = create();
    Environment env(f.problem);
    Curve curve;
    agent->train(env, TrainBudget().with_max_samples(40), &curve);  // steps: 100 by default
    EXPECT_EQ(env.samples(), 40);
    ASSERT_EQ(curve.points.size(), 3U);  // 17, 34 and a last partial step at 40
    EXPECT_EQ(curve.points.back().samples, 40);
  }
  {
    auto agent = create();
    Environment env(f.problem);
    agent->train(env, TrainBudget().with_max_samples(2), nullptr);  // fewer than the five starts
    EXPECT_EQ(env.samples(), 2);
  }
}

TEST(AnnealingTest, SameSeedSameSearch) {
  ProblemFixture f(parallel_chains(4, 6, true), "p100x4_pcie");
  auto run = [&](std::uint64_t seed) {
    auto agent = create({{"seed", std::to_string(seed)}, {"starts", "single_device"}});
    Environment env(f.problem);
    Curve curve;
    agent->train(env, TrainBudget().with_max_steps(4), &curve);
    std::vector<double> means;
    for (const auto& p : curve.points) means.push_back(p.mean_step_time_s);
    return std::make_pair(*agent->propose(f.problem).placement, means);
  };
  EXPECT_EQ(run(7), run(7));
  EXPECT_NE(run(7).second, run(8).second);
}

TEST(AnnealingTest, FindsAPlacementBetterThanOneDevice) {
  // Four independent heavy chains on four GPUs: one chain per device is optimal; from the
  // single-device start, whole-block moves find a split within 10 x 17 samples.
  ProblemFixture f(parallel_chains(4, 6, true), "p100x4_pcie");
  auto agent = create({{"starts", "single_device"}, {"seed", "1"}});
  Environment env(f.problem);
  agent->train(env, TrainBudget().with_max_steps(10), nullptr);
  const double single = evaluate(f.problem, core::Decision{});
  EXPECT_LT(evaluate(f.problem, agent->propose(f.problem)), 0.8 * single);
}

// Four heavy chains, each one two-level name scope ("model/chain2/op5"), interleaved in topological
// order, with no layer attribute: a block of consecutive ops cuts across every chain, a scope unit
// is one whole chain. Scope moves find one chain per device from one device; without them
// the search is left with blocks that cut every chain.
core::Graph scoped_chains(int chains, int length) {
  core::GraphBuilder b("scoped_chains");
  auto in = b.add("input/x", "Placeholder").output({256, 1024});
  std::vector<core::NodeId> prev(static_cast<std::size_t>(chains), in);
  for (int i = 0; i < length; ++i) {
    for (int c = 0; c < chains; ++c) {
      auto n = b.add("model/chain" + std::to_string(c) + "/op" + std::to_string(i), "MatMul")
                   .output({256, 1024})
                   .flops(2.0 * 256 * 1024 * 1024 * 8);
      b.connect(prev[static_cast<std::size_t>(c)], n);
      prev[static_cast<std::size_t>(c)] = n;
    }
  }
  auto sum = b.add("output/sum", "AddN").output({256, 1024});
  for (auto p : prev) b.connect(p, sum);
  return std::move(b).build();
}

TEST(AnnealingTest, ScopeMovesTakeWholeNamedPartsOfTheModel) {
  const auto units = scope_units(core::CompiledGraph::compile(scoped_chains(4, 6)));
  ASSERT_EQ(units.size(), 6u);  // input, four chains, output
  ProblemFixture f(scoped_chains(4, 24), "p100x4_pcie");
  const double single = evaluate(f.problem, core::Decision{});
  for (std::uint64_t seed : {1, 2, 3}) {
    auto search = [&](const char* scopes) {
      auto agent = create(
          {{"starts", "single_device"}, {"seed", std::to_string(seed)}, {"scope_moves", scopes}});
      Environment env(f.problem);
      agent->train(env, TrainBudget().with_max_steps(4), nullptr);
      return evaluate(f.problem, agent->propose(f.problem));
    };
    const double with_scopes = search("true");
    EXPECT_LT(with_scopes, 0.4 * single) << "seed " << seed;  // optimum: about a quarter
    EXPECT_LT(with_scopes, search("false")) << "seed " << seed;
  }
}

// A multi-branch cell (Inception, AmoebaNet) is one unit per branch and one for its ops
// outside the branches, as the expert spreads a cell's branches over devices; gradient ops
// join their forward op's branch. One layer without branches stays one unit.
TEST(AnnealingTest, ScopeUnitsSplitAMultiBranchCellByBranch) {
  core::GraphBuilder b("cells");
  auto x = b.add("input/x", "Placeholder").output({8, 64});
  std::vector<core::NodeId> heads;
  for (int branch = 0; branch < 3; ++branch) {
    const std::string scope = "cell_1/branch" + std::to_string(branch);
    auto conv = b.add(scope + "/conv", "Conv2D").output({8, 64}).layer(1).branch(branch);
    auto relu = b.add(scope + "/relu", "Relu").output({8, 64}).layer(1).branch(branch);
    b.connect(x, conv).connect(conv, relu);
    heads.push_back(relu);
  }
  auto concat = b.add("cell_1/concat", "ConcatV2").output({8, 192}).layer(1);
  for (auto h : heads) b.connect(h, concat);
  auto grad = b.add("gradients/cell_1/branch2/relu_grad/ReluGrad", "ReluGrad")
                  .output({8, 64})
                  .layer(1)
                  .branch(2);
  b.connect(concat, grad);
  auto dense = b.add("dense_2/matmul", "MatMul").output({8, 64}).layer(2);
  auto out = b.add("dense_2/bias", "BiasAdd").output({8, 64}).layer(2);
  b.connect(concat, dense).connect(dense, out);
  const auto graph = core::CompiledGraph::compile(std::move(b).build());
  const auto units = scope_units(graph);
  // input, three branches, the cell's concat, the dense layer.
  ASSERT_EQ(units.size(), 6u);
  std::vector<std::size_t> sizes;
  for (const auto& u : units) sizes.push_back(u.size());
  std::sort(sizes.begin(), sizes.end());
  EXPECT_EQ(sizes, (std::vector<std::size_t>{1, 1, 2, 2, 2, 3}));
  EXPECT_EQ(scope_unit_key(graph, grad), scope_unit_key(graph, heads[2]));
  EXPECT_NE(scope_unit_key(graph, heads[0]), scope_unit_key(graph, heads[1]));
  EXPECT_EQ(scope_unit_key(graph, dense), scope_unit_key(graph, out));
}

TEST(AnnealingTest, SearchesPrioritiesAndFusionWhenAsked) {
  ProblemFixture f(parallel_chains(2, 5, true), "p100x2_pcie");
  auto agent = create({{"tasks", "placement,scheduling,fusion"},
                       {"starts", "tf_default,single_device"},
                       {"seed", "3"}});
  Environment env(f.problem);
  agent->train(env, TrainBudget().with_max_steps(4), nullptr);
  const core::Decision d = agent->propose(f.problem);
  ASSERT_TRUE(d.placement && d.priority && d.fusion);
  EXPECT_EQ(fused_group_problem(f.compiled, d), "");
}

TEST(AnnealingTest, OneStepIsOneGoUpdateInSamples) {
  // Equal budget.steps must mean equal simulations: GO's default samples per PPO update
  // (samples_per_step sampled placements, plus the greedy one with evaluate_greedy).
  AgentRegistry registry;
  register_builtin_agents(registry);
  for (const char* go : {"go_one", "go_multitask", "go_placement"}) {
    std::int64_t samples = 0;
    bool greedy = false;
    for (const auto& spec : registry.info(go).options) {
      if (spec.name == "samples_per_step") samples = std::stoll(spec.default_value);
      if (spec.name == "evaluate_greedy") greedy = spec.default_value == "true";
    }
    EXPECT_EQ(samples + (greedy ? 1 : 0), kGoSamplesPerUpdate) << go;
  }
}

TEST(AnnealingTest, OptionsAreChecked) {
  EXPECT_THROW((void)create({{"starts", "metis,nonesuch"}}), core::InputError);
  EXPECT_THROW((void)create({{"starts", "hdp"}}), core::InputError);  // a learner
  EXPECT_THROW((void)create({{"tasks", "placement,pruning"}}), core::InputError);
  EXPECT_THROW((void)create({{"samples_per_step", "0"}}), core::InputError);
  EXPECT_THROW((void)create({{"tasks", "placement,scheduling"}, {"order", "critical_path"}}),
               core::InputError);
}

// order: critical_path: every placement it simulates runs in critical-path order, and its
// decision carries those priorities.
TEST(AnnealingTest, CriticalPathOrderGivesEveryPlacementItsPriorities) {
  ProblemFixture f(parallel_chains(4, 6, /*join=*/true), "p100x4_pcie");
  auto agent = create({{"order", "critical_path"}, {"seed", "2"}});
  Environment env(f.problem);
  agent->train(env, TrainBudget().with_max_steps(2), nullptr);
  const core::Decision d = agent->propose(f.problem);
  ASSERT_TRUE(d.placement.has_value());
  ASSERT_TRUE(d.priority.has_value());
  EXPECT_EQ(*d.priority, critical_path_priorities(f.problem, *d.placement));
  EXPECT_EQ(env.best_decision().priority, d.priority);
}

}  // namespace
}  // namespace gopt::agents::search
