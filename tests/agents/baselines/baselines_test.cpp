#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <optional>
#include <thread>

#include "agents/baselines/list_scheduling.h"
#include "agents/registry.h"
#include "core/decision.h"
#include "simulator/simulator.h"
#include "tests/agents/agents_test_util.h"
#include "tests/support/random_dag.h"

namespace gopt::agents {
namespace {

AgentRegistry builtin() {
  AgentRegistry r;
  register_builtin_agents(r);
  return r;
}

// Bytes carried by edges whose ends are on different devices.
Bytes cut_bytes(const core::CompiledGraph& g, const core::Decision& d) {
  Bytes cut = 0;
  for (core::EdgeIndex e = 0; e < g.num_edges(); ++e) {
    if (d.device_of(g.edge_source(e)) != d.device_of(g.out_target(e))) cut += g.edge_bytes(e);
  }
  return cut;
}

TEST(BaselinesTest, EveryNonLearnerIsValidOnRandomGraphs) {
  auto r = builtin();
  for (const char* profile : {"p100x2_pcie", "p100x4_pcie", "p100x8_pcie"}) {
    testing::ProblemFixture f(
        gopt::testing::random_dag(gopt::testing::RandomDagOptions().with_nodes(600).with_seed(4)),
        profile);
    for (const auto& info : r.agents()) {
      if (info.learner || info.name == "go_zero_shot")
        continue;  // zero-shot: go/go_transfer_test.cpp
      auto d = r.create(info.name)->propose(f.problem);
      EXPECT_NO_THROW(core::validate_decision(d, f.problem.num_nodes(), f.problem.num_devices()))
          << info.name << " on " << profile;
      EXPECT_TRUE(d.placement.has_value()) << info.name;
    }
  }
}

TEST(BaselinesTest, MetisBalancesComputeAndCutsLessThanRandom) {
  testing::ProblemFixture f(
      gopt::testing::random_dag(gopt::testing::RandomDagOptions().with_nodes(3000).with_seed(9)),
      "p100x4_pcie");
  auto r = builtin();
  auto metis = r.create("metis", {{"imbalance", "0.05"}})->propose(f.problem);
  auto random = r.create("random")->propose(f.problem);
  EXPECT_LT(cut_bytes(f.compiled, metis), cut_bytes(f.compiled, random) / 2);
  std::vector<double> load(4, 0.0);
  for (NodeId v = 0; v < f.problem.num_nodes(); ++v) {
    load[static_cast<std::size_t>(metis.device_of(v))] += f.cost.op_time(f.compiled, v, 0);
  }
  double mean = std::accumulate(load.begin(), load.end(), 0.0) / 4.0;
  // METIS's tolerance is on integer-rounded weights; allow 1% for the rounding.
  EXPECT_LE(*std::max_element(load.begin(), load.end()), mean * 1.06);
}

// Eight independent chains of heavy ops from one input: a wide, parallel graph.
core::Graph wide_graph() {
  core::GraphBuilder b("wide");
  auto in = b.add("in", "Placeholder").output({64, 256});
  for (int c = 0; c < 8; ++c) {
    core::NodeId prev = in;
    for (int i = 0; i < 5; ++i) {
      auto n = b.add("c" + std::to_string(c) + "_" + std::to_string(i), "MatMul")
                   .output({64, 256})
                   .flops(4e9);
      b.connect(prev, n);
      prev = n;
    }
  }
  return std::move(b).build();
}

TEST(BaselinesTest, ListSchedulersBeatSingleDeviceOnAWideGraph) {
  testing::ProblemFixture f(wide_graph(), "p100x4_pcie");
  auto r = builtin();
  simulator::Simulator sim(f.compiled, f.cluster, f.cost);
  double single = sim.simulate(r.create("single_device")->propose(f.problem)).step_time_s;
  for (const char* name : {"heft", "m_etf"}) {
    auto d = r.create(name)->propose(f.problem);
    ASSERT_TRUE(d.priority.has_value()) << name;
    double t = sim.simulate(d).step_time_s;
    EXPECT_LT(t, single * 0.4) << name << ": " << t << " vs single device " << single;
  }
}

// Two equal ops ready together on gpu0, `a` first in topological order; only `b` feeds a
// long op on gpu1. The executor's order runs `a` first and gpu1 waits; critical-path
// priorities run `b` first.
TEST(BaselinesTest, CriticalPathPrioritiesRunTheLongestPathFirst) {
  core::GraphBuilder b("fork");
  auto in = b.add("in", "Placeholder").output({256, 1024});
  const double flops = 2.0 * 256 * 1024 * 1024 * 8;
  auto a = b.add("a", "MatMul").output({256, 1024}).flops(flops);
  auto bb = b.add("b", "MatMul").output({256, 1024}).flops(flops);
  auto c = b.add("c", "MatMul").output({256, 1024}).flops(4 * flops);
  b.connect(in, a);
  b.connect(in, bb);
  b.connect(bb, c);
  testing::ProblemFixture f(std::move(b).build(), "p100x2_pcie");
  const auto at = [](NodeId v) { return static_cast<std::size_t>(v); };
  core::Decision d;
  d.placement = std::vector<DeviceId>(static_cast<std::size_t>(f.compiled.num_nodes()), 0);
  (*d.placement)[at(c)] = 1;
  simulator::Simulator sim(f.compiled, f.cluster, f.cost);
  const double executor_order = sim.simulate(d).step_time_s;

  d.priority = critical_path_priorities(f.problem, *d.placement);
  const auto& priority = *d.priority;
  EXPECT_GT(priority[at(bb)], priority[at(a)]);
  EXPECT_GT(priority[at(in)], priority[at(bb)]);
  const double critical_path = sim.simulate(d).step_time_s;
  const double op_a = f.cost.op_time(f.compiled, a, 0);
  EXPECT_NEAR(executor_order - critical_path, op_a, 1e-3 * op_a)
      << "gpu1 starts c one op earlier: " << executor_order << " vs " << critical_path;
  EXPECT_THROW((void)critical_path_priorities(f.problem, std::vector<DeviceId>(2, 0)),
               std::invalid_argument);
}

TEST(BaselinesTest, DeterministicForTheSameSeed) {
  testing::ProblemFixture f(
      gopt::testing::random_dag(gopt::testing::RandomDagOptions().with_nodes(800).with_seed(2)),
      "p100x4_pcie", 11);
  auto r = builtin();
  for (const auto& info : r.agents()) {
    if (info.learner || info.name == "go_zero_shot")
      continue;  // zero-shot: go/go_transfer_test.cpp
    auto a = r.create(info.name)->propose(f.problem);
    auto b = r.create(info.name)->propose(f.problem);
    EXPECT_EQ(a.placement, b.placement) << info.name;
    EXPECT_EQ(a.priority, b.priority) << info.name;
  }
}

// gopt run --jobs N partitions in several threads at once; METIS draws from one
// process-wide random generator, so unguarded concurrent partitions changed each other's
// results (metis rows differed between --jobs 1 and --jobs 2).
TEST(BaselinesTest, MetisGivesTheSameResultWhenRunInParallelThreads) {
  testing::ProblemFixture f(
      gopt::testing::random_dag(gopt::testing::RandomDagOptions().with_nodes(3000).with_seed(4)),
      "p100x4_pcie", 5);
  auto r = builtin();
  const auto alone = r.create("metis")->propose(f.problem).placement;
  constexpr int kThreads = 4;
  constexpr int kRounds = 3;
  std::vector<std::optional<std::vector<DeviceId>>> got(kThreads * kRounds);
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&, t] {
      for (int i = 0; i < kRounds; ++i) {
        got[static_cast<std::size_t>(t * kRounds + i)] =
            r.create("metis")->propose(f.problem).placement;
      }
    });
  }
  for (auto& th : threads) th.join();
  for (std::size_t i = 0; i < got.size(); ++i) EXPECT_EQ(got[i], alone) << "run " << i;
}

}  // namespace
}  // namespace gopt::agents
