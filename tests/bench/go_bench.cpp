// GO policy benchmarks: the forward pass (no gradients, as when placing) on the paper's
// largest graph (gnmt_8, ~59k ops) and on random DAGs of 10k..80k ops to show it scales
// linearly; and one full PPO update on gnmt_8 (forward, 16 sampled placements plus the
// greedy one simulated, 3 epochs of forward and backward). peak_rss_mb is the process's
// high-water mark so far (sizes run in increasing order).
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include "agents/go/go_features.h"
#include "agents/go/go_model.h"
#include "agents/go/go_ppo.h"
#include "agents/torch_utils.h"
#include "datasets/workload_registry.h"
#include "hardware/profile.h"
#include "tests/support/random_dag.h"

namespace {

using namespace gopt;

double peak_rss_mb() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return static_cast<double>(usage.ru_maxrss) / 1024.0;
}

const core::CompiledGraph& gnmt8() {
  static const core::CompiledGraph graph = core::CompiledGraph::compile([] {
    datasets::WorkloadRegistry r;
    datasets::register_builtin_workloads(r);
    return r.generate("gnmt_8");
  }());
  return graph;
}

agents::go::GoPolicy default_policy() {
  agents::go::GoPolicy policy{agents::go::GoPolicyOptions()};
  core::Rng rng(1);
  agents::initialise(*policy, rng);
  policy->reset_heads();
  return policy;
}

void forward(benchmark::State& state, const core::CompiledGraph& graph) {
  auto tensors = agents::go::make_graph_tensors(graph);
  auto policy = default_policy();
  torch::NoGradGuard no_grad;
  for (auto _ : state) {
    auto out = policy->forward(tensors, 4);
    benchmark::DoNotOptimize(out.logits.data_ptr<float>());
  }
  state.counters["nodes"] = static_cast<double>(graph.num_nodes());
  state.counters["us_per_node"] = benchmark::Counter(
      static_cast<double>(graph.num_nodes()),
      benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  state.counters["peak_rss_mb"] = peak_rss_mb();
}

void BM_GoForwardGnmt8(benchmark::State& state) { forward(state, gnmt8()); }
BENCHMARK(BM_GoForwardGnmt8)->Name("BM_GoForward/gnmt_8")->Unit(benchmark::kMillisecond);

void BM_GoForwardRandom(benchmark::State& state) {
  const auto graph = core::CompiledGraph::compile(gopt::testing::random_dag(
      gopt::testing::RandomDagOptions().with_nodes(static_cast<core::NodeId>(state.range(0)))));
  forward(state, graph);
}
BENCHMARK(BM_GoForwardRandom)
    ->Name("BM_GoForward/random")
    ->Arg(10000)
    ->Arg(20000)
    ->Arg(40000)
    ->Arg(80000)
    ->Unit(benchmark::kMillisecond);

void BM_GoPpoUpdate(benchmark::State& state) {
  const auto& graph = gnmt8();
  const auto cluster = hardware::load_profile("p100x4_pcie");
  const hardware::RooflineCostModel cost(cluster);
  agents::Problem problem{graph, cluster, cost, 1};
  agents::Environment env(problem);
  agents::go::PpoTask task(env);
  auto policy = default_policy();
  torch::optim::Adam optimizer(policy->parameters(), torch::optim::AdamOptions(3e-3));
  core::Rng rng(2);
  agents::go::PpoTrainer trainer(policy, optimizer, agents::go::PpoOptions(),
                                 agents::make_generator(rng));
  for (auto _ : state) {
    auto stats = trainer.step(task);
    benchmark::DoNotOptimize(stats.mean_reward);
  }
  state.counters["nodes"] = static_cast<double>(graph.num_nodes());
  state.counters["samples_per_update"] = static_cast<double>(trainer.samples_per_update());
  state.counters["peak_rss_mb"] = peak_rss_mb();
}
BENCHMARK(BM_GoPpoUpdate)
    ->Name("BM_GoPpoUpdate/gnmt_8/4")
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);

}  // namespace
