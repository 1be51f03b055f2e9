// Links: channels held for a transfer's whole route, in issue order; one FIFO of transfers
// in flight per first channel; statistics spread over the links of each route.
#include "simulator/links.h"

#include <gtest/gtest.h>

#include <stdexcept>
#include <vector>

#include "tests/simulator/test_clusters.h"

namespace gopt::simulator {
namespace {

using testing::LookupCostModel;
using testing::switch_cluster;

TEST(LinksTest, ATransferHoldsEveryChannelOfItsRoute) {
  auto cluster = switch_cluster(3, 1.0);
  LookupCostModel cost(cluster, {});
  hardware::NetworkModel network(cluster, cost);
  Links links(network, 8);
  links.reset();
  // 0 -> 1 holds gpu0's uplink and gpu1's downlink over [0, 2).
  Links::Hold a = links.hold(0, 1, /*now_s=*/0, /*duration_s=*/2);
  EXPECT_EQ(a.start_s, 0);
  EXPECT_EQ(a.end_s, 2);
  // 0 -> 2 shares the uplink: it waits for it.
  Links::Hold b = links.hold(0, 2, 1, 1);
  EXPECT_EQ(b.start_s, 2);
  EXPECT_EQ(b.end_s, 3);
  // 2 -> 1 shares gpu1's downlink, held until 2.
  Links::Hold c = links.hold(2, 1, 1, 1);
  EXPECT_EQ(c.start_s, 2);
  // 1 -> 0 uses the other directions (links are full duplex): it starts at once.
  Links::Hold d = links.hold(1, 0, 0.5, 1);
  EXPECT_EQ(d.start_s, 0.5);
  links.reset();
  EXPECT_EQ(links.hold(0, 1, 0, 1).start_s, 0);  // every channel free again
}

TEST(LinksTest, RoutesSharingAFirstChannelShareAFifo) {
  auto cluster = switch_cluster(3, 1.0);
  LookupCostModel cost(cluster, {});
  hardware::NetworkModel network(cluster, cost);
  Links links(network, 8);
  links.reset();
  EXPECT_TRUE(links.enqueue(0, 1, /*id=*/0, /*end_s=*/2));  // the head: schedule it
  EXPECT_FALSE(links.enqueue(0, 2, 1, 3));                  // behind it (gpu0's uplink)
  EXPECT_TRUE(links.enqueue(1, 2, 2, 1));                   // another first channel
  EXPECT_EQ(links.dequeue(0, 1, 0), 1);                     // at 0's arrival, 1 is next
  EXPECT_EQ(links.dequeue(0, 2, 1), -1);
  EXPECT_EQ(links.dequeue(1, 2, 2), -1);
  EXPECT_TRUE(links.enqueue(0, 2, 3, 4));  // the FIFO was emptied
}

TEST(LinksTest, AFifoOutOfOrderIsAnInternalError) {
  auto cluster = switch_cluster(3, 1.0);
  LookupCostModel cost(cluster, {});
  hardware::NetworkModel network(cluster, cost);
  Links links(network, 8);
  links.reset();
  EXPECT_TRUE(links.enqueue(0, 1, 0, 5));
  EXPECT_THROW(links.enqueue(0, 2, 1, 4), std::logic_error);
  EXPECT_THROW(links.enqueue(0, 2, 8, 6), std::logic_error);  // id past the bound
}

TEST(LinksTest, StatisticsCountOnEveryLinkOfTheRoute) {
  auto cluster = switch_cluster(3, 1.0);
  LookupCostModel cost(cluster, {});
  hardware::NetworkModel network(cluster, cost);
  Links links(network, 8);
  links.reset();
  links.record(0, 1, 100, 2.0);
  links.record(0, 1, 50, 1.0);
  links.record(2, 1, 10, 0.5);
  std::vector<LinkResult> results(3);
  EXPECT_EQ(links.write_link_results(network, results), 160);
  EXPECT_EQ(results[0].bytes_moved, 150);  // gpu0's link
  EXPECT_EQ(results[0].num_transfers, 2);
  EXPECT_EQ(results[0].busy_s, 3.0);
  EXPECT_EQ(results[1].bytes_moved, 160);  // gpu1's link: both routes end there
  EXPECT_EQ(results[1].num_transfers, 3);
  EXPECT_EQ(results[1].busy_s, 3.5);
  EXPECT_EQ(results[2].bytes_moved, 10);
}

}  // namespace
}  // namespace gopt::simulator
