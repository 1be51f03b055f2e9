// Core benchmarks: reading a graph file, compiling it, and the bare topological sweep that
// the simulator's cost is measured against. Sizes: 1k, 10k and 80k nodes.
#include <benchmark/benchmark.h>

#include <filesystem>
#include <map>

#include "core/compiled_graph.h"
#include "core/graph_io.h"
#include "tests/support/random_dag.h"

namespace {

using gopt::core::CompiledGraph;
using gopt::core::NodeId;

const gopt::core::Graph& cached_dag(NodeId n) {
  static std::map<NodeId, gopt::core::Graph> cache;
  auto it = cache.find(n);
  if (it == cache.end()) {
    it =
        cache.emplace(n, gopt::testing::random_dag(gopt::testing::RandomDagOptions().with_nodes(n)))
            .first;
  }
  return it->second;
}

void BM_ParseGraphJson(benchmark::State& state) {
  auto n = static_cast<NodeId>(state.range(0));
  std::string text = gopt::core::to_graph_json(cached_dag(n));
  for (auto _ : state) {
    auto g = gopt::core::parse_graph_json(text, "bench.json");
    benchmark::DoNotOptimize(g);
  }
  state.counters["nodes"] = n;
  state.counters["file_bytes"] = static_cast<double>(text.size());
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_ParseGraphJson)->Arg(1000)->Arg(10000)->Arg(80000)->Unit(benchmark::kMillisecond);

void BM_ReadGraphFile(benchmark::State& state) {
  auto n = static_cast<NodeId>(state.range(0));
  auto path =
      std::filesystem::temp_directory_path() / ("gopt_bench_" + std::to_string(n) + ".json");
  gopt::core::write_graph_file(cached_dag(n), path);
  for (auto _ : state) {
    auto g = gopt::core::read_graph_file(path);
    benchmark::DoNotOptimize(g);
  }
  std::filesystem::remove(path);
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_ReadGraphFile)->Arg(80000)->Unit(benchmark::kMillisecond);

void BM_WriteGraphJson(benchmark::State& state) {
  auto n = static_cast<NodeId>(state.range(0));
  const auto& g = cached_dag(n);
  for (auto _ : state) {
    auto text = gopt::core::to_graph_json(g);
    benchmark::DoNotOptimize(text);
  }
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_WriteGraphJson)->Arg(80000)->Unit(benchmark::kMillisecond);

void BM_Compile(benchmark::State& state) {
  auto n = static_cast<NodeId>(state.range(0));
  const auto& g = cached_dag(n);
  for (auto _ : state) {
    auto cg = CompiledGraph::compile(g);
    benchmark::DoNotOptimize(cg);
  }
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_Compile)->Arg(1000)->Arg(10000)->Arg(80000)->Unit(benchmark::kMillisecond);

}  // namespace
