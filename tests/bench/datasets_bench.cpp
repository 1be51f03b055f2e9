// Workload generation benchmarks: building each suite graph from its defaults (the issue's
// budget: gnmt_8, the largest, in under a second).
#include <benchmark/benchmark.h>

#include <string>

#include "datasets/workload_registry.h"

namespace {

void BM_Generate(benchmark::State& state, const std::string& name) {
  gopt::datasets::WorkloadRegistry registry;
  gopt::datasets::register_builtin_workloads(registry);
  std::int64_t nodes = 0;
  for (auto _ : state) {
    auto g = registry.generate(name);
    nodes = g.num_nodes();
    benchmark::DoNotOptimize(g);
  }
  state.counters["nodes"] = static_cast<double>(nodes);
  state.SetItemsProcessed(state.iterations() * nodes);
}

// One benchmark per suite graph: BM_Generate/<name>.
const bool kRegistered = [] {
  gopt::datasets::WorkloadRegistry registry;
  gopt::datasets::register_builtin_workloads(registry);
  for (const auto& name : registry.names()) {
    benchmark::RegisterBenchmark(("BM_Generate/" + name).c_str(), BM_Generate, name)
        ->Unit(benchmark::kMillisecond);
  }
  return true;
}();

}  // namespace
