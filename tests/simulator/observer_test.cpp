// Observers: the Chrome trace is valid trace-event JSON with one track per device stream
// and per link; utilisation statistics agree with the result.
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "core/graph.h"
#include "simulator/chrome_trace.h"
#include "simulator/simulator.h"
#include "simulator/utilisation.h"
#include "tests/simulator/test_support.h"

namespace gopt::simulator {
namespace {

// a -> b -> c and a -> c, with FLOPs the trace reports (the lookup cost model ignores them).
core::CompiledGraph small_graph() {
  core::GraphBuilder b("small");
  b.add("a", "Relu").output_bytes(1000).flops(7);
  b.add("b", "Relu").output_bytes(1000).flops(3);
  b.add("c", "Relu").output_bytes(10).flops(2);
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

// Op events carry the op's name, type and sizes; a fused kernel lists its members; a tensor
// sent to another device is one arrow from its producer, through its transfer, to its
// consumer there (a -> gpu1 feeds b, b -> gpu0 feeds c).
TEST(ObserverTest, ChromeTraceNamesOpsFusedMembersAndFlows) {
  auto g = small_graph();
  auto cluster = testing::mesh_cluster(2, 100, 1);
  testing::LookupCostModel cost(cluster, {10, 5, 5});
  Simulator sim(g, cluster, cost);
  core::Decision d;
  d.placement = std::vector<core::DeviceId>{0, 1, 0};
  ChromeTraceWriter trace;
  const auto& r = sim.simulate(d, &trace);
  auto j = nlohmann::json::parse(trace.to_json());
  std::map<std::string, nlohmann::json> ops;
  std::map<std::int64_t, std::vector<nlohmann::json>> flows;
  for (const auto& ev : j["traceEvents"]) {
    if (ev["ph"] == "X" && ev["cat"] == "op") ops[ev["args"]["op"]] = ev;
    if (ev.value("cat", "") == "flow") flows[ev["id"].get<std::int64_t>()].push_back(ev);
  }
  ASSERT_EQ(ops.size(), 3u);
  EXPECT_EQ(ops["a"]["args"]["type"], "Relu");
  EXPECT_EQ(ops["a"]["args"]["flops"].get<double>(), 7);
  EXPECT_EQ(ops["a"]["args"]["output_bytes"].get<std::int64_t>(), 1000);
  EXPECT_TRUE(ops["a"]["args"].contains("bytes_read"));
  ASSERT_EQ(flows.size(), 2u);  // one per transfer, each with one consumer
  for (const auto& [id, chain] : flows) {
    ASSERT_EQ(chain.size(), 3u) << id;
    EXPECT_EQ(chain[0]["ph"], "s");
    EXPECT_EQ(chain[1]["ph"], "t");
    EXPECT_EQ(chain[2]["ph"], "f");
    // Each end lies inside the slice it binds to: producer on its device, transfer on the
    // links process, consumer on the destination device.
    const bool from_a = chain[0]["pid"] == 0;
    const auto& producer = ops[from_a ? "a" : "b"];
    const auto& consumer = ops[from_a ? "b" : "c"];
    auto inside = [](const nlohmann::json& e, const nlohmann::json& slice) {
      const double ts = e["ts"].get<double>();
      const double start = slice["ts"].get<double>();
      return e["pid"] == slice["pid"] && e["tid"] == slice["tid"] && ts >= start &&
             ts <= start + slice["dur"].get<double>();
    };
    EXPECT_TRUE(inside(chain[0], producer)) << chain[0];
    EXPECT_EQ(chain[1]["pid"], 2);  // links
    EXPECT_TRUE(inside(chain[2], consumer)) << chain[2];
  }

  // A memory counter per device: parameters (none here) at 0, then each allocation and
  // release; a's 1000-byte output lives on gpu0 from its start until c, its last consumer
  // there, finishes (b's copy of it goes to gpu1).
  std::map<int, std::vector<std::pair<double, std::int64_t>>> memory;
  for (const auto& ev : j["traceEvents"]) {
    if (ev["ph"] == "C") {
      memory[ev["pid"].get<int>()].emplace_back(ev["ts"].get<double>(),
                                                ev["args"]["bytes"].get<std::int64_t>());
    }
  }
  ASSERT_EQ(memory.size(), 2u);
  EXPECT_EQ(memory[0].front(), (std::pair<double, std::int64_t>{0, 1000}));  // a starts at 0
  EXPECT_EQ(memory[0].back().second, 0);  // everything released at the end
  std::int64_t peak = 0;
  for (const auto& [ts, bytes] : memory[0]) peak = std::max(peak, bytes);
  EXPECT_EQ(peak, r.devices[0].peak_memory_bytes);

  // Fused on one device: one kernel listing its members with their summed FLOPs.
  core::Decision fused;
  fused.placement = std::vector<core::DeviceId>{0, 0, 0};
  fused.fusion = std::vector<std::int32_t>{1, 1, 1};
  (void)sim.simulate(fused, &trace);
  auto k = nlohmann::json::parse(trace.to_json());
  int fused_kernels = 0;
  for (const auto& ev : k["traceEvents"]) {
    if (ev["ph"] != "X" || ev["cat"] != "fused") continue;
    ++fused_kernels;
    EXPECT_EQ(ev["args"]["ops"].get<int>(), 3);
    EXPECT_EQ(ev["args"]["members"], (nlohmann::json::array({"a (Relu)", "b (Relu)", "c (Relu)"})));
    EXPECT_EQ(ev["args"]["flops"].get<double>(), 12);
  }
  EXPECT_EQ(fused_kernels, 1);
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
