// Backend benchmarks: one executed step (real LibTorch kernels on one CPU worker) of a
// real-CPU-sized graph (experiments/configs/table1_real_cpu.yaml's sizes) on one device,
// unfused and under tf_default's rule-based fusion executed as fused groups
// (docs/hardware-backend.md "Fusion"). The reported time is the backend's median step
// (manual time), so fused against unfused is what fusion gains on this CPU. And the
// simulator's cost of the same fused decision on the shipped measured CPU profile, with
// its calibrated fused-loop ratio and without it (the roofline's fused model).
//
//   build/bin/gopt_bench --benchmark_filter='BM_BackendStep|BM_SimulateFused'
#include <benchmark/benchmark.h>

#include <map>
#include <memory>
#include <string>

#include "agents/baselines/tf_default.h"
#include "datasets/workload_registry.h"
#include "hardware/backend/backend.h"
#include "hardware/cost_model.h"
#include "hardware/profile.h"
#include "simulator/fusion.h"
#include "simulator/simulator.h"

namespace {

using namespace gopt;

struct Workload {
  core::Graph graph;
  core::CompiledGraph compiled;
};

const Workload& workload(const std::string& name) {
  static std::map<std::string, std::unique_ptr<Workload>> cache;
  auto& slot = cache[name];
  if (!slot) {
    datasets::WorkloadRegistry r;
    datasets::register_builtin_workloads(r);
    std::map<std::string, std::string> set;
    if (name == "rnnlm_2") {
      set = {{"hidden", "512"}, {"vocab", "4000"}, {"batch", "16"}, {"seq_len", "10"}};
    } else if (name == "transformer_xl_2") {
      set = {{"d_model", "256"}, {"heads", "4"},    {"d_head", "64"}, {"d_inner", "1024"},
             {"seg_len", "64"},  {"mem_len", "64"}, {"batch", "4"},   {"vocab", "5000"}};
    } else if (name == "wavenet_2") {
      set = {{"samples", "4000"}, {"skip_channels", "128"}};
    }
    core::Graph g = r.generate(name, set);
    auto cg = core::CompiledGraph::compile(g);
    slot = std::make_unique<Workload>(Workload{std::move(g), std::move(cg)});
  }
  return *slot;
}

void BM_BackendStep(benchmark::State& state, const std::string& name, bool fused) {
  const Workload& w = workload(name);
  auto backend = hardware::backend::make_backend(hardware::backend::BackendKind::kCpu, 1);
  core::Decision d;
  if (fused) d.fusion = agents::xla_fusion_priorities(w.compiled, nullptr, {});
  const auto options =
      hardware::backend::ExecutionOptions().with_warmup_steps(1).with_timed_steps(5);
  hardware::backend::ExecutionResult r;
  for (auto _ : state) {
    r = backend->execute(w.graph, d, options);
    state.SetIterationTime(r.step_time_s);
  }
  state.counters["ops"] = static_cast<double>(w.compiled.num_nodes());
  state.counters["fused_groups"] = r.fused_groups;
  state.counters["fused_ops"] = r.fused_ops;
  state.counters["fused_loop_ops"] = r.fused_loop_ops;
  state.counters["spread"] = r.spread();
}

void BM_SimulateFused(benchmark::State& state, bool calibrated_fusion) {
  const Workload& w = workload("rnnlm_2");
  auto spec = hardware::load_profile(
                  (hardware::default_profile_dir() / "measured" / "cpu2_epyc.yaml").string())
                  .spec();
  if (!calibrated_fusion) {
    for (auto& d : spec.devices) d.fused_loop_ratio = {};
  }
  const auto cluster = hardware::Cluster::build(spec);
  const auto cost = hardware::make_cost_model(cluster);
  simulator::Simulator sim(w.compiled, cluster, *cost);
  core::Decision d;
  d.fusion = agents::xla_fusion_priorities(w.compiled, nullptr, {});
  for (auto _ : state) benchmark::DoNotOptimize(sim.simulate(d).step_time_s);
}

}  // namespace

BENCHMARK_CAPTURE(BM_SimulateFused, rnnlm_2 / roofline_fusion, false)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_SimulateFused, rnnlm_2 / calibrated_fusion, true)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_BackendStep, rnnlm_2 / unfused, std::string("rnnlm_2"), false)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);
BENCHMARK_CAPTURE(BM_BackendStep, rnnlm_2 / tf_default_fusion, std::string("rnnlm_2"), true)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);
BENCHMARK_CAPTURE(BM_BackendStep, transformer_xl_2 / unfused, std::string("transformer_xl_2"),
                  false)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);
BENCHMARK_CAPTURE(BM_BackendStep, transformer_xl_2 / tf_default_fusion,
                  std::string("transformer_xl_2"), true)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);
BENCHMARK_CAPTURE(BM_BackendStep, wavenet_2 / unfused, std::string("wavenet_2"), false)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);
BENCHMARK_CAPTURE(BM_BackendStep, wavenet_2 / tf_default_fusion, std::string("wavenet_2"), true)
    ->UseManualTime()
    ->Unit(benchmark::kMillisecond)
    ->Iterations(3);
