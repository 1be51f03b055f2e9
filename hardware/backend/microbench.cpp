#include "hardware/backend/microbench.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "core/compiled_graph.h"

namespace gopt::hardware::backend {
namespace {

using I64 = std::int64_t;

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
                                                        {64, 256, 256},
                                                        {64, 512, 1024},
                                                        {128, 256, 512},
                                                        {256, 512, 512},
                                                        {8, 1024, 4096},
                                                        {512, 128, 64}}) {
    I64 ms = scaled(m, s), ks = scaled(k, s), ns = scaled(n, s);
    ops.push_back(op("MatMul", {ms, ns}, 2.0 * ms * ks * ns, {ms * ks * f, ks * ns * f}));
  }
  ops.push_back(op("BatchMatMulV2", {16, scaled(64, s), scaled(64, s)},
                   2.0 * 16 * scaled(64, s) * scaled(64, s) * 64,
                   {16 * scaled(64, s) * 64 * f, 16 * 64 * scaled(64, s) * f}));
  // Convolutions, NHWC, stride 1: [n, h, w, cin] * [k, k, cin, cout].
  for (auto [n, h, cin, cout, k] : std::vector<std::array<I64, 5>>{{1, 16, 16, 32, 3},
                                                                   {2, 16, 32, 32, 3},
                                                                   {2, 8, 64, 64, 3},
                                                                   {4, 8, 64, 128, 1},
                                                                   {1, 32, 8, 16, 3},
                                                                   {2, 16, 32, 64, 1}}) {
    I64 hs = scaled(h, std::sqrt(s));
    ops.push_back(op("Conv2D", {n, hs, hs, cout}, 2.0 * n * hs * hs * cout * k * k * cin,
                     {n * hs * hs * cin * f, k * k * cin * cout * f}));
  }
  ops.push_back(op("MaxPool", {2, 16, 16, 32}, 9.0 * 2 * 16 * 16 * 32, {2 * 18 * 18 * 32 * f}));
  ops.push_back(op("AvgPool", {4, 8, 8, 64}, 9.0 * 4 * 8 * 8 * 64, {4 * 10 * 10 * 64 * f}));
  ops.push_back(op("MaxPool", {1, 8, 8, 16}, 9.0 * 8 * 8 * 16, {10 * 10 * 16 * f}));
  // Elementwise, 1 and 2 inputs, over a range of sizes.
  for (I64 e : {1024L, 8192L, 65536L, 262144L, 1048576L}) {
    I64 es = scaled(e, s);
    ops.push_back(op("AddV2", {es}, kPointwise * es, {es * f, es * f}));
    ops.push_back(op("Mul", {es}, kPointwise * es, {es * f, es * f}));
    ops.push_back(op("Sigmoid", {es}, kTranscendental * es, {es * f}));
    ops.push_back(op("Tanh", {es}, kTranscendental * es, {es * f}));
    ops.push_back(op("Relu", {es}, kPointwise * es, {es * f}));
    ops.push_back(op("TanhGrad", {es}, kTranscendentalGrad * es, {es * f, es * f}));
  }
  // Reductions.
  for (auto [rows, cols] :
       std::vector<std::array<I64, 2>>{{64, 256}, {256, 1024}, {1024, 512}, {16, 8192}}) {
    I64 r = scaled(rows, s), c = cols;
    ops.push_back(op("Sum", {r}, static_cast<double>(r * c), {r * c * f}));
    ops.push_back(op("BiasAddGrad", {c}, static_cast<double>(r * c), {r * c * f}));
  }
  // Normalisations over [rows, channels].
  for (auto [rows, c] :
       std::vector<std::array<I64, 2>>{{64, 128}, {512, 256}, {2048, 64}, {256, 1024}}) {
    I64 r = scaled(rows, s);
    ops.push_back(op("LayerNorm", {r, c}, kNorm * r * c, {r * c * f, c * f, c * f}));
    ops.push_back(op("FusedBatchNormV3", {r, c}, kNorm * r * c, {r * c * f, c * f, c * f}));
    ops.push_back(op("LayerNormGrad", {r, c}, kNorm * r * c, {r * c * f, r * c * f}));
    ops.push_back(op("FusedBatchNormGradV3", {r, c}, kNorm * r * c, {r * c * f, r * c * f}));
  }
  // Softmax and cross-entropy over [rows, classes].
  for (auto [rows, c] :
       std::vector<std::array<I64, 2>>{{16, 1000}, {64, 512}, {128, 4096}, {256, 64}}) {
    I64 r = scaled(rows, s);
    ops.push_back(op("Softmax", {r, c}, kSoftmax * r * c, {r * c * f}));
    ops.push_back(
        op("SparseSoftmaxCrossEntropyWithLogits", {r, c}, kSoftmax * r * c, {r * c * f, r * 4}));
  }
  // Embedding gathers and their gradients: [rows, width] out of a [vocab, width] table.
  for (auto [rows, width, vocab] :
       std::vector<std::array<I64, 3>>{{64, 128, 1000}, {512, 256, 4000}, {256, 64, 20000}}) {
    I64 r = scaled(rows, s);
    ops.push_back(op("GatherV2", {r, width}, 0, {r * width * f, r * 4}));
    ops.push_back(op("UnsortedSegmentSum", {vocab, width}, static_cast<double>(r * width),
                     {r * width * f, r * 4}));
  }
  // Data movement.
  for (I64 e : {4096L, 65536L, 524288L}) {
    I64 es = scaled(e, s);
    ops.push_back(op("ConcatV2", {2 * es}, 0, {es * f, es * f}));
    ops.push_back(op("Split", {es}, 0, {es * f}));
    ops.push_back(op("Slice", {es / 2 + 1}, 0, {es * f}));
    ops.push_back(op("Transpose", {64, std::max<I64>(1, es / 64)}, 0, {es * f}));
  }
  // Optimizer updates of a parameter of `e` elements.
  for (I64 e : {1024L, 65536L, 262144L, 1048576L}) {
    I64 es = scaled(e, s);
    ops.push_back(op("ApplyAdam", {es}, kAdam * es, {es * f, es * f, es * f, es * f}));
    ops.push_back(op("ApplyGradientDescent", {es}, kSgd * es, {es * f, es * f}));
  }
  return ops;
}

core::Graph chain_graph(const MicrobenchOp& spec, int length) {
  core::GraphBuilder b("calibration/" + spec.op_type);
  core::NodeId prev = -1;
  for (int i = 0; i < length; ++i) {
    std::string name = "op" + std::to_string(i);
    auto node = b.add(name, spec.op_type).output(spec.output).flops(spec.flops);
    core::NodeId v = node.id();
    for (std::size_t j = 0; j < spec.inputs.size(); ++j) {
      core::NodeId in = b.add(name + "/in" + std::to_string(j), "Placeholder")
                            .output({std::max<Bytes>(1, spec.inputs[j] / 4)});
      b.connect(in, v, spec.inputs[j]);
    }
    if (prev >= 0) b.control(prev, v);
    prev = v;
  }
  return std::move(b).build();
}

CalibrationMeasurements measure_for_calibration(Backend& backend,
                                                const MicrobenchOptions& options) {
  CalibrationMeasurements m;
  auto exec = ExecutionOptions().warmup(options.warmup_steps).timed(options.timed_steps);
  auto ops = calibration_ops(options.size_scale);
  for (std::size_t i = 0; i < ops.size(); ++i) {
    const auto& spec = ops[i];
    if (options.progress) {
      options.progress("op " + std::to_string(i + 1) + "/" + std::to_string(ops.size()) + ": " +
                       spec.op_type);
    }
    core::Graph g = chain_graph(spec, options.chain_length);
    core::Decision single;  // everything on device 0
    ExecutionResult r = backend.execute(g, single, exec);
    auto op0 = *g.find("op0");
    const auto& a = g.node(op0);
    OpSample s;
    s.kind = a.kind;
    s.flops = a.flops;
    s.bytes = a.bytes_read + a.bytes_written;
    s.time_s = r.step_time_s / options.chain_length;
    s.label = spec.op_type;
    for (auto d : spec.output) s.label += (s.label.back() == ']' ? "x" : " [") + std::to_string(d);
    s.label += "]";
    m.ops.push_back(s);
  }
  if (backend.num_devices() < 2) return m;
  // Copies device 0 -> device 1: a producer and a consumer of a tensor of `bytes`; the copy
  // time is from the producer's end to the copy landing (handoff included).
  for (Bytes bytes : {Bytes{4} << 10, Bytes{64} << 10, Bytes{256} << 10, Bytes{1} << 20,
                      Bytes{4} << 20, Bytes{16} << 20}) {
    if (options.progress)
      options.progress("copy " + core::format_bytes(static_cast<double>(bytes)));
    core::GraphBuilder b("calibration/copy");
    core::NodeId p =
        b.add("producer", "Relu").output({bytes / 4}).flops(static_cast<double>(bytes / 4));
    core::NodeId c = b.add("consumer", "NoOp").kind(core::OpKind::kControl);
    b.connect(p, c, bytes);
    core::Graph g = std::move(b).build();
    core::Decision d;
    d.placement = std::vector<DeviceId>{0, 1};
    for (int rep = 0; rep < 3; ++rep) {
      ExecutionResult r = backend.execute(g, d,
                                          ExecutionOptions()
                                              .warmup(options.warmup_steps)
                                              .timed(options.timed_steps)
                                              .timeline(true));
      if (r.copies.empty()) continue;
      double t = r.copies.front().end_s - r.op_end_s[static_cast<std::size_t>(p)];
      if (t > 0) m.copies.push_back(CopySample{bytes, t});
    }
  }
  return m;
}

}  // namespace gopt::hardware::backend
