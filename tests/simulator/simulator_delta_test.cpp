// Delta simulation (issue #56): Simulator::simulate_delta gives the result of a full
// simulate(), every field, bit for bit, over long random walks of local moves (blocks of
// ops moved, single ops, priorities changed), accepted or not, on clusters with and
// without copy engines and with several streams, with and without out-of-memory runs.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/compiled_graph.h"
#include "core/rng.h"
#include "hardware/cost_model.h"
#include "hardware/profile.h"
#include "simulator/simulator.h"
#include "tests/simulator/test_support.h"
#include "tests/support/random_dag.h"

namespace gopt::simulator {
namespace {

void expect_same(const SimulationResult& got, const SimulationResult& want, const std::string& at) {
  ASSERT_EQ(got.step_time_s, want.step_time_s) << at;
  EXPECT_EQ(got.oom, want.oom) << at;
  EXPECT_EQ(got.oom_device, want.oom_device) << at;
  EXPECT_EQ(got.oom_time_s, want.oom_time_s) << at;
  EXPECT_EQ(got.bytes_moved, want.bytes_moved) << at;
  EXPECT_EQ(got.num_transfers, want.num_transfers) << at;
  EXPECT_EQ(got.num_kernels, want.num_kernels) << at;
  ASSERT_EQ(got.devices.size(), want.devices.size());
  for (std::size_t d = 0; d < got.devices.size(); ++d) {
    EXPECT_EQ(got.devices[d].busy_s, want.devices[d].busy_s) << at << " device " << d;
    EXPECT_EQ(got.devices[d].peak_memory_bytes, want.devices[d].peak_memory_bytes)
        << at << " device " << d;
    EXPECT_EQ(got.devices[d].param_bytes, want.devices[d].param_bytes) << at;
    EXPECT_EQ(got.devices[d].num_kernels, want.devices[d].num_kernels) << at;
  }
  ASSERT_EQ(got.links.size(), want.links.size());
  for (std::size_t l = 0; l < got.links.size(); ++l) {
    EXPECT_EQ(got.links[l].bytes_moved, want.links[l].bytes_moved) << at << " link " << l;
    EXPECT_EQ(got.links[l].busy_s, want.links[l].busy_s) << at << " link " << l;
    EXPECT_EQ(got.links[l].num_transfers, want.links[l].num_transfers) << at;
  }
}

// A random walk of `moves` local changes from a random placement; each candidate goes
// through simulate_delta and a full simulate on another Simulator, half are kept.
// Returns the mean share of events the delta runs simulated.
double walk(const core::CompiledGraph& graph, const hardware::Cluster& cluster, bool priorities,
            bool fusion, int moves, std::uint64_t seed) {
  const hardware::RooflineCostModel cost(cluster);
  Simulator delta(graph, cluster, cost);
  Simulator full(graph, cluster, cost);
  core::Rng rng(seed);
  const auto n = static_cast<std::int64_t>(graph.num_nodes());
  const int devices = cluster.num_devices();
  const auto& order = graph.topological_order();
  core::Decision current;
  current.placement = std::vector<core::DeviceId>(static_cast<std::size_t>(n));
  for (auto& d : *current.placement)
    d = static_cast<core::DeviceId>(rng.uniform_int(0, devices - 1));
  if (priorities) current.priority = std::vector<std::int32_t>(static_cast<std::size_t>(n), 0);
  expect_same(delta.simulate_delta(current), full.simulate(current), "start");
  delta.keep_as_base();
  double share = 0;
  for (int m = 0; m < moves; ++m) {
    core::Decision candidate = current;
    const int kind = static_cast<int>(rng.uniform_int(0, priorities ? 3 : 2));
    const std::int64_t length = kind == 0 ? 1 : rng.uniform_int(1, 40);
    const std::int64_t first = rng.uniform_int(0, n - length);
    const auto to = static_cast<core::DeviceId>(rng.uniform_int(0, devices - 1));
    const auto level = static_cast<std::int32_t>(rng.uniform_int(0, 7));
    for (std::int64_t i = first; i < first + length; ++i) {
      const auto v = static_cast<std::size_t>(order[static_cast<std::size_t>(i)]);
      if (kind == 3) {
        (*candidate.priority)[v] = level;
      } else {
        (*candidate.placement)[v] = to;
      }
    }
    if (fusion && rng.uniform() < 0.1) {  // now and then a fused decision: a full run
      candidate.fusion = std::vector<std::int32_t>(static_cast<std::size_t>(n), 0);
      for (std::int64_t i = first; i < first + length; ++i) {
        (*candidate.fusion)[static_cast<std::size_t>(order[static_cast<std::size_t>(i)])] =
            static_cast<std::int32_t>(i + 1);
      }
    }
    const std::string at = "move " + std::to_string(m) + " (seed " + std::to_string(seed) + ")";
    const SimulationResult& got = delta.simulate_delta(candidate);
    const double moved = delta.last_delta_share();
    expect_same(got, full.simulate(candidate), at);
    if (::testing::Test::HasFatalFailure()) return share;
    share += moved;
    if (!candidate.fusion && rng.uniform() < 0.5) {
      delta.keep_as_base();
      current = std::move(candidate);
    }
    // Now and then a plain simulate() in between, which must not disturb the base.
    if (rng.uniform() < 0.05) (void)delta.simulate(current);
  }
  return share / moves;
}

core::CompiledGraph dag(core::NodeId nodes, std::uint64_t seed) {
  return core::CompiledGraph::compile(gopt::testing::random_dag(
      gopt::testing::RandomDagOptions().with_nodes(nodes).with_seed(seed).with_window(24)));
}

TEST(SimulatorDeltaTest, EqualsAFullSimulationOverRandomWalksOfLocalMoves) {
  const auto cluster = hardware::load_profile("p100x4_pcie");
  for (std::uint64_t seed : {1, 2, 3}) {
    const auto graph = dag(3000, seed);
    const double share = walk(graph, cluster, /*priorities=*/seed != 2, /*fusion=*/true, 150, seed);
    EXPECT_LT(share, 0.9) << "local moves re-simulate a part of the step";
  }
}

TEST(SimulatorDeltaTest, EqualsAFullSimulationWithReceiverCopiesAndSeveralStreams) {
  const auto graph = dag(1500, 9);
  for (bool copy_engine : {false, true}) {
    const auto cluster = testing::mesh_cluster(3, 1e4, 1e-3, core::Bytes{1} << 40, 2, copy_engine);
    walk(graph, cluster, true, false, 120, copy_engine ? 5 : 6);
  }
}

TEST(SimulatorDeltaTest, EqualsAFullSimulationWhenMovesRunOutOfMemory) {
  const auto graph = dag(1500, 4);
  const auto roomy = testing::mesh_cluster(2, 1e4, 1e-3);
  const hardware::RooflineCostModel cost(roomy);
  // A capacity near a random placement's peak: some moves run out of memory, some not.
  Simulator probe(graph, roomy, cost);
  core::Decision spread;
  spread.placement = std::vector<core::DeviceId>(static_cast<std::size_t>(graph.num_nodes()));
  for (std::size_t v = 0; v < spread.placement->size(); ++v) (*spread.placement)[v] = v % 2;
  const core::Bytes peak = probe.simulate(spread).devices[0].peak_memory_bytes;
  const auto tight = testing::mesh_cluster(2, 1e4, 1e-3, peak + peak / 50);
  int ooms = 0;
  {
    const hardware::RooflineCostModel tight_cost(tight);
    Simulator count(graph, tight, tight_cost);
    core::Rng rng(3);
    for (int i = 0; i < 20; ++i) {
      core::Decision d = spread;
      for (auto& p : *d.placement) p = rng.uniform() < 0.1 ? 1 - p : p;
      ooms += count.simulate(d).oom ? 1 : 0;
    }
  }
  EXPECT_GT(ooms, 0);
  EXPECT_LT(ooms, 20);
  walk(graph, tight, false, false, 150, 8);
}

}  // namespace
}  // namespace gopt::simulator
