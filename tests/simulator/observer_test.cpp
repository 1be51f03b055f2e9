// Observers: the Chrome trace is valid trace-event JSON with one track per device stream
// and per link; utilisation statistics agree with the result.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <set>

#include "core/graph.h"
#include "simulator/chrome_trace.h"
#include "simulator/simulator.h"
#include "simulator/utilisation.h"
#include "tests/simulator/test_support.h"

namespace gopt::simulator {
namespace {

core::CompiledGraph small_graph() {
  core::GraphBuilder b("small");
  b.add("a", "Relu").output_bytes(1000);
  b.add("b", "Relu").output_bytes(1000);
  b.add("c", "Relu").output_bytes(10);
  b.connect("a", "b").connect("a", "c").connect("b", "c");
  return core::CompiledGraph::compile(std::move(b).build());
}

TEST(ObserverTest, ChromeTraceIsValidJsonWithTracks) {
  auto g = small_graph();
  auto cluster = testing::mesh_cluster(2, 100, 1);
  testing::LookupCostModel cost(cluster, {10, 5, 5});
  Simulator sim(g, cluster, cost);
  core::Decision d;
  d.placement = std::vector<core::DeviceId>{0, 1, 0};
  ChromeTraceWriter trace;
  const auto& r = sim.simulate(d, &trace);
  auto j = nlohmann::json::parse(trace.to_json());
  ASSERT_TRUE(j.contains("traceEvents"));
  std::set<std::string> process_names;
  int kernels = 0;
  int transfers = 0;
  for (const auto& ev : j["traceEvents"]) {
    ASSERT_TRUE(ev.contains("ph"));
    ASSERT_TRUE(ev.contains("pid"));
    if (ev["ph"] == "M" && ev["name"] == "process_name") process_names.insert(ev["args"]["name"]);
    if (ev["ph"] == "X") {
      EXPECT_GE(ev["dur"].get<double>(), 0);
      (ev["cat"] == "transfer" ? transfers : kernels)++;
    }
  }
  EXPECT_EQ(process_names, (std::set<std::string>{"gpu0", "gpu1", "links"}));
  EXPECT_EQ(kernels, 3);
  EXPECT_EQ(transfers, r.num_transfers);  // one hop per transfer in a mesh
  EXPECT_EQ(r.num_transfers, 2);          // a -> gpu1, b -> gpu0
}

TEST(ObserverTest, UtilisationMatchesTheResult) {
  auto g = small_graph();
  auto cluster = testing::mesh_cluster(2, 100, 1);
  testing::LookupCostModel cost(cluster, {10, 5, 5});
  Simulator sim(g, cluster, cost);
  core::Decision d;
  d.placement = std::vector<core::DeviceId>{0, 1, 0};
  UtilisationStats stats;
  const auto& r = sim.simulate(d, &stats);
  ASSERT_EQ(stats.devices().size(), 2u);
  // a 0-10; a's 1000 bytes to gpu1 10-21 (1 + 1000/100); b 21-26; b's 1000 bytes back to
  // gpu0 26-37; c 37-42.
  EXPECT_DOUBLE_EQ(r.step_time_s, 42);
  EXPECT_DOUBLE_EQ(stats.devices()[0].busy_s, 15);
  EXPECT_DOUBLE_EQ(stats.devices()[0].utilisation, 15.0 / 42.0);
  EXPECT_DOUBLE_EQ(stats.devices()[1].utilisation, 5.0 / 42.0);
  EXPECT_EQ(stats.links()[0].transfers, 2);
  EXPECT_DOUBLE_EQ(stats.links()[0].busy_s, 22);
  EXPECT_FALSE(stats.format().empty());
  // The same simulation without an observer gives the same result.
  EXPECT_DOUBLE_EQ(sim.simulate(d).step_time_s, 42);
}

}  // namespace
}  // namespace gopt::simulator
