// Simulator benchmarks: one simulated step of a random DAG (1k, 10k, 80k nodes) on 4 and 8
// P100s over PCIe with a round-robin placement, against the bare topological sweep over
// the same CompiledGraph arrays (Kahn's algorithm computing earliest finish times from the
// same cached op times). docs/simulator.md gives the figures.
//
//   build/bin/gopt_bench --benchmark_filter='BM_Simulate|BM_TopoSweep'
#include <benchmark/benchmark.h>

#include <map>
#include <memory>
#include <vector>

#include "core/compiled_graph.h"
#include "hardware/cost_model.h"
#include "hardware/profile.h"
#include "simulator/decision_io.h"
#include "simulator/simulator.h"
#include "tests/support/random_dag.h"

namespace {

using gopt::core::CompiledGraph;
using gopt::core::NodeId;

const CompiledGraph& compiled_dag(NodeId n) {
  static std::map<NodeId, std::unique_ptr<CompiledGraph>> cache;
  auto& slot = cache[n];
  if (!slot) {
    slot = std::make_unique<CompiledGraph>(CompiledGraph::compile(
        gopt::testing::random_dag(gopt::testing::RandomDagOptions().with_nodes(n))));
  }
  return *slot;
}

const gopt::hardware::Cluster& cluster_of(int devices) {
  static std::map<int, std::unique_ptr<gopt::hardware::Cluster>> cache;
  auto& slot = cache[devices];
  if (!slot) {
    slot = std::make_unique<gopt::hardware::Cluster>(
        gopt::hardware::load_profile("p100x" + std::to_string(devices) + "_pcie"));
  }
  return *slot;
}

void BM_Simulate(benchmark::State& state) {
  auto n = static_cast<NodeId>(state.range(0));
  auto devices = static_cast<int>(state.range(1));
  const auto& graph = compiled_dag(n);
  const auto& cluster = cluster_of(devices);
  gopt::hardware::RooflineCostModel cost(cluster);
  gopt::simulator::Simulator simulator(graph, cluster, cost);
  gopt::core::Decision decision;
  decision.placement = gopt::simulator::round_robin_placement(graph, cluster.num_devices());
  const auto* result = &simulator.simulate(decision);  // warm-up: buffers reach capacity
  for (auto _ : state) {
    result = &simulator.simulate(decision);
    double step_time = result->step_time_s;
    benchmark::DoNotOptimize(step_time);
  }
  state.counters["nodes"] = n;
  state.counters["transfers"] = result->num_transfers;
  state.counters["step_ms"] = result->step_time_s * 1e3;
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_Simulate)
    ->ArgsProduct({{1000, 10000, 80000}, {4, 8}})
    ->ArgNames({"", "devices"})
    ->Unit(benchmark::kMillisecond);

void BM_SimulatePriorityFusion(benchmark::State& state) {
  auto n = static_cast<NodeId>(state.range(0));
  const auto& graph = compiled_dag(n);
  const auto& cluster = cluster_of(4);
  gopt::hardware::RooflineCostModel cost(cluster);
  gopt::simulator::Simulator simulator(graph, cluster, cost);
  gopt::core::Decision decision;
  decision.placement = gopt::simulator::round_robin_placement(graph, cluster.num_devices());
  decision.priority = std::vector<std::int32_t>(static_cast<std::size_t>(n));
  decision.fusion = std::vector<std::int32_t>(static_cast<std::size_t>(n));
  for (NodeId v = 0; v < n; ++v) {
    (*decision.priority)[static_cast<std::size_t>(v)] = (v * 7919) % 13;
    (*decision.fusion)[static_cast<std::size_t>(v)] = (v * 104729) % 5;
  }
  const auto* result = &simulator.simulate(decision);
  for (auto _ : state) {
    result = &simulator.simulate(decision);
    double step_time = result->step_time_s;
    benchmark::DoNotOptimize(step_time);
  }
  state.counters["kernels"] = result->num_kernels;
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_SimulatePriorityFusion)->Arg(80000)->Unit(benchmark::kMillisecond);

// The reference: Kahn's algorithm over the CSR arrays with a FIFO queue, relaxing earliest
// finish times with the same per-op times the simulator uses (device 0's column).
void BM_TopoSweep(benchmark::State& state) {
  auto n = static_cast<NodeId>(state.range(0));
  const auto& graph = compiled_dag(n);
  const auto& cluster = cluster_of(4);
  gopt::hardware::RooflineCostModel cost(cluster);
  gopt::simulator::Simulator simulator(graph, cluster, cost);
  std::vector<double> op_time(static_cast<std::size_t>(n));
  for (NodeId v = 0; v < n; ++v) op_time[static_cast<std::size_t>(v)] = simulator.op_time(v, 0);
  std::vector<std::int32_t> pending(static_cast<std::size_t>(n));
  std::vector<NodeId> queue(static_cast<std::size_t>(n));
  std::vector<double> ready(static_cast<std::size_t>(n));
  double makespan = 0;
  for (auto _ : state) {
    std::size_t tail = 0;
    for (NodeId v = 0; v < n; ++v) {
      auto i = static_cast<std::size_t>(v);
      pending[i] = graph.in_degree(v);
      ready[i] = 0;
      if (pending[i] == 0) queue[tail++] = v;
    }
    makespan = 0;
    for (std::size_t head = 0; head < tail; ++head) {
      NodeId v = queue[head];
      double finish = ready[static_cast<std::size_t>(v)] + op_time[static_cast<std::size_t>(v)];
      makespan = std::max(makespan, finish);
      for (auto e = graph.out_begin(v); e < graph.out_end(v); ++e) {
        auto c = static_cast<std::size_t>(graph.out_target(e));
        ready[c] = std::max(ready[c], finish);
        if (--pending[c] == 0) queue[tail++] = graph.out_target(e);
      }
    }
    benchmark::DoNotOptimize(makespan);
  }
  state.counters["nodes"] = n;
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_TopoSweep)->Arg(1000)->Arg(10000)->Arg(80000)->Unit(benchmark::kMillisecond);

}  // namespace

namespace {
void BM_SimulateSingleDevice(benchmark::State& state) {
  auto n = static_cast<NodeId>(state.range(0));
  const auto& graph = compiled_dag(n);
  const auto& cluster = cluster_of(4);
  gopt::hardware::RooflineCostModel cost(cluster);
  gopt::simulator::Simulator simulator(graph, cluster, cost);
  gopt::core::Decision decision;
  const auto* result = &simulator.simulate(decision);
  for (auto _ : state) {
    result = &simulator.simulate(decision);
    double step_time = result->step_time_s;
    benchmark::DoNotOptimize(step_time);
  }
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_SimulateSingleDevice)->Arg(80000)->Unit(benchmark::kMillisecond);
}  // namespace
