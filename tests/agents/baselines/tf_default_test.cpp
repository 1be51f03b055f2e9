// tf_default (TensorFlow's default pipeline with XLA-style fusion) and the fused-group
// checks of agents/decision_utils.h.
#include "agents/baselines/tf_default.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <memory>
#include <vector>

#include "agents/decision_utils.h"
#include "agents/registry.h"
#include "core/rng.h"
#include "datasets/workload_registry.h"
#include "simulator/simulator.h"
#include "tests/agents/agents_test_util.h"
#include "tests/support/expect_error.h"
#include "tests/support/random_dag.h"
#include "tests/support/task_graphs.h"

namespace gopt::agents {
namespace {

AgentRegistry builtin() {
  AgentRegistry r;
  register_builtin_agents(r);
  return r;
}

// Operands (distinct outside producers with data edges in) plus outputs of group g.
int operands_and_outputs(const core::CompiledGraph& g, const simulator::FusionGroups& groups,
                         std::int32_t group) {
  std::vector<NodeId> producers;
  int outputs = 0;
  for (NodeId v = 0; v < g.num_nodes(); ++v) {
    if (groups.group_of[static_cast<std::size_t>(v)] != group) continue;
    for (auto s = g.in_begin(v); s < g.in_end(v); ++s) {
      const NodeId u = g.in_source(s);
      if (groups.group_of[static_cast<std::size_t>(u)] != group &&
          std::find(producers.begin(), producers.end(), u) == producers.end()) {
        producers.push_back(u);
      }
    }
    bool leaves = g.out_degree(v) == 0;
    for (auto e = g.out_begin(v); e < g.out_end(v); ++e) {
      leaves = leaves || groups.group_of[static_cast<std::size_t>(g.out_target(e))] != group;
    }
    outputs += leaves ? 1 : 0;
  }
  return static_cast<int>(producers.size()) + outputs;
}

TEST(TfDefaultTest, FusesTheElementwiseChainLikeTheKnownGoodDecision) {
  auto t = gopt::testing::fusion_task_graph(6);
  testing::ProblemFixture f(t.graph, "p100x2_pcie");
  auto d = builtin().create("tf_default", {{"placement", "single_device"}})->propose(f.problem);
  ASSERT_TRUE(d.fusion.has_value());
  EXPECT_FALSE(d.priority.has_value());  // FIFO
  EXPECT_EQ((*d.fusion)[0], 0);          // the placeholder is not fused
  simulator::Simulator sim(f.compiled, f.cluster, f.cost);
  const Seconds improved = sim.simulate(t.improved).step_time_s;
  EXPECT_EQ(sim.simulate(d).step_time_s, improved);
  EXPECT_EQ(sim.last_groups().num_groups(), 2);
  EXPECT_LT(improved, sim.simulate(t.baseline).step_time_s);
}

TEST(TfDefaultTest, NeverFusesMatmulsAndLeavesTheScheduleFifo) {
  auto t = gopt::testing::scheduling_task_graph();
  testing::ProblemFixture f(t.graph, "p100x2_pcie");
  auto d = builtin().create("tf_default")->propose(f.problem);
  EXPECT_EQ(*d.fusion, std::vector<std::int32_t>(3, 0));
  EXPECT_FALSE(d.priority.has_value());
}

TEST(TfDefaultTest, MaxFusedOpsSplitsGroups) {
  auto t = gopt::testing::fusion_task_graph(12);
  testing::ProblemFixture f(t.graph, "p100x2_pcie");
  auto d = builtin()
               .create("tf_default", {{"placement", "single_device"}, {"max_fused_ops", "3"}})
               ->propose(f.problem);
  auto groups = simulator::form_fusion_groups(f.compiled, d);
  std::int32_t largest = 0;
  for (std::int32_t g = 0; g < groups.num_groups(); ++g) {
    largest = std::max(largest, groups.group_size(g));
  }
  EXPECT_LE(largest, 3);
  EXPECT_GE(largest, 2);  // still fusing
  EXPECT_EQ(fused_group_problem(f.compiled, d), "");
}

// Largest group, and the most operands + outputs of a multi-op group.
std::pair<std::int32_t, int> largest_group_and_io(const core::CompiledGraph& g,
                                                  const std::vector<std::int32_t>& fusion) {
  auto groups = simulator::form_fusion_groups(g, core::Decision{{}, {}, fusion});
  std::int32_t largest = 0;
  int io = 0;
  for (std::int32_t k = 0; k < groups.num_groups(); ++k) {
    largest = std::max(largest, groups.group_size(k));
    if (groups.group_size(k) > 1) io = std::max(io, operands_and_outputs(g, groups, k));
  }
  return {largest, io};
}

TEST(TfDefaultTest, OperandLimitSplitsAChainWithManyOutputs) {
  // x -> relu0 -> ... -> relu69, every relu also read by its own MatMul (never fused): the
  // whole chain as one kernel would have 1 operand and 70 outputs, over XLA's 64.
  core::GraphBuilder b("side_outputs");
  core::NodeId prev = b.add("x", "Placeholder").output({1024});
  for (int i = 0; i < 70; ++i) {
    auto r = b.add("relu" + std::to_string(i), "Relu").output({1024}).flops(1024);
    auto mm = b.add("mm" + std::to_string(i), "MatMul").output({32, 32}).flops(1e6);
    b.connect(prev, r).connect(r, mm);
    prev = r;
  }
  testing::ProblemFixture f(std::move(b).build(), "p100x2_pcie");
  auto [largest, io] =
      largest_group_and_io(f.compiled, xla_fusion_priorities(f.compiled, nullptr, {}));
  EXPECT_LE(io, 64);
  EXPECT_GE(largest, 30);  // split about in half, not into pieces
  auto [all, all_io] = largest_group_and_io(
      f.compiled, xla_fusion_priorities(f.compiled, nullptr,
                                        XlaFusionOptions().with_max_operands_and_outputs(0)));
  EXPECT_EQ(all, 70);
  EXPECT_EQ(all_io, 71);
}

TEST(TfDefaultTest, OperandLimitLeavesAnOverWideOpUnfused) {
  // 70 placeholders, each through a Relu, summed by one AddN: the AddN alone already reads
  // 70 operands, so (as in XLA) nothing may fuse into it.
  core::GraphBuilder b("fan_in");
  std::vector<NodeId> relus;
  for (int i = 0; i < 70; ++i) {
    auto x = b.add("x" + std::to_string(i), "Placeholder").output({1024});
    auto r = b.add("relu" + std::to_string(i), "Relu").output({1024}).flops(1024);
    b.connect(x, r);
    relus.push_back(r);
  }
  auto sum = b.add("sum", "AddN").output({1024}).flops(70 * 1024);
  for (auto r : relus) b.connect(r, sum);
  testing::ProblemFixture f(std::move(b).build(), "p100x2_pcie");
  EXPECT_EQ(largest_group_and_io(f.compiled, xla_fusion_priorities(f.compiled, nullptr, {})).first,
            1);
  auto unlimited = largest_group_and_io(
      f.compiled, xla_fusion_priorities(f.compiled, nullptr,
                                        XlaFusionOptions().with_max_operands_and_outputs(0)));
  EXPECT_EQ(unlimited.first, 71);  // every Relu in the AddN's kernel
}

TEST(TfDefaultTest, BadOptionsNameTheField) {
  auto r = builtin();
  auto bad_placement = gopt::testing::error_of([&] {
    (void)r.create("tf_default", {{"placement", "metis"}});
  });
  EXPECT_TRUE(gopt::testing::contains(bad_placement, "agents.tf_default.placement"))
      << bad_placement;
  EXPECT_TRUE(gopt::testing::contains(bad_placement, "'metis'")) << bad_placement;
  auto negative = gopt::testing::error_of([&] {
    (void)r.create("tf_default", {{"max_fused_ops", "-1"}});
  });
  EXPECT_TRUE(gopt::testing::contains(negative, "agents.tf_default.max_fused_ops")) << negative;
}

TEST(TfDefaultTest, OnGnmtFusionIsValidOnlyFusesCheapOpsAndBeatsTheUnfusedPipeline) {
  datasets::WorkloadRegistry workloads;
  datasets::register_builtin_workloads(workloads);
  testing::ProblemFixture f(workloads.generate("gnmt_2"), "p100x4_pcie");
  auto r = builtin();
  simulator::Simulator sim(f.compiled, f.cluster, f.cost);
  for (const char* placement : {"human_expert", "single_device"}) {
    auto d = r.create("tf_default", {{"placement", placement}})->propose(f.problem);
    EXPECT_EQ(fused_group_problem(f.compiled, d), "") << placement;
    auto groups = simulator::form_fusion_groups(f.compiled, d);
    EXPECT_LT(groups.num_groups(), f.compiled.num_nodes()) << placement;
    for (std::int32_t g = 0; g < groups.num_groups(); ++g) {
      if (groups.group_size(g) < 2) continue;
      for (auto i = groups.member_offset[static_cast<std::size_t>(g)];
           i < groups.member_offset[static_cast<std::size_t>(g) + 1]; ++i) {
        const auto kind = f.compiled.kind()[static_cast<std::size_t>(groups.members[i])];
        ASSERT_TRUE(xla_fusible(kind)) << core::to_string(kind) << " fused under " << placement;
      }
    }
    const Seconds fused = sim.simulate(d).step_time_s;
    d.fusion.reset();
    EXPECT_LT(fused, sim.simulate(d).step_time_s) << placement;
  }
  auto expert = r.create("human_expert")->propose(f.problem);
  auto tf = r.create("tf_default")->propose(f.problem);
  EXPECT_EQ(tf.placement, expert.placement);
}

TEST(FusedGroupProblemTest, GroupsFormedFromRandomDecisionsPass) {
  testing::ProblemFixture f(
      gopt::testing::random_dag(gopt::testing::RandomDagOptions().with_nodes(400).with_seed(9)),
      "p100x4_pcie");
  core::Rng rng(5);
  const auto n = static_cast<std::size_t>(f.compiled.num_nodes());
  for (int round = 0; round < 20; ++round) {
    core::Decision d;
    d.placement = std::vector<DeviceId>(n);
    d.fusion = std::vector<std::int32_t>(n);
    for (std::size_t v = 0; v < n; ++v) {
      (*d.placement)[v] = static_cast<DeviceId>(rng.uniform_int(0, round % 2 == 0 ? 0 : 3));
      (*d.fusion)[v] = static_cast<std::int32_t>(rng.uniform_int(0, 5));
    }
    EXPECT_EQ(fused_group_problem(f.compiled, d), "") << "round " << round;
  }
}

// a -> b -> c on one device, with hand-made groups.
struct ChainFixture {
  ChainFixture() {
    core::GraphBuilder b("chain");
    auto a = b.add("a", "Relu").output({8});
    auto bb = b.add("b", "Relu").output({8});
    auto c = b.add("c", "Relu").output({8});
    b.connect(a, bb).connect(bb, c);
    graph =
        std::make_unique<core::CompiledGraph>(core::CompiledGraph::compile(std::move(b).build()));
    decision.placement = std::vector<DeviceId>{0, 0, 0};
    decision.fusion = std::vector<std::int32_t>{1, 1, 1};
  }
  static simulator::FusionGroups groups(std::vector<std::int32_t> group_of,
                                        std::vector<std::int32_t> offset,
                                        std::vector<NodeId> members) {
    simulator::FusionGroups g;
    g.group_of = std::move(group_of);
    g.member_offset = std::move(offset);
    g.members = std::move(members);
    return g;
  }
  std::unique_ptr<core::CompiledGraph> graph;
  core::Decision decision;
};

TEST(FusedGroupProblemTest, NamesAGroupSplitAcrossDevices) {
  ChainFixture c;
  EXPECT_EQ(fused_group_problem(*c.graph, c.decision), "");
  auto whole = ChainFixture::groups({0, 0, 0}, {0, 3}, {0, 1, 2});
  EXPECT_EQ(fused_group_problem(*c.graph, c.decision, whole), "");
  c.decision.placement = std::vector<DeviceId>{0, 1, 0};
  auto problem = fused_group_problem(*c.graph, c.decision, whole);
  EXPECT_TRUE(gopt::testing::contains(problem, "fused group 0: op 'b' (id 1) is on device 1"))
      << problem;
  // The procedure itself never fuses across devices.
  EXPECT_EQ(fused_group_problem(*c.graph, c.decision), "");
}

TEST(FusedGroupProblemTest, NamesACycleAndADuplicate) {
  ChainFixture c;
  // {a, c} and {b}: a -> b -> c makes the contracted graph cyclic.
  auto cyclic = ChainFixture::groups({0, 1, 0}, {0, 2, 3}, {0, 2, 1});
  auto problem = fused_group_problem(*c.graph, c.decision, cyclic);
  EXPECT_TRUE(gopt::testing::contains(problem, "has a cycle")) << problem;
  auto twice = ChainFixture::groups({0, 0, 0}, {0, 3}, {0, 1, 1});
  problem = fused_group_problem(*c.graph, c.decision, twice);
  EXPECT_TRUE(gopt::testing::contains(problem, "listed twice")) << problem;
}

}  // namespace
}  // namespace gopt::agents
