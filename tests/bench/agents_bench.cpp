// Agent benchmarks on the paper's largest graph (gnmt_8, ~59k ops) on 4 P100s: the time of
// each baseline's propose() and of one HDP training step (policy forward, 4 sampled
// placements simulated, REINFORCE update).
#include <benchmark/benchmark.h>

#include <memory>

#include "agents/registry.h"
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

// One HDP update per iteration; steps_per_second is the figure the issue asks for.
void BM_HdpTrainStep(benchmark::State& state) {
  auto& f = gnmt8();
  auto hdp = f.registry.create("hdp");
  agents::Environment env(f.problem);
  hdp->train(env, agents::TrainBudget().with_steps(1), nullptr);  // builds the networks
  for (auto _ : state) {
    hdp->train(env, agents::TrainBudget().with_steps(1), nullptr);
  }
  state.counters["steps_per_second"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_HdpTrainStep)
    ->Name("BM_HdpTrainStep/gnmt_8/4")
    ->Unit(benchmark::kMillisecond)
    ->Iterations(10);

}  // namespace
