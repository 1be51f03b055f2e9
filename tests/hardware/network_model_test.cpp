// NetworkModel: routes as channels, composed costs (latencies add, the slowest hop sets the
// rate), the same numbers as CostModel::transfer_time, and added channels.
#include "hardware/network_model.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include "hardware/cost_model.h"

namespace gopt::hardware {
namespace {

// gpu0 -- sw -- gpu1, the two links with different costs, and gpu2 on the same switch.
Cluster two_hop_cluster() {
  ClusterSpec spec;
  spec.with_name("two_hop").add_switch("sw");
  for (const char* name : {"gpu0", "gpu1", "gpu2"}) {
    spec.add_device(DeviceSpec(name, "test")
                        .peak_flops(core::DType::kFloat32, 1e12)
                        .memory_bandwidth(1e11)
                        .memory_capacity(1LL << 30));
  }
  spec.add_link(LinkSpec("gpu0", "sw").bandwidth(4).latency(1));  // 0.25 s/B
  spec.add_link(LinkSpec("gpu1", "sw").bandwidth(2).latency(2));  // 0.5 s/B
  spec.add_link(LinkSpec("gpu2", "sw").bandwidth(8).latency(0));
  return Cluster::build(spec, "test");
}

TEST(NetworkModelTest, ComposesLatenciesAndTheSlowestRate) {
  Cluster cluster = two_hop_cluster();
  RooflineCostModel cost(cluster);
  NetworkModel network(cluster, cost);
  EXPECT_EQ(network.route_cost(0, 1).latency_s, 3.0);
  EXPECT_EQ(network.route_cost(0, 1).seconds_per_byte, 0.5);
  EXPECT_EQ(network.transfer_time(10, 0, 1), 8.0);  // 3 + 10 * 0.5
  EXPECT_EQ(network.transfer_time(10, 0, 0), 0.0);
  EXPECT_EQ(network.transfer_time(8, 2, 0), 1.0 + 8 * 0.25);
}

TEST(NetworkModelTest, AgreesWithTheCostModelsTransferTime) {
  Cluster cluster = two_hop_cluster();
  RooflineCostModel cost(cluster);
  NetworkModel network(cluster, cost);
  for (DeviceId s = 0; s < 3; ++s) {
    for (DeviceId t = 0; t < 3; ++t) {
      EXPECT_EQ(network.transfer_time(12345, s, t), cost.transfer_time(12345, s, t));
    }
  }
}

TEST(NetworkModelTest, RoutesAreTheDirectedChannelsOfTheHops) {
  Cluster cluster = two_hop_cluster();
  RooflineCostModel cost(cluster);
  NetworkModel network(cluster, cost);
  EXPECT_EQ(network.num_channels(), 6);
  // gpu0 -> sw is link 0 forward (channel 0); sw -> gpu1 is link 1 backward (channel 3).
  std::vector<std::int32_t> route(network.route(0, 1).begin(), network.route(0, 1).end());
  EXPECT_EQ(route, (std::vector<std::int32_t>{0, 3}));
  EXPECT_EQ(network.route(1, 1).size(), 0u);
  EXPECT_EQ(network.link_of_channel(3), 1);
}

TEST(NetworkModelTest, AnAddedChannelJoinsTheRouteAndItsCost) {
  Cluster cluster = two_hop_cluster();
  RooflineCostModel cost(cluster);
  NetworkModel network(cluster, cost);
  const std::int32_t fabric = network.add_channel(/*latency_s=*/0.5, /*seconds_per_byte=*/1.0);
  EXPECT_EQ(fabric, 6);
  EXPECT_EQ(network.link_of_channel(fabric), -1);
  network.add_hop(0, 1, fabric);
  EXPECT_EQ(network.route(0, 1).size(), 3u);
  EXPECT_EQ(network.transfer_time(10, 0, 1), 3.5 + 10 * 1.0);
  EXPECT_EQ(network.transfer_time(10, 1, 0), 3.0 + 10 * 0.5);  // other direction unchanged
  EXPECT_THROW(network.add_hop(0, 0, fabric), std::invalid_argument);
  EXPECT_THROW(network.add_hop(0, 1, 7), std::invalid_argument);
  EXPECT_THROW(network.add_channel(-1, 0), std::invalid_argument);
}

}  // namespace
}  // namespace gopt::hardware
