// The simulator with an injected NetworkModel: the shared-NVSwitch example of
// docs/simulator.md (a fabric channel every route also holds serialises transfers that
// share no link), and a producer whose transfers interleave their consumers.
#include <gtest/gtest.h>

#include <algorithm>
#include <utility>
#include <vector>

#include "core/graph.h"
#include "hardware/network_model.h"
#include "simulator/simulator.h"
#include "tests/simulator/test_clusters.h"

namespace gopt::simulator {
namespace {

using core::CompiledGraph;
using core::Decision;
using core::GraphBuilder;
using testing::LookupCostModel;
using testing::switch_cluster;

// a -> b and c -> d, each op 1 s, each edge 10 bytes.
CompiledGraph two_pairs() {
  GraphBuilder b("pairs");
  for (const char* name : {"a", "b", "c", "d"}) b.add(name, "Relu").output_bytes(10);
  b.connect("a", "b").connect("c", "d");
  return CompiledGraph::compile(std::move(b).build());
}

Decision placed(const CompiledGraph& g, std::vector<std::pair<const char*, int>> where) {
  std::vector<core::DeviceId> placement(static_cast<std::size_t>(g.num_nodes()), 0);
  for (const auto& [name, device] : where) {
    const auto& names = g.node_names();
    const auto it = std::find(names.begin(), names.end(), name);
    placement[static_cast<std::size_t>(it - names.begin())] = device;
  }
  Decision d;
  d.placement = placement;
  return d;
}

TEST(NetworkExtensionTest, ASharedFabricSerialisesTransfersOnDisjointRoutes) {
  auto g = two_pairs();
  auto cluster = switch_cluster(4, /*bandwidth=*/10.0);  // 10 bytes take 1 s per route
  LookupCostModel cost(cluster, {1, 1, 1, 1});
  const Decision d = placed(g, {{"a", 0}, {"b", 1}, {"c", 2}, {"d", 3}});

  // Private links only: both transfers run over [1, 2), b and d over [2, 3).
  Simulator plain(g, cluster, cost);
  EXPECT_DOUBLE_EQ(plain.simulate(d).step_time_s, 3.0);

  // A switch fabric as fast as a link but shared by every route: the second transfer
  // waits for the first, [2, 3), and its consumer ends at 4.
  hardware::NetworkModel network(cluster, cost);
  const std::int32_t fabric = network.add_channel(0.0, 1.0 / 10.0);
  for (core::DeviceId s = 0; s < 4; ++s) {
    for (core::DeviceId t = 0; t < 4; ++t) {
      if (s != t) network.add_hop(s, t, fabric);
    }
  }
  Simulator shared(g, cluster, cost, network);
  const SimulationResult& r = shared.simulate(d);
  EXPECT_DOUBLE_EQ(r.step_time_s, 4.0);
  EXPECT_EQ(r.num_transfers, 2);
  EXPECT_EQ(r.bytes_moved, 20);
  // The fabric is no link: link statistics still count the links only.
  EXPECT_EQ(r.links[0].num_transfers, 1);
  EXPECT_DOUBLE_EQ(r.links[0].busy_s, 1.0);
}

TEST(NetworkExtensionTest, ProducerWithInterleavedRemoteConsumers) {
  // p (device 0) feeds x (device 1), y (device 2) and z (device 1) in that out-edge order,
  // and nothing else: every edge of the graph is remote. Two transfers, to 1 and to 2.
  GraphBuilder b("fan");
  for (const char* name : {"p", "x", "y", "z"}) b.add(name, "Relu").output_bytes(10);
  b.connect("p", "x").connect("p", "y").connect("p", "z");
  auto g = CompiledGraph::compile(std::move(b).build());
  auto cluster = switch_cluster(3, 10.0);
  LookupCostModel cost(cluster, {1, 1, 1, 1});
  Simulator sim(g, cluster, cost);
  const SimulationResult& r = sim.simulate(placed(g, {{"p", 0}, {"x", 1}, {"y", 2}, {"z", 1}}));
  EXPECT_EQ(r.num_transfers, 2);
  EXPECT_EQ(r.bytes_moved, 20);
  // Both leave over gpu0's uplink: [1, 2) then [2, 3); x and z run back to back on 1.
  EXPECT_DOUBLE_EQ(r.step_time_s, 4.0);
  EXPECT_EQ(r.devices[1].num_kernels, 2);
}

}  // namespace
}  // namespace gopt::simulator
