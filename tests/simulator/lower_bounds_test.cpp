// The lower bounds of simulator/lower_bounds.h: hand-computed values on the diamond graph,
// and validity against exhaustive optima (every placement of 9- and 10-op graphs on 2 and 3
// devices, with and without memory that forces a split).
#include "simulator/lower_bounds.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <limits>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "core/graph.h"
#include "simulator/simulator.h"
#include "tests/simulator/test_support.h"

namespace gopt::simulator {
namespace {

using core::CompiledGraph;
using core::Decision;
using core::GraphBuilder;
using testing::LookupCostModel;
using testing::mesh_cluster;

// a -> b, a -> c, b -> d, c -> d with op times 10, 15, 20, 25 and `edge_bytes` per tensor.
CompiledGraph diamond(core::Bytes edge_bytes, core::Bytes param_bytes = 0) {
  GraphBuilder b("diamond");
  for (const char* name : {"a", "b", "c", "d"}) {
    b.add(name, "Relu").output_bytes(edge_bytes).param_bytes(param_bytes);
  }
  b.connect("a", "b").connect("a", "c").connect("b", "d").connect("c", "d");
  return CompiledGraph::compile(std::move(b).build());
}

TEST(LowerBoundsTest, DiamondByHand) {
  auto g = diamond(10);
  auto cluster = mesh_cluster(2, /*bandwidth=*/1, /*latency=*/0);
  LookupCostModel cost(cluster, {10, 15, 20, 25});
  const LowerBounds b = compute_lower_bounds(g, cluster, cost);
  EXPECT_DOUBLE_EQ(b.critical_path_s, 55);  // a, c, d
  EXPECT_DOUBLE_EQ(b.work_s, 35);           // 70 over two devices
  EXPECT_DOUBLE_EQ(b.single_device_s, 70);  // everything on one device
  // Paths through each edge when it crosses devices (a 10-byte tensor takes 10 s):
  // a->b 10+10+40 = 60, a->c 10+10+45 = 65, b->d 25+10+25 = 60, c->d 30+10+25 = 65. Every
  // cut crosses a->b or b->d (b must be with a or d), so the cheapest cut costs 60.
  EXPECT_DOUBLE_EQ(b.cut_path_s, 60);
  EXPECT_DOUBLE_EQ(b.split_s, 60);
  EXPECT_FALSE(b.split_forced);
  // Below 65 the heavy edges a->c, c->d keep a, c, d together (55 s of work); below 60
  // everything is together (70 s): the smallest consistent step time is 60.
  EXPECT_DOUBLE_EQ(b.colocation_s, 60);
  EXPECT_DOUBLE_EQ(b.best_s(), 60);  // the old bound said 55
}

TEST(LowerBoundsTest, MemoryForcesASplit) {
  // Parameters 4 x 100 + the largest output 10 > 400: no device holds the graph.
  auto g = diamond(10, 100);
  auto cluster = mesh_cluster(2, 1, 0, /*capacity=*/400);
  LookupCostModel cost(cluster, {10, 15, 20, 25});
  const LowerBounds b = compute_lower_bounds(g, cluster, cost);
  EXPECT_TRUE(b.split_forced);
  EXPECT_EQ(b.single_device_s, std::numeric_limits<Seconds>::infinity());
  EXPECT_DOUBLE_EQ(b.colocation_s, 60);
  EXPECT_DOUBLE_EQ(b.best_s(), 60);
  Simulator sim(g, cluster, cost);
  Decision one;
  one.placement = {0, 0, 0, 0};
  EXPECT_TRUE(sim.simulate(one).oom);
}

TEST(LowerBoundsTest, OneDeviceThatCannotHoldTheGraphFallsBackToTheBasicBound) {
  auto g = diamond(10, 100);
  auto cluster = mesh_cluster(1, 1, 0, 400);
  LookupCostModel cost(cluster, {10, 15, 20, 25});
  const LowerBounds b = compute_lower_bounds(g, cluster, cost);
  EXPECT_DOUBLE_EQ(b.best_s(), 70);  // max(critical path 55, work 70 on one stream)
}

// Ops a, b, c, d with these output bytes and edges.
CompiledGraph four_ops(const std::vector<core::Bytes>& output_bytes,
                       const std::vector<std::pair<std::string, std::string>>& edges) {
  GraphBuilder b("four ops");
  const char* names[] = {"a", "b", "c", "d"};
  for (std::size_t i = 0; i < 4; ++i) b.add(names[i], "Relu").output_bytes(output_bytes[i]);
  for (const auto& [from, to] : edges) b.connect(from, to);
  return CompiledGraph::compile(std::move(b).build());
}

TEST(LowerBoundsTest, AJoinOfTwoHeavyOperandsPaysATransferOrWaitsForBoth) {
  // a, b -> c -> d with op times 10, 10, 1, 1; a and b send 10 bytes (10 s), c sends 1.
  // c starts after both a and b: on one device they run one after the other (20 s), and
  // one on another device arrives at 10 + 10 = 20 s. So c starts at 20 s at the earliest
  // and the step takes 22 s, which every bound before this one missed.
  auto g = four_ops({10, 10, 1, 1}, {{"a", "c"}, {"b", "c"}, {"c", "d"}});
  auto cluster = mesh_cluster(2, 1, 0);
  LookupCostModel cost(cluster, {10, 10, 1, 1});
  const LowerBounds b = compute_lower_bounds(g, cluster, cost);
  EXPECT_DOUBLE_EQ(b.critical_path_s, 12);
  EXPECT_DOUBLE_EQ(b.cut_path_s, 13);    // the cut before d: 11 + 1 + 1
  EXPECT_DOUBLE_EQ(b.colocation_s, 21);  // below 22, a, b and c must share a device
  EXPECT_DOUBLE_EQ(b.communication_path_s, 22);
  EXPECT_DOUBLE_EQ(b.best_s(), 22);
  Simulator sim(g, cluster, cost);
  Decision split;
  split.placement = {0, 1, 0, 0};  // b remote: c waits for its transfer
  EXPECT_DOUBLE_EQ(sim.simulate(split).step_time_s, 22);
}

TEST(LowerBoundsTest, TheCommunicationPathCountsTheConsumersToo) {
  // The mirror image: a -> b -> c, d with b sending 10 bytes to each of c and d (10 s)
  // and c, d taking 10 s. After b, c and d run one after the other on b's device, or one
  // waits 10 s for its transfer: 20 s after b at the least.
  auto g = four_ops({1, 10, 1, 1}, {{"a", "b"}, {"b", "c"}, {"b", "d"}});
  auto cluster = mesh_cluster(2, 1, 0);
  LookupCostModel cost(cluster, {1, 1, 10, 10});
  const LowerBounds b = compute_lower_bounds(g, cluster, cost);
  EXPECT_DOUBLE_EQ(b.critical_path_s, 12);
  EXPECT_DOUBLE_EQ(b.communication_path_s, 22);
  EXPECT_DOUBLE_EQ(b.best_s(), 22);
}

TEST(LowerBoundsTest, FillAndDrainCountTheIdleStreamsOfARamp) {
  // a -> b, c, d, e, each 4 s, on two single-stream devices with nearly free transfers:
  // for the first 4 s only a can run, so one stream idles 4 s and the 20 s of work end at
  // 12 s at the earliest, above the critical path (8) and the work bound (10).
  GraphBuilder builder("fan");
  builder.add("a", "Relu").output_bytes(1);
  for (const char* name : {"b", "c", "d", "e"}) {
    builder.add(name, "Relu").output_bytes(1);
    builder.connect("a", name);
  }
  auto g = CompiledGraph::compile(std::move(builder).build());
  auto cluster = mesh_cluster(2, /*bandwidth=*/1e9, /*latency=*/0);
  LookupCostModel cost(cluster, {4, 4, 4, 4, 4});
  const LowerBounds b = compute_lower_bounds(g, cluster, cost);
  EXPECT_DOUBLE_EQ(b.critical_path_s, 8);
  EXPECT_DOUBLE_EQ(b.work_s, 10);
  EXPECT_DOUBLE_EQ(b.fill_drain_s, 12);
  EXPECT_DOUBLE_EQ(b.best_s(), 12);
  Simulator sim(g, cluster, cost);
  Decision split;
  split.placement = {0, 0, 0, 1, 1};  // b, c after a on its device; d, e on the other
  EXPECT_NEAR(sim.simulate(split).step_time_s, 12, 1e-6);
}

TEST(LowerBoundsTest, DisconnectedGraphsNeedNoTransfer) {
  GraphBuilder builder("two chains");
  builder.add("a", "Relu").output_bytes(1000);
  builder.add("b", "Relu").output_bytes(1000);
  builder.add("c", "Relu").output_bytes(1000);
  builder.add("d", "Relu").output_bytes(1000);
  builder.connect("a", "b").connect("c", "d");
  auto g = CompiledGraph::compile(std::move(builder).build());
  auto cluster = mesh_cluster(2, 1, 0);
  LookupCostModel cost(cluster, {5, 5, 5, 5});
  const LowerBounds b = compute_lower_bounds(g, cluster, cost);
  EXPECT_DOUBLE_EQ(b.cut_path_s, 0);
  EXPECT_DOUBLE_EQ(b.best_s(), 10);  // each chain on its own device: 10 s, no transfer
}

// A connected random DAG: node i reads one or two earlier nodes.
struct RandomCase {
  CompiledGraph graph;
  std::vector<double> times_s;
};

RandomCase random_case(int nodes, std::mt19937_64& rng) {
  GraphBuilder b("random");
  std::uniform_int_distribution<int> bytes(1, 40);
  std::uniform_int_distribution<int> params(0, 100);
  std::uniform_real_distribution<double> time(1.0, 10.0);
  std::vector<double> times_s;
  for (int i = 0; i < nodes; ++i) {
    b.add("n" + std::to_string(i), "Relu").output_bytes(bytes(rng)).param_bytes(params(rng));
    times_s.push_back(time(rng));
    if (i == 0) continue;
    std::uniform_int_distribution<int> earlier(std::max(0, i - 4), i - 1);
    const int first = earlier(rng);
    b.connect("n" + std::to_string(first), "n" + std::to_string(i));
    const int second = earlier(rng);
    if (second != first && rng() % 2 == 0) {
      b.connect("n" + std::to_string(second), "n" + std::to_string(i));
    }
  }
  return {CompiledGraph::compile(std::move(b).build()), std::move(times_s)};
}

// Every placement of `g` on `cluster` (FIFO schedule): the best step time of those that
// fit, and whether one-device placements always ran out of memory.
struct Exhaustive {
  double best_s = std::numeric_limits<double>::infinity();
  bool single_device_always_oom = true;
};

Exhaustive solve(const CompiledGraph& g, const hardware::Cluster& cluster,
                 const hardware::CostModel& cost) {
  Exhaustive out;
  Simulator sim(g, cluster, cost);
  const auto n = static_cast<std::size_t>(g.num_nodes());
  const int devices = cluster.num_devices();
  std::vector<core::DeviceId> placement(n, 0);
  Decision d;
  while (true) {
    d.placement = placement;
    const auto& r = sim.simulate(d);
    const bool one_device = std::all_of(placement.begin(), placement.end(),
                                        [&](core::DeviceId x) { return x == placement[0]; });
    if (one_device && !r.oom) out.single_device_always_oom = false;
    if (!r.oom) out.best_s = std::min(out.best_s, r.step_time_s);
    std::size_t i = 0;  // next placement, counting in base `devices`
    while (i < n && ++placement[i] == devices) placement[i++] = 0;
    if (i == n) break;
  }
  return out;
}

TEST(LowerBoundsTest, NeverAboveTheExhaustiveOptimum) {
  std::mt19937_64 rng(26);
  int tighter = 0;
  int forced = 0;
  int filled = 0;
  int cases = 0;
  for (int devices : {2, 3}) {
    const int nodes = devices == 2 ? 10 : 9;
    for (int trial = 0; trial < 6; ++trial) {
      RandomCase c = random_case(nodes, rng);
      core::Bytes params = 0;
      for (auto p : c.graph.param_bytes()) params += p;
      // Roomy memory, then memory that one device cannot hold but two can.
      for (core::Bytes capacity : {core::Bytes{1} << 40, params * 3 / 4}) {
        std::uniform_real_distribution<double> bandwidth(2.0, 40.0);
        auto cluster = mesh_cluster(devices, bandwidth(rng), 0.5, capacity);
        LookupCostModel cost(cluster, c.times_s);
        const LowerBounds b = compute_lower_bounds(c.graph, cluster, cost);
        const Exhaustive opt = solve(c.graph, cluster, cost);
        if (!(opt.best_s < std::numeric_limits<double>::infinity())) continue;  // nothing fits
        ++cases;
        EXPECT_LE(b.best_s(), opt.best_s * (1 + 1e-9))
            << devices << " devices, trial " << trial << ", capacity " << capacity;
        if (b.split_forced) {
          ++forced;
          EXPECT_TRUE(opt.single_device_always_oom);
        }
        EXPECT_LE(b.colocation_s, opt.best_s * (1 + 1e-9));
        EXPECT_LE(b.communication_path_s, opt.best_s * (1 + 1e-9));
        EXPECT_LE(b.fill_drain_s, opt.best_s * (1 + 1e-9));
        if (b.fill_drain_s > 0) ++filled;
        if (b.best_s() > std::max(b.critical_path_s, b.work_s) * (1 + 1e-9)) ++tighter;
      }
    }
  }
  EXPECT_GE(cases, 20);
  EXPECT_GE(forced, 6);   // the memory cases exercise the forced split
  EXPECT_GE(tighter, 6);  // and the new bounds beat max(critical path, work) often
  EXPECT_GE(filled, 1);   // fill and drain above every other bound
}

// The communication path on devices with two streams, and on devices without a copy
// engine (each arriving transfer holds one of the receiver's streams): never above the
// exhaustive optimum, and often above every other bound.
TEST(LowerBoundsTest, CommunicationPathNeverAboveTheOptimumWithStreamsAndCopies) {
  std::mt19937_64 rng(2611);
  int cases = 0;
  int tightest = 0;
  for (int streams : {1, 2}) {
    for (bool copy_engine : {true, false}) {
      for (int trial = 0; trial < 5; ++trial) {
        RandomCase c = random_case(10, rng);
        std::uniform_real_distribution<double> bandwidth(1.0, 20.0);
        auto cluster =
            mesh_cluster(2, bandwidth(rng), 0.25, core::Bytes{1} << 40, streams, copy_engine);
        LookupCostModel cost(cluster, c.times_s);
        const LowerBounds b = compute_lower_bounds(c.graph, cluster, cost);
        const Exhaustive opt = solve(c.graph, cluster, cost);
        ++cases;
        EXPECT_LE(b.communication_path_s, opt.best_s * (1 + 1e-9))
            << streams << " streams, copy engine " << copy_engine << ", trial " << trial;
        EXPECT_LE(b.best_s(), opt.best_s * (1 + 1e-9));
        const double others = std::max(
            {b.critical_path_s, b.work_s, b.colocation_s, std::min(b.single_device_s, b.split_s)});
        if (b.communication_path_s > others * (1 + 1e-9)) ++tightest;
      }
    }
  }
  EXPECT_EQ(cases, 20);
  EXPECT_GE(tightest, 3);
}

}  // namespace
}  // namespace gopt::simulator
