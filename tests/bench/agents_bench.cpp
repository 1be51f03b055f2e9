// Agent benchmarks on the paper's largest graph (gnmt_8, ~59k ops) on 4 P100s: the time of
// each baseline's propose() and of one HDP training step (policy forward, 4 sampled
// placements simulated, REINFORCE update).
#include <benchmark/benchmark.h>

#include <iterator>
#include <map>
#include <memory>
#include <vector>

#include "agents/environment.h"
#include "agents/registry.h"
#include "core/rng.h"
#include "datasets/workload_registry.h"
#include "hardware/profile.h"
#include "simulator/simulator.h"

namespace {

using namespace gopt;

struct Gnmt8 {
  Gnmt8()
      : graph(core::CompiledGraph::compile([] {
          datasets::WorkloadRegistry r;
          datasets::register_builtin_workloads(r);
          return r.generate("gnmt_8");
        }())),
        cluster(hardware::load_profile("p100x4_pcie")),
        cost(cluster),
        problem{graph, cluster, cost, 1} {
    agents::register_builtin_agents(registry);
  }
  core::CompiledGraph graph;
  hardware::Cluster cluster;
  hardware::RooflineCostModel cost;
  agents::Problem problem;
  agents::AgentRegistry registry;
};

Gnmt8& gnmt8() {
  static Gnmt8 instance;
  return instance;
}

void BM_Propose(benchmark::State& state, const std::string& agent) {
  auto& f = gnmt8();
  auto a = f.registry.create(agent);
  for (auto _ : state) {
    auto d = a->propose(f.problem);
    benchmark::DoNotOptimize(d);
  }
  state.counters["nodes"] = f.graph.num_nodes();
}
BENCHMARK_CAPTURE(BM_Propose, single_device / gnmt_8, std::string("single_device"))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Propose, human_expert / gnmt_8, std::string("human_expert"))
    ->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Propose, metis / gnmt_8, std::string("metis"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Propose, heft / gnmt_8, std::string("heft"))->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_Propose, m_etf / gnmt_8, std::string("m_etf"))->Unit(benchmark::kMillisecond);

// One simulated step of gnmt_8 under the human-expert placement (4 P100s): the simulator's
// cost on the paper's largest graph.
void BM_SimulateGnmt8(benchmark::State& state) {
  auto& f = gnmt8();
  auto decision = f.registry.create("human_expert")->propose(f.problem);
  simulator::Simulator sim(f.graph, f.cluster, f.cost);
  for (auto _ : state) {
    const auto& r = sim.simulate(decision);
    double step_time = r.step_time_s;
    benchmark::DoNotOptimize(step_time);
  }
  state.counters["nodes"] = f.graph.num_nodes();
  state.counters["step_ms"] = sim.simulate(decision).step_time_s * 1e3;
}
BENCHMARK(BM_SimulateGnmt8)->Name("BM_Simulate/gnmt_8")->Unit(benchmark::kMillisecond);

// A PPO update's samples (64, Table 1's configs) evaluated as one batch on 1 or 2 threads
// (Environment::evaluate_many): the ratio of the two is the parallel speed-up of issue #56.
// The samples are the human-expert placement with 5% of the ops on random devices each, a
// stand-in for a policy's sampled placements.
void BM_EvaluateMany(benchmark::State& state) {
  auto& f = gnmt8();
  const auto expert = f.registry.create("human_expert")->propose(f.problem);
  core::Rng rng(7);
  std::vector<core::Decision> samples(64, expert);
  for (auto& d : samples) {
    for (auto& device : *d.placement) {
      if (rng.uniform() < 0.05) device = static_cast<core::DeviceId>(rng.uniform_int(0, 3));
    }
  }
  agents::Environment env(f.problem);
  env.set_threads(static_cast<int>(state.range(0)));
  for (auto _ : state) {
    auto evaluations = env.evaluate_many(samples);
    benchmark::DoNotOptimize(evaluations);
  }
  state.counters["samples_per_second"] =
      benchmark::Counter(static_cast<double>(state.iterations() * 64), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_EvaluateMany)
    ->Name("BM_EvaluateMany/gnmt_8/64")
    ->ArgName("threads")
    ->Arg(1)
    ->Arg(2)
    ->Unit(benchmark::kMillisecond)
    ->UseRealTime()
    ->MeasureProcessCPUTime();

// One HDP update per iteration; steps_per_second is the figure the issue asks for.
void BM_HdpTrainStep(benchmark::State& state) {
  auto& f = gnmt8();
  auto hdp = f.registry.create("hdp");
  agents::Environment env(f.problem);
  hdp->train(env, agents::TrainBudget().with_max_steps(1), nullptr);  // builds the networks
  for (auto _ : state) {
    hdp->train(env, agents::TrainBudget().with_max_steps(1), nullptr);
  }
  state.counters["steps_per_second"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_HdpTrainStep)
    ->Name("BM_HdpTrainStep/gnmt_8/4")
    ->Unit(benchmark::kMillisecond)
    ->Iterations(10);

// One search move on gnmt_8 from the human-expert placement, simulated whole (simulate) or
// from the expert's checkpoints (simulate_delta, issue #56). `move`: 0, a block of up to 64
// consecutive ops in topological order to another device; 1, a whole layer (the workload's
// layer metadata) to another device; 2, a block's priorities set to one level (the
// scheduling task's move, on the expert placement with all priorities 0). resimulated:
// the share of the step's events the delta runs simulated.
void BM_SearchMove(benchmark::State& state) {
  auto& f = gnmt8();
  const bool delta = state.range(0) != 0;
  const auto kind = state.range(1);
  auto expert = f.registry.create("human_expert")->propose(f.problem);
  const auto n = static_cast<std::size_t>(f.graph.num_nodes());
  if (kind == 2) expert.priority = std::vector<std::int32_t>(n, 0);
  const auto& order = f.graph.topological_order();
  std::map<std::int32_t, std::vector<core::NodeId>> by_layer;
  for (core::NodeId v = 0; v < f.graph.num_nodes(); ++v) {
    const auto layer = f.graph.layer()[static_cast<std::size_t>(v)];
    if (layer >= 0) by_layer[layer].push_back(v);
  }
  core::Rng rng(11);
  std::vector<core::Decision> moves;
  for (int i = 0; i < 32; ++i) {
    core::Decision d = expert;
    std::vector<core::NodeId> unit;
    if (kind == 1 && !by_layer.empty()) {
      auto it = by_layer.begin();
      std::advance(it, rng.uniform_int(0, static_cast<std::int64_t>(by_layer.size()) - 1));
      unit = it->second;
    } else {
      const std::int64_t length = rng.uniform_int(1, 64);
      const std::int64_t first =
          rng.uniform_int(0, static_cast<std::int64_t>(order.size()) - length);
      unit.assign(order.begin() + first, order.begin() + first + length);
    }
    const auto from = (*d.placement)[static_cast<std::size_t>(unit.front())];
    const auto to = static_cast<core::DeviceId>((from + 1 + rng.uniform_int(0, 2)) % 4);
    const auto level = static_cast<std::int32_t>(rng.uniform_int(1, 7));
    for (auto v : unit) {
      if (kind == 2) {
        (*d.priority)[static_cast<std::size_t>(v)] = level;
      } else {
        (*d.placement)[static_cast<std::size_t>(v)] = to;
      }
    }
    moves.push_back(std::move(d));
  }
  simulator::Simulator sim(f.graph, f.cluster, f.cost);
  (void)sim.simulate_delta(expert);
  sim.keep_as_base();
  std::size_t i = 0;
  double share = 0;
  std::int64_t runs = 0;
  for (auto _ : state) {
    const auto& d = moves[i++ % moves.size()];
    double step_time = delta ? sim.simulate_delta(d).step_time_s : sim.simulate(d).step_time_s;
    benchmark::DoNotOptimize(step_time);
    if (delta) share += sim.last_delta_share();
    ++runs;
  }
  state.counters["resimulated"] = delta ? share / static_cast<double>(runs) : 1.0;
}
BENCHMARK(BM_SearchMove)
    ->Name("BM_SearchMove/gnmt_8")
    ->ArgNames({"delta", "move"})
    ->ArgsProduct({{0, 1}, {0, 1, 2}})
    ->Unit(benchmark::kMillisecond);

}  // namespace
