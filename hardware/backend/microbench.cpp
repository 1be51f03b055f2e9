#include "hardware/backend/microbench.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <string>

#include <unistd.h>

#include "core/compiled_graph.h"
#include "core/errors.h"
#include "hardware/backend/fused_loop.h"

namespace gopt::hardware::backend {
namespace {

using I64 = std::int64_t;

// The size of one core's last private cache level (L2), from the C library; 2 MiB (this
// development VM's) when it does not say.
Bytes per_core_cache_bytes() {
  long l2 = ::sysconf(_SC_LEVEL2_CACHE_SIZE);
  return l2 > 0 ? static_cast<Bytes>(l2) : (Bytes{2} << 20);
}

I64 scaled(I64 v, double s) { return std::max<I64>(1, static_cast<I64>(std::llround(v * s))); }

// FLOPs per element as the workload generators charge them (docs/workloads.md, "Cost
// conventions"); kept in step with datasets/flop_conventions.h by hand (the backend may not
// depend on datasets).
constexpr double kPointwise = 1, kTranscendental = 4, kTranscendentalGrad = 3, kSoftmax = 5,
                 kNorm = 8, kAdam = 10, kSgd = 2;

MicrobenchOp op(std::string type, core::Shape out, double flops, std::vector<Bytes> inputs) {
  return MicrobenchOp{std::move(type), std::move(out), flops, std::move(inputs)};
}

}  // namespace

std::vector<MicrobenchOp> calibration_ops(double s) {
  std::vector<MicrobenchOp> ops;
  const I64 f = 4;  // float32 bytes
  // Matrix products [m, k] x [k, n].
  for (auto [m, k, n] : std::vector<std::array<I64, 3>>{{16, 64, 64},
                                                        {32, 128, 128},
                                                        {16, 256, 1024},
                                                        {64, 256, 256},
                                                        {128, 256, 512},
                                                        {64, 512, 1024},
                                                        {256, 512, 512},
                                                        {512, 1024, 512},
                                                        {8, 1024, 4096},
                                                        // Skinny products (a batch of
                                                        // rows times a weight matrix, as
                                                        // in recurrent cells) on a grid.
                                                        {8, 256, 256},
                                                        {8, 512, 1024},
                                                        {32, 256, 256},
                                                        {32, 512, 1024},
                                                        {32, 1024, 4096},
                                                        {128, 512, 1024},
                                                        {128, 1024, 4096}}) {
    I64 ms = scaled(m, s), ks = scaled(k, s), ns = scaled(n, s);
    ops.push_back(op("MatMul", {ms, ns}, 2.0 * ms * ks * ns, {ms * ks * f, ks * ns * f}));
  }
  // Training graphs' other two products of a layer, on a grid over the batch dimension
  // (8 .. 64 rows; BLAS kernels change blocking between them, so rates are not monotone):
  // the input gradient, batch rows again ([b, n] x [n, k]), and the weight gradient, whose
  // inner dimension is the batch ([k, b] x [b, n]), both for 256x256, 512x1024 and
  // 1024x4096 weights.
  for (I64 rows : {I64{8}, I64{16}, I64{32}, I64{64}}) {
    for (auto [k, n] : std::vector<std::array<I64, 2>>{{256, 256}, {512, 1024}, {1024, 4096}}) {
      I64 bs = scaled(rows, s), ks = scaled(k, s), ns = scaled(n, s);
      if (rows == 16 || rows == 64) {
        ops.push_back(op("MatMul", {bs, ks}, 2.0 * bs * ns * ks, {bs * ns * f, ns * ks * f}));
      }
      ops.push_back(op("MatMul", {ks, ns}, 2.0 * ks * bs * ns, {ks * bs * f, bs * ns * f}));
    }
  }
  for (auto [b, m, k] : std::vector<std::array<I64, 3>>{{8, 32, 32}, {16, 64, 32}, {16, 128, 64}}) {
    I64 ms = scaled(m, s);
    ops.push_back(
        op("BatchMatMulV2", {b, ms, ms}, 2.0 * b * ms * ms * k, {b * ms * k * f, b * k * ms * f}));
  }
  // Convolutions and their gradients, NHWC, stride 1: [n, h, w, cin] * [k, k, cin, cout].
  for (auto [n, h, cin, cout, k] : std::vector<std::array<I64, 5>>{{1, 8, 16, 16, 3},
                                                                   {1, 16, 16, 32, 3},
                                                                   {2, 16, 32, 32, 3},
                                                                   {2, 8, 64, 64, 3},
                                                                   {4, 8, 64, 128, 1},
                                                                   {1, 32, 32, 32, 3},
                                                                   {1, 32, 64, 64, 3},
                                                                   // Image-sized layers: a
                                                                   // grid over size and width.
                                                                   {1, 48, 32, 64, 3},
                                                                   {1, 48, 64, 64, 1},
                                                                   {1, 24, 64, 96, 3},
                                                                   {1, 24, 96, 96, 1},
                                                                   {1, 12, 128, 192, 3},
                                                                   {1, 12, 192, 192, 1}}) {
    I64 hs = scaled(h, std::sqrt(s));
    double flops = 2.0 * n * hs * hs * cout * k * k * cin;
    Bytes x = n * hs * hs * cin * f, w = k * k * cin * cout * f, y = n * hs * hs * cout * f;
    ops.push_back(op("Conv2D", {n, hs, hs, cout}, flops, {x, w}));
    ops.push_back(op("Conv2DBackpropInput", {n, hs, hs, cin}, flops, {w, y}));
    ops.push_back(op("Conv2DBackpropFilter", {k, k, cin, cout}, flops, {x, y}));
  }
  for (auto [n, h, c, k] :
       std::vector<std::array<I64, 4>>{{1, 16, 32, 3}, {1, 32, 16, 5}, {2, 16, 64, 3}}) {
    double flops = 2.0 * n * h * h * c * k * k;
    Bytes x = n * h * h * c * f, w = k * k * c * f;
    ops.push_back(op("DepthwiseConv2dNative", {n, h, h, c}, flops, {x, w}));
    ops.push_back(op("DepthwiseConv2dNativeBackpropInput", {n, h, h, c}, flops, {w, x}));
    ops.push_back(op("DepthwiseConv2dNativeBackpropFilter", {k, k, c, 1}, flops, {x, x}));
  }
  // Pooling, 3x3 windows.
  for (auto [n, h, c] :
       std::vector<std::array<I64, 3>>{{1, 8, 16}, {2, 16, 32}, {4, 8, 64}, {1, 32, 64}}) {
    double flops = 9.0 * n * h * h * c;
    Bytes x = n * h * h * c * f;
    for (const char* t : {"MaxPool", "AvgPool"}) ops.push_back(op(t, {n, h, h, c}, flops, {x}));
    ops.push_back(op("MaxPoolGrad", {n, h, h, c}, flops, {x, x, x}));
    ops.push_back(op("AvgPoolGrad", {n, h, h, c}, flops, {x}));
  }
  // Elementwise ops over a range of sizes.
  for (I64 e : {1024L, 8192L, 65536L, 262144L, 1048576L}) {
    I64 es = scaled(e, s);
    for (const char* t : {"AddV2", "Mul", "Sub", "RealDiv", "GreaterEqual"}) {
      ops.push_back(op(t, {es}, kPointwise * es, {es * f, es * f}));
    }
    ops.push_back(op("BiasAdd", {es / 64 + 1, 64}, kPointwise * es, {es * f, 64 * f}));
    ops.push_back(op("AddN", {es}, 2 * kPointwise * es, {es * f, es * f, es * f}));
    for (const char* t : {"Relu", "Cast"}) ops.push_back(op(t, {es}, kPointwise * es, {es * f}));
    for (const char* t : {"Sigmoid", "Tanh"})
      ops.push_back(op(t, {es}, kTranscendental * es, {es * f}));
    for (const char* t : {"SigmoidGrad", "TanhGrad"}) {
      ops.push_back(op(t, {es}, kTranscendentalGrad * es, {es * f, es * f}));
    }
    ops.push_back(op("ReluGrad", {es}, kPointwise * es, {es * f, es * f}));
  }
  // Reductions: [rows, cols] -> [rows] (Sum, Mean) or [cols] (BiasAddGrad).
  for (auto [rows, cols] :
       std::vector<std::array<I64, 2>>{{64, 16}, {64, 256}, {256, 1024}, {1024, 512}, {16, 8192}}) {
    I64 r = scaled(rows, s), c = cols;
    ops.push_back(op("Sum", {r}, static_cast<double>(r * c), {r * c * f}));
    ops.push_back(op("Mean", {r}, static_cast<double>(r * c), {r * c * f}));
    ops.push_back(op("BiasAddGrad", {c}, static_cast<double>(r * c), {r * c * f}));
  }
  // Normalisations over [rows, channels].
  for (auto [rows, c] :
       std::vector<std::array<I64, 2>>{{16, 64}, {64, 128}, {512, 256}, {2048, 64}, {256, 1024}}) {
    I64 r = scaled(rows, s);
    ops.push_back(op("LayerNorm", {r, c}, kNorm * r * c, {r * c * f, c * f, c * f}));
    ops.push_back(op("FusedBatchNormV3", {r, c}, kNorm * r * c, {r * c * f, c * f, c * f}));
    ops.push_back(op("LayerNormGrad", {r, c}, kNorm * r * c, {r * c * f, r * c * f}));
    ops.push_back(op("FusedBatchNormGradV3", {r, c}, kNorm * r * c, {r * c * f, r * c * f}));
  }
  // Softmax and cross-entropy over [rows, classes].
  for (auto [rows, c] :
       std::vector<std::array<I64, 2>>{{16, 1000}, {64, 512}, {128, 2000}, {256, 64}}) {
    I64 r = scaled(rows, s);
    ops.push_back(op("Softmax", {r, c}, kSoftmax * r * c, {r * c * f}));
    ops.push_back(op("SoftmaxGrad", {r, c}, kSoftmax * r * c, {r * c * f, r * c * f}));
    ops.push_back(
        op("SparseSoftmaxCrossEntropyWithLogits", {r, c}, kSoftmax * r * c, {r * c * f, r * 4}));
  }
  // Embedding gathers and their gradients: [rows, width] out of a [vocab, width] table.
  for (auto [rows, width, vocab] :
       std::vector<std::array<I64, 3>>{{64, 128, 1000}, {128, 256, 2000}, {512, 256, 4000}}) {
    I64 r = scaled(rows, s);
    ops.push_back(op("GatherV2", {r, width}, 0, {r * width * f, r * 4}));
    ops.push_back(op("UnsortedSegmentSum", {vocab, width}, static_cast<double>(r * width),
                     {r * width * f, r * 4}));
  }
  // Data movement.
  for (I64 e : {1024L, 8192L, 65536L, 524288L}) {
    I64 es = scaled(e, s);
    ops.push_back(op("ConcatV2", {2 * es}, 0, {es * f, es * f}));
    ops.push_back(op("Pack", {2 * es}, 0, {es * f, es * f}));
    ops.push_back(op("Split", {es}, 0, {es * f}));
    ops.push_back(op("Unpack", {es}, 0, {es * f}));
    ops.push_back(op("Slice", {es / 2 + 1}, 0, {es * f}));
    ops.push_back(op("Pad", {es + 64}, 0, {es * f}));
    ops.push_back(op("Tile", {2 * es}, 0, {es * f}));
    ops.push_back(op("Transpose", {64, std::max<I64>(1, es / 64)}, 0, {es * f}));
  }
  // Optimizer updates of a parameter of `e` elements.
  for (I64 e : {1024L, 16384L, 131072L, 524288L, 2097152L}) {
    I64 es = scaled(e, s);
    ops.push_back(op("ApplyAdam", {es}, kAdam * es, {es * f, es * f, es * f, es * f}));
    ops.push_back(op("ApplyGradientDescent", {es}, kSgd * es, {es * f, es * f}));
  }
  return ops;
}

core::Graph chain_graph(const std::vector<const MicrobenchOp*>& specs, const std::string& name) {
  core::GraphBuilder b("calibration/" + name);
  core::NodeId prev = -1;
  for (std::size_t i = 0; i < specs.size(); ++i) {
    const MicrobenchOp& spec = *specs[i];
    std::string op_name = "op" + std::to_string(i);
    auto node = b.add(op_name, spec.op_type).output(spec.output).flops(spec.flops);
    core::NodeId v = node.id();
    for (std::size_t j = 0; j < spec.inputs.size(); ++j) {
      core::NodeId in = b.add(op_name + "/in" + std::to_string(j), "Placeholder")
                            .output({std::max<Bytes>(1, spec.inputs[j] / 4)});
      b.connect(in, v, spec.inputs[j]);
    }
    if (prev >= 0) b.control(prev, v);
    prev = v;
  }
  return std::move(b).build();
}

core::Graph chain_graph(const MicrobenchOp& spec, int length) {
  return chain_graph(std::vector<const MicrobenchOp*>(static_cast<std::size_t>(length), &spec),
                     spec.op_type);
}

core::Graph fused_loop_graph(const std::vector<std::string>& mix, Bytes elements, int groups) {
  core::GraphBuilder b("calibration/fused_loop");
  const Bytes bytes = elements * 4;
  core::NodeId last = -1;
  for (int g = 0; g < groups; ++g) {
    core::NodeId prev = -1;
    for (std::size_t j = 0; j < mix.size(); ++j) {
      const std::string name = "g" + std::to_string(g) + "/op" + std::to_string(j);
      LoopOp loop_op{};
      const bool known = loop_op_of(mix[j], loop_op);
      const int arity = known ? loop_op_arity(loop_op) : 2;
      core::NodeId v =
          b.add(name, mix[j]).output({elements}).flops(static_cast<double>(elements)).id();
      for (int k = prev >= 0 ? 1 : 0; k < arity; ++k) {
        core::NodeId in =
            b.add(name + "/in" + std::to_string(k), "Placeholder").output({elements}).id();
        b.connect(in, v, bytes);
      }
      if (prev >= 0) {
        b.connect(prev, v, bytes);
      } else if (last >= 0) {
        b.control(last, v);
      }
      prev = v;
    }
    last = prev;
  }
  return std::move(b).build();
}

std::vector<FusionSample> measure_fused_loops(Backend& backend, const MicrobenchOptions& options) {
  std::vector<FusionSample> samples;
  if (backend.kind() != BackendKind::kCpu) return samples;
  const std::vector<std::pair<std::string, std::vector<std::string>>> mixes = {
      {"lstm_cell", {"Mul", "AddV2", "Sigmoid", "Tanh"}},
      {"cheap_chain", {"AddV2", "Mul", "Relu", "Sub", "AddV2", "Mul", "Relu", "Sub"}},
  };
  auto exec = ExecutionOptions()
                  .with_warmup_steps(options.warmup_steps)
                  .with_timed_steps(options.timed_steps);
  struct Case {
    FusionSample sample;
    core::Graph graph;
    int groups = 0;
    std::vector<double> fused, unfused;
  };
  std::vector<Case> cases;
  for (const auto& [name, mix] : mixes) {
    for (I64 e : {2048L, 16384L, 131072L, 1048576L}) {
      const I64 elements = scaled(e, options.size_scale);
      core::Graph probe = fused_loop_graph(mix, elements, 1);
      const int inputs = static_cast<int>(probe.num_nodes()) - static_cast<int>(mix.size());
      const Bytes group_bytes =
          static_cast<Bytes>(mix.size() + static_cast<std::size_t>(inputs)) * elements * 4;
      const int groups = static_cast<int>(
          std::clamp<Bytes>(options.working_set_bytes / std::max<Bytes>(group_bytes, 1), 4, 256));
      Case c{FusionSample{name, elements * 4, static_cast<int>(mix.size()), inputs, 0, 0},
             fused_loop_graph(mix, elements, groups),
             groups,
             {},
             {}};
      cases.push_back(std::move(c));
    }
  }
  for (int round = 0; round < std::max(1, options.rounds); ++round) {
    for (std::size_t i = 0; i < cases.size(); ++i) {
      auto& c = cases[i];
      if (options.progress) {
        options.progress("round " + std::to_string(round + 1) + ": fused loops " +
                         std::to_string(i + 1) + "/" + std::to_string(cases.size()) + ": " +
                         c.sample.mix + " of " +
                         core::format_bytes(static_cast<double>(c.sample.bytes_written)));
      }
      core::Decision fused;
      fused.fusion = std::vector<std::int32_t>(static_cast<std::size_t>(c.graph.num_nodes()), 1);
      ExecutionResult f = backend.execute(c.graph, fused, exec);
      GOPT_ASSERT(f.fused_groups == c.groups, "a fused-loop sample's groups did not fuse whole");
      ExecutionResult u = backend.execute(c.graph, core::Decision{}, exec);
      c.fused.push_back(f.step_time_s / c.groups);
      c.unfused.push_back(u.step_time_s / c.groups);
    }
  }
  for (auto& c : cases) {
    std::sort(c.fused.begin(), c.fused.end());
    std::sort(c.unfused.begin(), c.unfused.end());
    c.sample.fused_s = c.fused[c.fused.size() / 2];
    c.sample.unfused_s = c.unfused[c.unfused.size() / 2];
    samples.push_back(c.sample);
  }
  return samples;
}

CalibrationMeasurements measure_for_calibration(Backend& backend,
                                                const MicrobenchOptions& options) {
  CalibrationMeasurements m;
  auto exec = ExecutionOptions()
                  .with_warmup_steps(options.warmup_steps)
                  .with_timed_steps(options.timed_steps);
  auto ops = calibration_ops(options.size_scale);
  // The executor alone: chains of NoOps (no kernel, control edges) of several lengths; the
  // slope of step time against length is what the executor adds to every op.
  for (int round = 0; round < std::max(1, options.rounds); ++round) {
    for (int length : {128, 512, 2048}) {
      if (options.progress) {
        options.progress("round " + std::to_string(round + 1) + ": executor, " +
                         std::to_string(length) + " NoOps");
      }
      core::Graph g = chain_graph(op("NoOp", {1}, 0, {}), length);
      ExecutionResult r = backend.execute(g, core::Decision{}, exec);
      m.executor.push_back(ExecutorSample{length, r.step_time_s, 0});
    }
  }
  // Interleaved rounds: round r measures every op once, so a burst of load from other
  // processes spreads over many ops instead of spoiling one; the median is kept.
  std::vector<std::vector<double>> times(ops.size());
  for (int round = 0; round < std::max(1, options.rounds); ++round) {
    for (std::size_t i = 0; i < ops.size(); ++i) {
      const auto& spec = ops[i];
      if (options.progress) {
        options.progress("round " + std::to_string(round + 1) + ": op " + std::to_string(i + 1) +
                         "/" + std::to_string(ops.size()) + ": " + spec.op_type);
      }
      // Long enough that the chain's operands exceed the per-core cache, as a graph step's do:
      // every op then reads cold inputs, as it does inside a real graph.
      Bytes op_bytes = std::accumulate(spec.inputs.begin(), spec.inputs.end(), Bytes{0});
      int length = static_cast<int>(std::clamp<Bytes>(
          options.working_set_bytes / std::max<Bytes>(op_bytes, 1), options.chain_length, 2048));
      core::Graph g = chain_graph(spec, length);
      core::Decision single;  // everything on device 0
      ExecutionResult r = backend.execute(g, single, exec);
      // What the executor added to the chain's kernels: the step less their times (a median
      // step and per-op medians, so noise can make the difference negative: dropped).
      double kernels = std::accumulate(r.op_time_s.begin(), r.op_time_s.end(), 0.0);
      if (r.step_time_s > kernels) {
        m.executor.push_back(
            ExecutorSample{static_cast<int>(g.num_nodes()), r.step_time_s, kernels});
      }
      auto op0 = *g.find("op0");
      const auto& a = g.node(op0);
      OpSample s;
      s.kind = a.kind;
      s.flops = a.flops;
      s.bytes = a.bytes_read + a.bytes_written;
      times[i].push_back(r.step_time_s / length);
      if (round + 1 < std::max(1, options.rounds)) continue;
      std::sort(times[i].begin(), times[i].end());
      s.time_s = times[i][times[i].size() / 2];
      s.op_type = spec.op_type;
      s.extra_executor_ops = static_cast<int>(spec.inputs.size());
      s.label = spec.op_type + " [";
      for (std::size_t j = 0; j < spec.output.size(); ++j) {
        s.label += (j ? "x" : "") + std::to_string(spec.output[j]);
      }
      s.label += "]";
      m.ops.push_back(s);
    }
  }
  m.fusion = measure_fused_loops(backend, options);
  if (backend.num_devices() < 2) return m;
  {
    // Parallelism: two independent chains of 64 ops, both on device 0 or one per device.
    MicrobenchOp tanh = op("Tanh", {65536}, kTranscendental * 65536, {65536 * 4});
    core::GraphBuilder b("calibration/parallel");
    for (int chain = 0; chain < 2; ++chain) {
      core::NodeId prev = -1;
      for (int i = 0; i < 64; ++i) {
        std::string name = "c" + std::to_string(chain) + "/op" + std::to_string(i);
        core::NodeId v = b.add(name, tanh.op_type).output(tanh.output).flops(tanh.flops);
        if (prev >= 0) b.control(prev, v);
        prev = v;
      }
    }
    core::Graph g = std::move(b).build();
    core::Decision one, two;
    two.placement = std::vector<DeviceId>(128, 0);
    for (std::size_t i = 64; i < 128; ++i) (*two.placement)[i] = 1;
    std::vector<double> ratios;
    for (int round = 0; round < std::max(1, options.rounds); ++round) {
      double t1 = backend.execute(g, one, exec).step_time_s;
      double t2 = backend.execute(g, two, exec).step_time_s;
      if (t2 > 0) ratios.push_back(t1 / t2);
    }
    std::sort(ratios.begin(), ratios.end());
    m.parallel_speedup = ratios.empty() ? 0 : ratios[ratios.size() / 2];
  }
  // Copies: a chain of ops alternating between devices 0 and 1, each sending the next one
  // `bytes`. The receiving worker performs each copy (the simulator's model of a device
  // without a copy engine); its recorded duration, from the copy's start on that worker to
  // its landing, is what the copy holds the receiver for. The median over the chain's
  // copies in the median step is one sample. Each op writes as much as the per-core (L2)
  // cache holds, so that copies meet the caches other ops leave behind in a graph step (as
  // the op chains above do for kernels): with warm caches copies ran 2-5x faster than in
  // graphs. Writing 8 MiB instead (4x this machine's L2) also cooled the receiving worker
  // itself (it slept through the longer ops) and made small copies 2-3x slower than in
  // graphs (docs/hardware-backend.md).
  const int hops = 32;
  const auto timed = ExecutionOptions(exec).with_record_timeline(true);
  const Bytes flush = per_core_cache_bytes();
  for (Bytes bytes : {Bytes{4} << 10, Bytes{16} << 10, Bytes{64} << 10, Bytes{256} << 10,
                      Bytes{1} << 20, Bytes{4} << 20}) {
    if (options.progress) {
      options.progress("copies of " + core::format_bytes(static_cast<double>(bytes)));
    }
    core::GraphBuilder b("calibration/copy");
    core::NodeId prev = -1;
    for (int i = 0; i <= hops; ++i) {
      const Bytes elements = std::max<Bytes>(bytes, flush) / 4;
      core::NodeId v = b.add("op" + std::to_string(i), "Relu")
                           .output({elements})
                           .flops(static_cast<double>(elements));
      if (prev >= 0) b.connect(prev, v, bytes);
      prev = v;
    }
    core::Graph g = std::move(b).build();
    core::Decision alternating;
    alternating.placement = std::vector<DeviceId>(static_cast<std::size_t>(hops + 1), 0);
    for (int i = 0; i <= hops; ++i) (*alternating.placement)[static_cast<std::size_t>(i)] = i % 2;
    for (int round = 0; round < std::max(1, options.rounds); ++round) {
      ExecutionResult remote = backend.execute(g, alternating, timed);
      std::vector<double> durations;
      for (const CopyRecord& c : remote.copies) durations.push_back(c.end_s - c.start_s);
      if (durations.empty()) continue;
      std::nth_element(durations.begin(), durations.begin() + durations.size() / 2,
                       durations.end());
      double t = durations[durations.size() / 2];
      if (t > 0) m.copies.push_back(CopySample{bytes, t});
    }
  }
  return m;
}

}  // namespace gopt::hardware::backend
