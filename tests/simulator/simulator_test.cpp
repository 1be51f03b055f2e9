// Hand-computed makespans, transfers, memory and OOM for the discrete-event simulator, with
// a lookup-table cost model (times in seconds, sizes in bytes).
#include "simulator/simulator.h"

#include <gtest/gtest.h>

#include "core/errors.h"
#include "core/graph.h"
#include "core/rng.h"
#include "hardware/profile.h"
#include "simulator/decision_io.h"
#include "tests/simulator/test_support.h"
#include "tests/support/random_dag.h"

namespace gopt::simulator {
namespace {

using core::CompiledGraph;
using core::Decision;
using core::GraphBuilder;
using testing::LookupCostModel;
using testing::mesh_cluster;

// a -> b, a -> c, b -> d, c -> d with costs 10, 15, 20, 25 (FlexFlow's example).
CompiledGraph diamond(core::Bytes edge_bytes = 4) {
  GraphBuilder b("diamond");
  auto a = b.add("a", "Relu").output_bytes(edge_bytes);
  auto x = b.add("b", "Relu").output_bytes(edge_bytes);
  auto y = b.add("c", "Relu").output_bytes(edge_bytes);
  auto d = b.add("d", "Relu").output_bytes(edge_bytes);
  b.connect(a, x).connect(a, y).connect(x, d).connect(y, d);
  return CompiledGraph::compile(std::move(b).build());
}

Decision place(std::vector<core::DeviceId> placement) {
  Decision d;
  d.placement = std::move(placement);
  return d;
}

TEST(SimulatorTest, ChainRunsBackToBack) {
  GraphBuilder b("chain");
  b.add("a", "Relu").output_bytes(8);
  b.add("b", "Relu").output_bytes(8);
  b.add("c", "Relu").output_bytes(8);
  b.connect("a", "b").connect("b", "c");
  auto g = CompiledGraph::compile(std::move(b).build());
  auto cluster = mesh_cluster(1, 1e9, 0);
  LookupCostModel cost(cluster, {10, 15, 20});
  Simulator sim(g, cluster, cost);
  const auto& r = sim.simulate(Decision{});
  EXPECT_DOUBLE_EQ(r.step_time_s, 45);
  EXPECT_DOUBLE_EQ(r.devices[0].busy_s, 45);
  EXPECT_EQ(r.devices[0].num_kernels, 3);
  EXPECT_EQ(r.bytes_moved, 0);
  EXPECT_DOUBLE_EQ(r.lower_bound_critical_path_s, 45);
  EXPECT_DOUBLE_EQ(r.lower_bound_work_s, 45);
  // a's output lives until b finishes; peak = two 8-byte tensors.
  EXPECT_EQ(r.devices[0].peak_memory_bytes, 16);
}

TEST(SimulatorTest, DiamondOnOneDeviceIsSerialised) {
  auto g = diamond();
  auto cluster = mesh_cluster(2, 1e9, 0);
  LookupCostModel cost(cluster, {10, 15, 20, 25});
  Simulator sim(g, cluster, cost);
  EXPECT_DOUBLE_EQ(sim.simulate(place({0, 0, 0, 0})).step_time_s, 70);
  EXPECT_DOUBLE_EQ(sim.simulate(place({0, 0, 0, 0})).lower_bound_critical_path_s, 55);
  EXPECT_DOUBLE_EQ(sim.simulate(place({0, 0, 0, 0})).lower_bound_work_s, 35);
}

TEST(SimulatorTest, DiamondOnTwoDevicesWithFreeCommunication) {
  auto g = diamond(/*edge_bytes=*/0);  // zero-byte tensors: nothing to send
  auto cluster = mesh_cluster(2, 1e9, 0);
  LookupCostModel cost(cluster, {10, 15, 20, 25});
  Simulator sim(g, cluster, cost);
  // a 0-10 on gpu0; b 10-25 on gpu0, c 10-30 on gpu1; d 30-55 on gpu0.
  const auto& r = sim.simulate(place({0, 0, 1, 0}));
  EXPECT_DOUBLE_EQ(r.step_time_s, 55);
  EXPECT_DOUBLE_EQ(r.devices[0].busy_s, 50);
  EXPECT_DOUBLE_EQ(r.devices[1].busy_s, 20);
  EXPECT_EQ(r.num_transfers, 0);
  EXPECT_DOUBLE_EQ(r.step_time_s, r.lower_bound_critical_path_s);
}

TEST(SimulatorTest, CrossDeviceEdgePaysLatencyPlusBytesOverBandwidth) {
  GraphBuilder b("pair");
  b.add("a", "Relu").output_bytes(1000);
  b.add("b", "Relu").output_bytes(10);
  b.connect("a", "b");
  auto g = CompiledGraph::compile(std::move(b).build());
  auto cluster = mesh_cluster(2, /*bandwidth=*/100, /*latency=*/2);
  LookupCostModel cost(cluster, {10, 5});
  Simulator sim(g, cluster, cost);
  // a 0-10; transfer 10 .. 10 + 2 + 1000/100 = 22; b 22-27.
  const auto& r = sim.simulate(place({0, 1}));
  EXPECT_DOUBLE_EQ(r.step_time_s, 27);
  EXPECT_EQ(r.bytes_moved, 1000);
  EXPECT_EQ(r.num_transfers, 1);
  EXPECT_EQ(r.links[0].bytes_moved, 1000);
  EXPECT_DOUBLE_EQ(r.links[0].busy_s, 12);
  // gpu1 holds the received 1000 bytes and b's 10-byte output while b runs.
  EXPECT_EQ(r.devices[1].peak_memory_bytes, 1010);
  EXPECT_EQ(r.devices[0].peak_memory_bytes, 1000);
  EXPECT_DOUBLE_EQ(cost.transfer_time(1000, 0, 1), 12);
}

TEST(SimulatorTest, MultiHopRouteIsHeldEndToEnd) {
  hardware::ClusterSpec spec;
  spec.add_device(testing::test_device("gpu0"))
      .add_device(testing::test_device("gpu1"))
      .add_switch("sw")
      .add_link(hardware::LinkSpec("gpu0", "sw").bandwidth(100).latency(1))
      .add_link(hardware::LinkSpec("sw", "gpu1").bandwidth(50).latency(1));
  auto cluster = hardware::Cluster::build(spec);
  GraphBuilder b("pair");
  b.add("a", "Relu").output_bytes(1000);
  b.add("b", "Relu").output_bytes(10);
  b.connect("a", "b");
  auto g = CompiledGraph::compile(std::move(b).build());
  LookupCostModel cost(cluster, {10, 5});
  // Latencies add up (1 + 1), bytes go at the slowest hop (1000 / 50): 22.
  EXPECT_DOUBLE_EQ(cost.transfer_time(1000, 0, 1), 22);
  Simulator sim(g, cluster, cost);
  const auto& r = sim.simulate(place({0, 1}));
  EXPECT_DOUBLE_EQ(r.step_time_s, 10 + 22 + 5);
  EXPECT_EQ(r.links[0].bytes_moved, 1000);
  EXPECT_EQ(r.links[1].bytes_moved, 1000);
}

TEST(SimulatorTest, TensorIsSentOncePerDestinationDevice) {
  GraphBuilder b("fanout");
  b.add("a", "Relu").output_bytes(1000);
  b.add("b", "Relu").output_bytes(10);
  b.add("c", "Relu").output_bytes(10);
  b.connect("a", "b").connect("a", "c");
  auto g = CompiledGraph::compile(std::move(b).build());
  auto cluster = mesh_cluster(2, 100, 0);
  LookupCostModel cost(cluster, {10, 5, 5});
  Simulator sim(g, cluster, cost);
  // One transfer 10-20; b 20-25, c 25-30 on gpu1.
  const auto& r = sim.simulate(place({0, 1, 1}));
  EXPECT_EQ(r.num_transfers, 1);
  EXPECT_EQ(r.bytes_moved, 1000);
  EXPECT_DOUBLE_EQ(r.step_time_s, 30);
}

TEST(SimulatorTest, TwoTransfersContendForOneLink) {
  // a and b on gpu0 (two streams, both 0-10), each sending 1000 bytes to gpu1 at 100 B/s:
  // the first transfer holds the link 10-20, the second queues and runs 20-30.
  GraphBuilder b("contend");
  b.add("a", "Relu").output_bytes(1000);
  b.add("b", "Relu").output_bytes(1000);
  b.add("c", "Relu").output_bytes(10);
  b.add("d", "Relu").output_bytes(10);
  b.connect("a", "c").connect("b", "d");
  auto g = CompiledGraph::compile(std::move(b).build());
  auto cluster = mesh_cluster(2, 100, 0, 1LL << 40, /*streams=*/2);
  LookupCostModel cost(cluster, {10, 10, 5, 5});
  Simulator sim(g, cluster, cost);
  const auto& r = sim.simulate(place({0, 0, 1, 1}));
  // c runs 20-25 and d 30-35 (both streams of gpu1 are free).
  EXPECT_DOUBLE_EQ(r.step_time_s, 35);
  EXPECT_DOUBLE_EQ(r.links[0].busy_s, 20);
  EXPECT_EQ(r.links[0].num_transfers, 2);

  // In opposite directions the two transfers do not contend (full duplex).
  GraphBuilder b2("duplex");
  b2.add("a", "Relu").output_bytes(1000);
  b2.add("b", "Relu").output_bytes(1000);
  b2.add("c", "Relu").output_bytes(10);
  b2.add("d", "Relu").output_bytes(10);
  b2.connect("a", "c").connect("b", "d");
  auto g2 = CompiledGraph::compile(std::move(b2).build());
  Simulator sim2(g2, cluster, cost);
  EXPECT_DOUBLE_EQ(sim2.simulate(place({0, 1, 1, 0})).step_time_s, 25);
}

// Without a copy engine the receiving device performs the copy on a compute stream: it
// waits for a free stream and holds it, as a CPU worker does (docs/simulator.md).
TEST(SimulatorTest, ReceiverCopyHoldsTheDestinationStream) {
  GraphBuilder b("receiver");
  b.add("a", "Relu").output_bytes(1000);
  b.add("x", "Relu").output_bytes(10);
  b.add("b", "Relu").output_bytes(10);
  b.connect("a", "b");
  auto g = CompiledGraph::compile(std::move(b).build());
  // With a copy engine: a 0-10, transfer 10-22 while x runs 0-30 on gpu1, b 30-35.
  auto dma = mesh_cluster(2, 100, 2);
  LookupCostModel dma_cost(dma, {10, 30, 5});
  EXPECT_DOUBLE_EQ(Simulator(g, dma, dma_cost).simulate(place({0, 1, 1})).step_time_s, 35);
  // Without: the copy waits for x and runs 30-42 on gpu1, b 42-47.
  auto cpu = mesh_cluster(2, 100, 2, 1LL << 40, 1, /*copy_engine=*/false);
  LookupCostModel cpu_cost(cpu, {10, 30, 5});
  Simulator sim(g, cpu, cpu_cost);
  struct Recorder : SimulationObserver {
    std::vector<TransferEvent> starts, ends;
    void on_transfer_start(const TransferEvent& t) override { starts.push_back(t); }
    void on_transfer_end(const TransferEvent& t) override { ends.push_back(t); }
  } recorder;
  const auto& r = sim.simulate(place({0, 1, 1}), &recorder);
  EXPECT_DOUBLE_EQ(r.step_time_s, 47);
  EXPECT_DOUBLE_EQ(r.devices[1].busy_s, 35);  // kernels only
  EXPECT_EQ(r.num_transfers, 1);
  EXPECT_EQ(r.links[0].bytes_moved, 1000);
  EXPECT_DOUBLE_EQ(r.links[0].busy_s, 12);
  ASSERT_EQ(recorder.starts.size(), 1u);
  EXPECT_DOUBLE_EQ(recorder.starts[0].request_s, 10);
  EXPECT_DOUBLE_EQ(recorder.starts[0].start_s, 30);
  EXPECT_DOUBLE_EQ(recorder.starts[0].end_s, 42);
  ASSERT_EQ(recorder.ends.size(), 1u);
  EXPECT_DOUBLE_EQ(recorder.ends[0].end_s, 42);
  // The same run unobserved gives the same result.
  EXPECT_DOUBLE_EQ(sim.simulate(place({0, 1, 1})).step_time_s, 47);

  // With two streams the copy takes the idle one: 10-22, b 22-27, x ends at 30.
  auto cpu2 = mesh_cluster(2, 100, 2, 1LL << 40, 2, /*copy_engine=*/false);
  LookupCostModel cpu2_cost(cpu2, {10, 30, 5});
  Simulator sim2(g, cpu2, cpu2_cost);
  EXPECT_DOUBLE_EQ(sim2.simulate(place({0, 1, 1})).step_time_s, 30);
}

TEST(SimulatorTest, ReceiverCopiesGoBeforeReadyOps) {
  // a (gpu0) -> b (gpu1) -> c (gpu0); x and y on gpu1 are ready at 0; b has the highest
  // priority. 1000 bytes at 100 B/s + 2 s latency = 12 s; 10 bytes = 2.1 s.
  GraphBuilder gb("order");
  gb.add("x", "Relu").output_bytes(10);
  gb.add("y", "Relu").output_bytes(10);
  gb.add("a", "Relu").output_bytes(1000);
  gb.add("b", "Relu").output_bytes(10);
  gb.add("c", "Relu").output_bytes(10);
  gb.connect("a", "b").connect("b", "c");
  auto g = CompiledGraph::compile(std::move(gb).build());
  Decision d = place({1, 1, 0, 1, 0});
  d.priority = std::vector<std::int32_t>{0, 0, 0, 1, 0};
  // Receiver copies: x 0-12 on gpu1; the copy (queued at 10) goes before y: 12-24; b
  // 24-29; y 29-49; b's output is copied by gpu0 29-31.1; c 31.1-131.1.
  auto cpu = mesh_cluster(2, 100, 2, 1LL << 40, 1, /*copy_engine=*/false);
  LookupCostModel cpu_cost(cpu, {12, 20, 10, 5, 100});
  EXPECT_DOUBLE_EQ(Simulator(g, cpu, cpu_cost).simulate(d).step_time_s, 131.1);
  // Copy engines: the transfer runs 10-22 while y runs 12-32; b 32-37; c 39.1-139.1.
  auto dma = mesh_cluster(2, 100, 2);
  LookupCostModel dma_cost(dma, {12, 20, 10, 5, 100});
  EXPECT_DOUBLE_EQ(Simulator(g, dma, dma_cost).simulate(d).step_time_s, 139.1);
}

TEST(SimulatorTest, PrioritiesChangeTheMakespan) {
  // gpu0 runs a and b (10 each, both ready at 0); b feeds c (30) on gpu1.
  GraphBuilder b("priority");
  b.add("a", "Relu").output_bytes(0);
  b.add("b", "Relu").output_bytes(0);
  b.add("c", "Relu").output_bytes(0);
  b.connect("b", "c");
  auto g = CompiledGraph::compile(std::move(b).build());
  auto cluster = mesh_cluster(2, 1e9, 0);
  LookupCostModel cost(cluster, {10, 10, 30});
  Simulator sim(g, cluster, cost);
  Decision fifo = place({0, 0, 1});
  EXPECT_DOUBLE_EQ(sim.simulate(fifo).step_time_s, 50);  // a, then b, then c 20-50
  Decision prioritised = fifo;
  prioritised.priority = std::vector<std::int32_t>{0, 5, 0};
  EXPECT_DOUBLE_EQ(sim.simulate(prioritised).step_time_s, 40);  // b first, c 10-40
  prioritised.priority = std::vector<std::int32_t>{-3, -1, 0};  // negative values work too
  EXPECT_DOUBLE_EQ(sim.simulate(prioritised).step_time_s, 40);
}

// A chain of three memory-bound ops under the roofline: each reads and writes 100 bytes at
// 100 B/s (2 s) with a 1 s launch: 3 s each, 9 s unfused. Fused: one launch, traffic 200
// bytes (first read + last write): 3 s.
struct RooflineChain {
  hardware::Cluster cluster;
  CompiledGraph graph;
  static RooflineChain make(core::Bytes capacity = 1LL << 40) {
    hardware::ClusterSpec spec;
    spec.add_device(hardware::DeviceSpec("gpu0", "toy")
                        .peak_flops(core::DType::kFloat32, 1e3)
                        .memory_bandwidth(100)
                        .memory_capacity(capacity)
                        .launch_overhead(1));
    GraphBuilder b("chain");
    for (const char* name : {"a", "b", "c"}) {
      b.add(name, "Relu").flops(100).bytes_read(100).bytes_written(100).output_bytes(100);
    }
    b.connect("a", "b").connect("b", "c");
    return RooflineChain{hardware::Cluster::build(spec),
                         CompiledGraph::compile(std::move(b).build())};
  }
};

TEST(SimulatorTest, FusingAChainSavesLaunchesAndMemoryTraffic) {
  auto chain = RooflineChain::make();
  hardware::RooflineCostModel cost(chain.cluster);
  Simulator sim(chain.graph, chain.cluster, cost);
  const auto& unfused = sim.simulate(Decision{});
  EXPECT_DOUBLE_EQ(unfused.step_time_s, 9);
  EXPECT_EQ(unfused.num_kernels, 3);
  EXPECT_EQ(unfused.devices[0].peak_memory_bytes, 200);

  Decision fused;
  fused.fusion = std::vector<std::int32_t>{1, 1, 1};
  const auto& r = sim.simulate(fused);
  EXPECT_DOUBLE_EQ(r.step_time_s, 3);
  EXPECT_EQ(r.num_kernels, 1);
  EXPECT_EQ(sim.last_groups().num_groups(), 1);
  EXPECT_EQ(r.devices[0].peak_memory_bytes, 100);  // only c's output is materialised

  Decision partial;
  partial.fusion = std::vector<std::int32_t>{0, 2, 2};  // a alone, {b, c} fused
  const auto& p = sim.simulate(partial);
  EXPECT_EQ(p.num_kernels, 2);
  EXPECT_DOUBLE_EQ(p.step_time_s, 3 + 3);  // {b,c}: launch 1 + (read 100 + write 100) / 100
}

TEST(SimulatorTest, OverCapacityIsAnOomResultNamingTheDevice) {
  auto chain = RooflineChain::make(/*capacity=*/150);
  hardware::RooflineCostModel cost(chain.cluster);
  Simulator sim(chain.graph, chain.cluster, cost);
  const auto& r = sim.simulate(Decision{});
  EXPECT_TRUE(r.oom);
  EXPECT_EQ(r.oom_device, 0);
  EXPECT_DOUBLE_EQ(r.oom_time_s, 3);   // b's output allocated while a's is live
  EXPECT_DOUBLE_EQ(r.step_time_s, 9);  // the run continues to the end
  Decision fused;
  fused.fusion = std::vector<std::int32_t>{1, 1, 1};
  EXPECT_FALSE(sim.simulate(fused).oom);  // fusion keeps the peak at 100 bytes

  Simulator stopping(chain.graph, chain.cluster, cost, SimulatorOptions().with_stop_on_oom(true));
  const auto& s = stopping.simulate(Decision{});
  EXPECT_TRUE(s.oom);
  EXPECT_LT(s.step_time_s, 9);
}

TEST(SimulatorTest, ParametersAreResidentFromTheStart) {
  GraphBuilder b("params");
  b.add("w", "VariableV2").param_bytes(500).output_bytes(0);
  b.add("x", "Relu").output_bytes(0);
  b.connect("w", "x");
  auto g = CompiledGraph::compile(std::move(b).build());
  auto cluster = mesh_cluster(2, 1e9, 0, /*capacity=*/400);
  LookupCostModel cost(cluster, {1, 1});
  Simulator sim(g, cluster, cost);
  const auto& r = sim.simulate(place({1, 0}));
  EXPECT_TRUE(r.oom);
  EXPECT_EQ(r.oom_device, 1);
  EXPECT_DOUBLE_EQ(r.oom_time_s, 0);
  EXPECT_EQ(r.devices[1].param_bytes, 500);
}

TEST(SimulatorTest, RepeatedRunsAreIdentical) {
  auto g = CompiledGraph::compile(
      gopt::testing::random_dag(gopt::testing::RandomDagOptions().with_nodes(3000).with_seed(7)));
  auto cluster = mesh_cluster(4, 1e10, 1e-6, 1LL << 40, 2);
  std::vector<double> times;
  core::Rng rng(3);
  for (core::NodeId v = 0; v < g.num_nodes(); ++v)
    times.push_back(1e-6 * static_cast<double>(rng.uniform_int(1, 50)));
  LookupCostModel cost(cluster, times, 1e-6);
  Decision d;
  d.placement = std::vector<core::DeviceId>();
  d.priority = std::vector<std::int32_t>();
  d.fusion = std::vector<std::int32_t>();
  for (core::NodeId v = 0; v < g.num_nodes(); ++v) {
    d.placement->push_back(static_cast<core::DeviceId>(rng.uniform_int(0, 3)));
    d.priority->push_back(static_cast<std::int32_t>(rng.uniform_int(-5, 5)));
    d.fusion->push_back(static_cast<std::int32_t>(rng.uniform_int(0, 3)));
  }
  Simulator a(g, cluster, cost);
  Simulator b(g, cluster, cost);
  SimulationResult first = a.simulate(d);
  a.simulate(place(round_robin_placement(g, 4)));  // something else in between
  SimulationResult again = a.simulate(d);
  SimulationResult other = b.simulate(d);
  for (const auto* r : {&again, &other}) {
    EXPECT_EQ(r->step_time_s, first.step_time_s);
    EXPECT_EQ(r->bytes_moved, first.bytes_moved);
    EXPECT_EQ(r->num_kernels, first.num_kernels);
    for (std::size_t i = 0; i < first.devices.size(); ++i) {
      EXPECT_EQ(r->devices[i].busy_s, first.devices[i].busy_s);
      EXPECT_EQ(r->devices[i].peak_memory_bytes, first.devices[i].peak_memory_bytes);
    }
  }
  EXPECT_LT(first.num_kernels, g.num_nodes());  // some ops were fused
}

TEST(SimulatorTest, UnfusedResultsRespectTheLowerBounds) {
  auto g = CompiledGraph::compile(
      gopt::testing::random_dag(gopt::testing::RandomDagOptions().with_nodes(2000).with_seed(11)));
  auto cluster = hardware::load_profile("p100x4_pcie");
  hardware::RooflineCostModel cost(cluster);
  Simulator sim(g, cluster, cost);
  for (const auto& d : {Decision{}, place(round_robin_placement(g, 4))}) {
    const auto& r = sim.simulate(d);
    EXPECT_GE(r.step_time_s, r.lower_bound_critical_path_s * (1 - 1e-12));
    EXPECT_GE(r.step_time_s, r.lower_bound_work_s * (1 - 1e-12));
    double busy = 0;
    for (const auto& dev : r.devices) busy += dev.busy_s;
    EXPECT_NEAR(busy, r.lower_bound_work_s * 4, 1e-9 * busy);  // all devices are one type
  }
}

TEST(SimulatorTest, InvalidDecisionsAreClearErrors) {
  auto g = diamond();
  auto cluster = mesh_cluster(2, 1e9, 0);
  LookupCostModel cost(cluster, {10, 15, 20, 25});
  Simulator sim(g, cluster, cost, SimulatorOptions().with_decision_source("best.json"));
  try {
    (void)sim.simulate(place({0, 5, 0, 0}));
    FAIL() << "expected InputError";
  } catch (const core::InputError& e) {
    std::string what = e.what();
    EXPECT_NE(what.find("best.json"), std::string::npos) << what;
    EXPECT_NE(what.find("placement[1]"), std::string::npos) << what;
    EXPECT_NE(what.find("'b'"), std::string::npos) << what;
    EXPECT_NE(what.find("device 5"), std::string::npos) << what;
  }
  try {
    (void)sim.simulate(place({0, 1}));
    FAIL() << "expected InputError";
  } catch (const core::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("expected one entry per op (4), found 2"),
              std::string::npos)
        << e.what();
  }
}

// A cost model whose fused time goes negative (here: launch cost above the members' own
// times) breaks the engine's clock; it is reported, not simulated.
TEST(SimulatorTest, NegativeFusedTimeIsAnInternalError) {
  GraphBuilder b("chain");
  b.add("a", "Relu").output_bytes(8);
  b.add("b", "Relu").output_bytes(8);
  b.connect("a", "b");
  auto g = CompiledGraph::compile(std::move(b).build());
  auto cluster = mesh_cluster(1, 1e9, 0);
  LookupCostModel cost(cluster, {0, 0}, /*launch_s=*/1);
  Simulator sim(g, cluster, cost);
  Decision d;
  d.fusion = std::vector<std::int32_t>{1, 1};
  EXPECT_THROW(sim.simulate(d), std::logic_error);
}

}  // namespace
}  // namespace gopt::simulator
