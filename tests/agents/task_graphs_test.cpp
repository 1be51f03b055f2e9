// The three task graphs of tests/support/task_graphs.h on the shipped P100 profiles: each
// shows that the simulator rewards exactly one task (scheduling, fusion, placement), with
// step times checked against hand-computed sums of the cost model's op and transfer times.
// Default -> improved step time: scheduling 5.602 -> 3.133 ms, fusion 0.445 -> 0.071 ms,
// placement 9.872 -> 2.468 ms.
#include "tests/support/task_graphs.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <numeric>
#include <vector>

#include "agents/decision_utils.h"
#include "simulator/simulator.h"
#include "tests/agents/agents_test_util.h"

namespace gopt::agents {
namespace {

using gopt::testing::TaskGraph;

// Relative tolerance for step times summed in a different order than the engine's.
constexpr double kRel = 1e-9;

struct TaskFixture {
  TaskFixture(TaskGraph t, const std::string& profile)
      : task(std::move(t)), f(task.graph, profile), sim(f.compiled, f.cluster, f.cost) {}
  Seconds step(const core::Decision& d) { return sim.simulate(d).step_time_s; }
  Seconds op(NodeId v, DeviceId d = 0) const { return f.cost.op_time(f.compiled, v, d); }

  TaskGraph task;
  testing::ProblemFixture f;
  simulator::Simulator sim;
};

std::vector<std::int32_t> all_fusible(NodeId n) {
  return std::vector<std::int32_t>(static_cast<std::size_t>(n), 1);
}

TEST(SchedulingTaskGraphTest, PriorityForTheTransferFeederBeatsFifo) {
  TaskFixture t(gopt::testing::scheduling_task_graph(), "p100x2_pcie");
  const NodeId big = 0, feeder = 1, consumer = 2;
  const Seconds xfer = t.f.cost.transfer_time(1024 * 1024 * 4, 0, 1);
  // FIFO: big, feeder, then the transfer and consumer after both.
  const Seconds fifo = t.op(big) + t.op(feeder) + xfer + t.op(consumer, 1);
  // Feeder first: consumer's path overlaps big.
  const Seconds better =
      std::max(t.op(feeder) + t.op(big), t.op(feeder) + xfer + t.op(consumer, 1));
  EXPECT_NEAR(t.step(t.task.baseline), fifo, fifo * kRel);
  EXPECT_NEAR(t.step(t.task.improved), better, better * kRel);
  EXPECT_LT(t.step(t.task.improved), 0.8 * t.step(t.task.baseline));
}

TEST(SchedulingTaskGraphTest, NoScheduleBeatsTheImprovedOneAndFusionChangesNothing) {
  TaskFixture t(gopt::testing::scheduling_task_graph(), "p100x2_pcie");
  const Seconds improved = t.step(t.task.improved);
  std::vector<std::int32_t> order{0, 1, 2};
  do {
    core::Decision d = t.task.baseline;
    d.priority = order;
    EXPECT_GE(t.step(d), improved * (1 - kRel));
  } while (std::next_permutation(order.begin(), order.end()));
  // Every op fusible: big and feeder share no edge, feeder -> consumer crosses devices.
  for (core::Decision d : {t.task.baseline, t.task.improved}) {
    const Seconds unfused = t.step(d);
    d.fusion = all_fusible(t.f.compiled.num_nodes());
    EXPECT_EQ(t.step(d), unfused);
    EXPECT_EQ(t.sim.last_groups().num_groups(), 3);
  }
}

TEST(FusionTaskGraphTest, FusingTheChainIntoOneKernelBeatsOneKernelPerOp) {
  TaskFixture t(gopt::testing::fusion_task_graph(6), "p100x2_pcie");
  const NodeId n = t.f.compiled.num_nodes();
  ASSERT_EQ(n, 8);
  Seconds unfused = 0;
  for (NodeId v = 0; v < n; ++v) unfused += t.op(v);
  EXPECT_NEAR(t.step(t.task.baseline), unfused, unfused * kRel);
  // Fused: x alone, then one kernel reading x's 16 MiB once and writing the 4-byte sum.
  std::vector<NodeId> members(static_cast<std::size_t>(n - 1));
  std::iota(members.begin(), members.end(), 1);
  const Bytes traffic = (Bytes{1} << 24) + 4;
  std::vector<Seconds> times;
  for (NodeId v : members) times.push_back(t.op(v));
  const Seconds fused = t.op(0) + t.f.cost.fused_time(t.f.compiled, members.data(), times.data(),
                                                      members.size(), traffic, 0);
  EXPECT_NEAR(t.step(t.task.improved), fused, fused * kRel);
  EXPECT_EQ(t.sim.last_groups().num_groups(), 2);
  EXPECT_LT(t.step(t.task.improved), 0.5 * t.step(t.task.baseline));
  EXPECT_EQ(fused_group_problem(t.f.compiled, t.task.improved), "");
}

TEST(FusionTaskGraphTest, NoPlacementOrPriorityBeatsTheUnfusedSingleDevice) {
  TaskFixture t(gopt::testing::fusion_task_graph(6), "p100x2_pcie");
  const NodeId n = t.f.compiled.num_nodes();
  const Seconds baseline = t.step(t.task.baseline);
  const Seconds improved = t.step(t.task.improved);
  // Every placement of the 8 ops on 2 devices, unfused and with the improved fusion.
  for (std::uint32_t mask = 0; mask < (1U << n); ++mask) {
    core::Decision d;
    d.placement = std::vector<DeviceId>(static_cast<std::size_t>(n));
    for (NodeId v = 0; v < n; ++v) (*d.placement)[static_cast<std::size_t>(v)] = (mask >> v) & 1;
    EXPECT_GE(t.step(d), baseline * (1 - kRel)) << "placement mask " << mask;
    d.fusion = t.task.improved.fusion;
    EXPECT_GE(t.step(d), improved * (1 - kRel)) << "fused, placement mask " << mask;
  }
  // A chain has one ready op at a time: priorities change nothing.
  for (core::Decision d : {t.task.baseline, t.task.improved}) {
    const Seconds fifo = t.step(d);
    std::vector<std::int32_t> reversed(static_cast<std::size_t>(n));
    std::iota(reversed.rbegin(), reversed.rend(), 0);
    d.priority = reversed;
    EXPECT_EQ(t.step(d), fifo);
  }
}

TEST(PlacementTaskGraphTest, OneBranchPerDeviceBeatsOneDevice) {
  TaskFixture t(gopt::testing::placement_task_graph(4), "p100x4_pcie");
  const Seconds one = t.op(0);
  EXPECT_NEAR(t.step(t.task.baseline), 4 * one, 4 * one * kRel);
  EXPECT_NEAR(t.step(t.task.improved), one, one * kRel);
  EXPECT_EQ(t.f.compiled.num_edges(), 0);
}

TEST(PlacementTaskGraphTest, NoPriorityOrFusionHelpsEitherPlacement) {
  TaskFixture t(gopt::testing::placement_task_graph(4), "p100x4_pcie");
  for (core::Decision d : {t.task.baseline, t.task.improved}) {
    const Seconds plain = t.step(d);
    std::vector<std::int32_t> order{0, 1, 2, 3};
    do {
      d.priority = order;
      EXPECT_EQ(t.step(d), plain);
    } while (std::next_permutation(order.begin(), order.end()));
    d.priority.reset();
    d.fusion = all_fusible(4);
    EXPECT_EQ(t.step(d), plain);
  }
}

}  // namespace
}  // namespace gopt::agents
