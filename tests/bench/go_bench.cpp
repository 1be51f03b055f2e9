// GO policy benchmarks: the forward pass (no gradients, as when placing) on the paper's
// largest graph (gnmt_8, ~59k ops) and on random DAGs of 10k..80k ops to show it scales
// linearly; and one full PPO update on gnmt_8 (forward, 16 sampled placements plus the
// greedy one simulated, 3 epochs of forward and backward); the attention core alone, fused
// kernel against LibTorch ops. peak_rss_mb is the process's
// high-water mark so far (sizes run in increasing order).
#include <benchmark/benchmark.h>
#include <sys/resource.h>

#include <optional>

#include "agents/compute_threads.h"
#include "agents/cpu_numerics.h"
#include "agents/go/go_features.h"
#include "agents/go/go_model.h"
#include "agents/go/go_ppo.h"
#include "agents/go/segment_attention.h"
#include "agents/tensor_memory.h"
#include "agents/torch_utils.h"
#include "datasets/workload_registry.h"
#include "hardware/profile.h"
#include "tests/support/random_dag.h"

namespace {

using namespace gopt;

// The BLAS kernels and the thread count `gopt` runs with (experiments/cli/main.cpp does the
// same: one LibTorch and OpenBLAS thread per job, agents/compute_threads.h), chosen before
// any benchmark and named in the output's context. Without the limit, LibTorch and OpenBLAS
// took every core, which no gopt job does.
const bool kBlasSelected = [] {
  agents::limit_compute_threads(1);
  const std::string changed = agents::select_cpu_kernels();
  benchmark::AddCustomContext("cpu_numerics", agents::cpu_numerics_description() +
                                                  (changed.empty() ? "" : " (" + changed + ")"));
  benchmark::AddCustomContext("compute_threads", "1 (as every gopt job)");
  return true;
}();

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

// The dense arithmetic of one forward pass, per node: every Linear applied to each node
// (2 x in x out; the modulation and value layers act on one vector per graph and
// previous_device only when refining, so they are left out) and each attention core
// (a query meets 2L keys: scores and the weighted sum, 8 L hidden). Layer norms,
// activations, the GraphSAGE sums over edges and the softmaxes are not counted.
double forward_flops_per_node(agents::go::GoPolicy& policy) {
  double flops = 0;
  for (const auto& item : policy->named_modules()) {
    const std::string& name = item.key();
    if (name.find("modulation") != std::string::npos || name.find("value_") != std::string::npos ||
        name.find("previous_device") != std::string::npos) {
      continue;
    }
    if (const auto* linear = item.value()->as<torch::nn::Linear>()) {
      flops += 2.0 * static_cast<double>(linear->options.in_features()) *
               static_cast<double>(linear->options.out_features());
    }
  }
  const auto& o = policy->options;
  return flops + static_cast<double>(o.attention_layers) * 8.0 *
                     static_cast<double>(o.segment_length) * static_cast<double>(o.hidden);
}

// The GPU variants' device, or null after telling the benchmark to skip.
std::optional<torch::Device> gpu_or_skip(benchmark::State& state) {
  if (torch::cuda::is_available()) return torch::Device(torch::kCUDA, 0);
  state.SkipWithError("no GPU: LibTorch has no CUDA or sees none");
  return std::nullopt;
}

void forward(benchmark::State& state, const core::CompiledGraph& graph,
             torch::Device device = torch::kCPU) {
  auto tensors = agents::go::make_graph_tensors(graph);
  auto policy = default_policy();
  policy->to(device);
  const double flops = forward_flops_per_node(policy) * static_cast<double>(graph.num_nodes());
  torch::NoGradGuard no_grad;
  // As in training: tensor blocks cached (agents/tensor_memory.h), and one pass before the
  // clock starts, so that the timed passes reuse its blocks as every pass after a
  // learner's first does.
  const agents::TensorCacheScope cache;
  (void)policy->forward(tensors, 4);
  for (auto _ : state) {
    auto out = policy->forward(tensors, 4);
    benchmark::DoNotOptimize(out.logits.data_ptr<float>());
  }
  state.counters["nodes"] = static_cast<double>(graph.num_nodes());
  state.counters["us_per_node"] = benchmark::Counter(
      static_cast<double>(graph.num_nodes()),
      benchmark::Counter::kIsIterationInvariantRate | benchmark::Counter::kInvert);
  state.counters["peak_rss_mb"] = peak_rss_mb();
  // The arithmetic beside the time: the distance to the machine's limit.
  state.counters["kflop_per_node"] = flops / static_cast<double>(graph.num_nodes()) / 1e3;
  state.counters["gflop_per_s"] =
      benchmark::Counter(flops / 1e9, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_GoForwardGnmt8(benchmark::State& state) { forward(state, gnmt8()); }
BENCHMARK(BM_GoForwardGnmt8)->Name("BM_GoForward/gnmt_8")->Unit(benchmark::kMillisecond);

// On the first GPU (GoOptions::device cuda): the outputs come back to the CPU each pass.
void BM_GoForwardGnmt8Cuda(benchmark::State& state) {
  if (const auto gpu = gpu_or_skip(state)) forward(state, gnmt8(), *gpu);
}
BENCHMARK(BM_GoForwardGnmt8Cuda)->Name("BM_GoForward/gnmt_8/cuda")->Unit(benchmark::kMillisecond);

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

// The attention core of one segment attention layer (default sizes: 64 hidden, 2 heads,
// segments of 64), forward and backward, on N nodes: LibTorch ops (0) against the fused
// kernel (1).
void BM_SegmentAttention(benchmark::State& state) {
  const std::int64_t n = state.range(0);
  const bool fused = state.range(1) != 0;
  const std::int64_t hidden = 64;
  const std::int64_t heads = 2;
  const std::int64_t length = 64;
  const std::int64_t segments = (n + length - 1) / length;
  torch::manual_seed(1);
  auto q = torch::randn({segments, length, hidden}).requires_grad_(true);
  auto k = torch::randn({segments, length, hidden}).requires_grad_(true);
  auto v = torch::randn({segments, length, hidden}).requires_grad_(true);
  auto bias = torch::zeros({heads, 3 * length}).requires_grad_(true);
  auto grad = torch::randn({segments, length, hidden});
  auto run = fused ? agents::go::segment_attention : agents::go::segment_attention_reference;
  for (auto _ : state) {
    auto out = run(q, k, v, bias, heads, n);
    out.backward(grad);
  }
  state.SetItemsProcessed(state.iterations() * n);
}
BENCHMARK(BM_SegmentAttention)
    ->ArgsProduct({{17674, 80000}, {0, 1}})
    ->ArgNames({"nodes", "fused"})
    ->Unit(benchmark::kMillisecond);

void ppo_update(benchmark::State& state, torch::Device device) {
  const auto& graph = gnmt8();
  const auto cluster = hardware::load_profile("p100x4_pcie");
  const hardware::RooflineCostModel cost(cluster);
  agents::Problem problem{graph, cluster, cost, 1};
  agents::Environment env(problem);
  agents::go::PpoTask task(env);
  auto policy = default_policy();
  policy->to(device);
  torch::optim::Adam optimizer(policy->parameters(), torch::optim::AdamOptions(3e-3));
  core::Rng rng(2);
  agents::go::PpoTrainer trainer(policy, optimizer, agents::go::PpoOptions(),
                                 agents::make_generator(rng));
  // cache:1 is how gopt trains (agents/tensor_memory.h); cache:0 shows what it saves. One
  // update before the clock starts: the timed ones are a training run's steady state (its
  // reward reference set, the tensor cache filled), as every update after a learner's first.
  std::optional<agents::TensorCacheScope> cache;
  if (state.range(0) != 0) cache.emplace();
  (void)trainer.step(task);
  for (auto _ : state) {
    auto stats = trainer.step(task);
    benchmark::DoNotOptimize(stats.mean_reward);
  }
  state.counters["nodes"] = static_cast<double>(graph.num_nodes());
  state.counters["samples_per_update"] = static_cast<double>(trainer.samples_per_update());
  state.counters["peak_rss_mb"] = peak_rss_mb();
}
void BM_GoPpoUpdate(benchmark::State& state) { ppo_update(state, torch::kCPU); }
BENCHMARK(BM_GoPpoUpdate)
    ->Name("BM_GoPpoUpdate/gnmt_8/4")
    ->ArgName("cache")
    ->Arg(1)
    ->Arg(0)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);

// The same update with the policy on the first GPU; the simulations stay on the CPU.
void BM_GoPpoUpdateCuda(benchmark::State& state) {
  if (const auto gpu = gpu_or_skip(state)) ppo_update(state, *gpu);
}
BENCHMARK(BM_GoPpoUpdateCuda)
    ->Name("BM_GoPpoUpdate/gnmt_8/4/cuda")
    ->ArgName("cache")
    ->Arg(1)
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);

}  // namespace
