// The LibTorch execution backend: every op kind runs a kernel with the op's output shape,
// two-device execution honours dependencies (a consumer never starts before its producer's
// copy lands), priorities order ready ops, and CUDA skips cleanly without a GPU. Tiny graphs:
// these tests take well under a second and never assert wall-clock times.
#include "hardware/backend/backend.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "hardware/backend/fused_loop.h"
#include "hardware/backend/kernels.h"
#include "hardware/backend/microbench.h"
#include "simulator/fusion.h"
#include "tests/support/expect_error.h"

namespace gopt::hardware::backend {
namespace {

using core::OpKind;
using core::Shape;

struct KernelCase {
  std::string op_type;
  Shape output;
  double flops;
  std::vector<Bytes> inputs;
  bool proxy;
};

TEST(BackendKernelTest, EveryOpKindRunsWithTheOpsOutputShape) {
  const std::vector<KernelCase> cases = {
      {"Placeholder", {4, 8}, 0, {}, false},
      {"VariableV2", {16, 8}, 0, {}, false},
      {"MatMul", {8, 16}, 2.0 * 8 * 32 * 16, {8 * 32 * 4, 32 * 16 * 4}, false},
      {"BatchMatMulV2", {2, 8, 16}, 2.0 * 2 * 8 * 4 * 16, {2 * 8 * 4 * 4, 2 * 4 * 16 * 4}, false},
      {"Conv2D", {1, 6, 6, 8}, 2.0 * 36 * 8 * 9 * 4, {36 * 4 * 4, 9 * 4 * 8 * 4}, false},
      {"Conv2DBackpropFilter", {3, 3, 4, 8}, 2.0 * 36 * 8 * 9 * 4, {36 * 4 * 4, 36 * 8 * 4}, true},
      {"DepthwiseConv2dNative", {1, 6, 6, 8}, 2.0 * 36 * 8 * 9, {36 * 8 * 4, 9 * 8 * 4}, false},
      {"MaxPool", {1, 4, 4, 8}, 9.0 * 16 * 8, {36 * 8 * 4}, false},
      {"AvgPoolGrad", {1, 4, 4, 8}, 9.0 * 16 * 8, {16 * 8 * 4}, true},
      {"Sigmoid", {4, 8}, 128, {128}, false},
      {"TanhGrad", {4, 8}, 96, {128, 128}, false},
      {"BiasAdd", {4, 8}, 32, {128, 32}, false},
      {"AddN", {4, 8}, 64, {128, 128, 128}, false},
      {"Erfinv", {4, 8}, 32, {128}, true},
      {"Sum", {4}, 32, {128}, false},
      {"BiasAddGrad", {8}, 32, {128}, false},
      {"FusedBatchNormV3", {2, 3, 3, 8}, 8.0 * 144, {576, 32, 32}, false},
      {"FusedBatchNormGradV3", {2, 3, 3, 8}, 8.0 * 144, {576, 576}, false},
      {"LayerNorm", {4, 16}, 8.0 * 64, {256, 64, 64}, false},
      {"LayerNormGrad", {4, 16}, 8.0 * 64, {256, 256}, false},
      {"Softmax", {4, 10}, 200, {160}, false},
      {"GatherV2", {6, 8}, 0, {100 * 8 * 4, 24}, false},
      {"UnsortedSegmentSum", {10, 8}, 48, {6 * 8 * 4, 24}, false},
      {"ConcatV2", {4, 8}, 0, {64, 64}, false},
      {"Split", {4, 8}, 0, {128}, false},
      {"Transpose", {4, 8}, 0, {128}, false},
      {"Slice", {2, 8}, 0, {128}, false},
      {"Pad", {6, 8}, 0, {128}, false},
      {"Reshape", {8, 4}, 0, {128}, false},
      {"LSTM", {5, 2, 16}, 2.0 * 160 * 64, {640}, true},
      {"ApplyAdam", {4, 8}, 320, {128, 128, 128, 128}, false},
      {"ApplyGradientDescent", {4, 8}, 64, {128, 128}, false},
      {"SomethingNew", {4, 8}, 0, {128}, true},
  };
  std::array<bool, core::kNumOpKinds> seen{};
  for (const auto& c : cases) {
    SCOPED_TRACE(c.op_type);
    core::NodeAttrs attrs;
    attrs.name = "op";
    attrs.op_type = c.op_type;
    attrs.kind = core::classify_op_type(c.op_type);
    attrs.output_shapes = {c.output};
    attrs.flops = c.flops;
    seen[static_cast<std::size_t>(attrs.kind)] = true;
    OpView view{&attrs, c.inputs, true};
    Kernel k = make_kernel(view, torch::Device(torch::kCPU));
    EXPECT_EQ(k.proxy, c.proxy) << k.what;
    torch::Tensor out = k.run(k.operands);
    ASSERT_TRUE(out.defined()) << k.what;
    EXPECT_EQ(out.sizes().vec(), c.output) << k.what;
  }
  core::NodeAttrs noop;
  noop.op_type = "NoOp";
  noop.kind = OpKind::kControl;
  Kernel k = make_kernel(OpView{&noop, {}, true}, torch::Device(torch::kCPU));
  EXPECT_TRUE(k.no_work);
  seen[static_cast<std::size_t>(OpKind::kControl)] = true;
  // The cross-entropy op lists the loss [batch] and the gradient [batch, classes].
  core::NodeAttrs xent;
  xent.op_type = "SparseSoftmaxCrossEntropyWithLogits";
  xent.kind = OpKind::kSoftmax;
  xent.output_shapes = {{4}, {4, 10}};
  Kernel kx = make_kernel(OpView{&xent, {160, 16}, true}, torch::Device(torch::kCPU));
  EXPECT_EQ(kx.run(kx.operands).sizes().vec(), (Shape{4, 10}));
  for (int kind = 0; kind < core::kNumOpKinds; ++kind) {
    EXPECT_TRUE(seen[static_cast<std::size_t>(kind)])
        << "no kernel case for kind " << core::to_string(static_cast<OpKind>(kind));
  }
}

// A diamond with a fan-out over two devices: x -> {a, b}, a -> c, b -> c, c -> d, plus a
// control edge x -> d, data edges crossing devices both ways.
core::Graph diamond() {
  core::GraphBuilder b("diamond");
  auto x = b.add("x", "MatMul").output({32, 32}).flops(2.0 * 32 * 32 * 32);
  auto a = b.add("a", "Tanh").output({32, 32}).flops(4.0 * 1024);
  auto bb = b.add("b", "Relu").output({32, 32}).flops(1024);
  auto c = b.add("c", "AddV2").output({32, 32}).flops(1024);
  auto d = b.add("d", "MatMul").output({32, 32}).flops(2.0 * 32 * 32 * 32);
  b.connect(x, a).connect(x, bb).connect(a, c).connect(bb, c).connect(c, d).control(x, d);
  return std::move(b).build();
}

TEST(BackendTest, TwoDevicesHonourDependenciesAndCopies) {
  auto backend = make_backend(BackendKind::kCpu, 2);
  core::Graph g = diamond();
  auto cg = core::CompiledGraph::compile(g);
  core::Decision decision;
  decision.placement = std::vector<DeviceId>{0, 1, 0, 1, 0};  // x a b c d
  auto r = backend->execute(
      g, decision,
      ExecutionOptions().with_warmup_steps(1).with_timed_steps(3).with_record_timeline(true));
  ASSERT_EQ(r.op_start_s.size(), 5u);
  ASSERT_EQ(r.step_times_s.size(), 3u);
  // x -> a (0 -> 1), b -> c (0 -> 1), c -> d (1 -> 0): one copy each (x's two consumers on
  // device 1 would share one; here x feeds a only remotely).
  EXPECT_EQ(r.num_copies, 3);
  EXPECT_EQ(r.copies.size(), 3u);
  for (const auto& copy : r.copies) {
    auto p = static_cast<std::size_t>(copy.producer);
    EXPECT_GE(copy.start_s, r.op_end_s[p]) << "copy of " << cg.node_names()[p];
    EXPECT_GE(copy.end_s, copy.start_s);
    EXPECT_EQ(copy.bytes, 32 * 32 * 4);
  }
  // Every consumer starts after its local producers end and its remote inputs landed.
  for (core::NodeId v = 0; v < cg.num_nodes(); ++v) {
    for (auto s = cg.in_begin(v); s < cg.in_end(v); ++s) {
      core::NodeId u = cg.in_source(s);
      auto e = cg.in_edge(s);
      double ready = r.op_end_s[static_cast<std::size_t>(u)];
      if (decision.device_of(u) != decision.device_of(v) && !cg.edge_is_control(e)) {
        for (const auto& copy : r.copies) {
          if (copy.producer == u && copy.dst == decision.device_of(v)) ready = copy.end_s;
        }
        EXPECT_GT(ready, r.op_end_s[static_cast<std::size_t>(u)]);
      }
      EXPECT_GE(r.op_start_s[static_cast<std::size_t>(v)], ready)
          << cg.node_names()[static_cast<std::size_t>(u)] << " -> "
          << cg.node_names()[static_cast<std::size_t>(v)];
    }
  }
  EXPECT_GT(r.step_time_s, 0);
  EXPECT_EQ(r.num_proxy_ops, 0);
}

TEST(BackendTest, HigherPriorityRunsFirstAmongReadyOps) {
  auto backend = make_backend(BackendKind::kCpu, 1);
  core::GraphBuilder b("fan");
  auto root = b.add("root", "Relu").output({64}).flops(64);
  for (int i = 0; i < 4; ++i) {
    auto v = b.add("leaf" + std::to_string(i), "Relu").output({64}).flops(64);
    b.connect(root, v);
  }
  core::Graph g = std::move(b).build();
  core::Decision d;
  d.priority = std::vector<std::int32_t>{0, 1, 4, 2, 3};  // leaf1 first, then leaf3, leaf2, leaf0
  auto r = backend->execute(
      g, d, ExecutionOptions().with_warmup_steps(0).with_timed_steps(1).with_record_timeline(true));
  EXPECT_LE(r.op_end_s[2], r.op_start_s[4]);
  EXPECT_LE(r.op_end_s[4], r.op_start_s[3]);
  EXPECT_LE(r.op_end_s[3], r.op_start_s[1]);
}

// Fusion executed: each fused group of the decision is one task (its members share a start
// and an end), its elementwise members run in a fused loop, library calls run their own
// kernels inside it, and dependencies between groups, copies included, still hold.
TEST(BackendTest, FusedGroupsRunAsOneTaskEach) {
  auto backend = make_backend(BackendKind::kCpu, 2);
  core::Graph g = diamond();
  auto cg = core::CompiledGraph::compile(g);
  for (bool two_devices : {false, true}) {
    SCOPED_TRACE(two_devices ? "two devices" : "one device");
    core::Decision decision;
    decision.fusion = std::vector<std::int32_t>{1, 1, 1, 1, 1};
    if (two_devices) decision.placement = std::vector<DeviceId>{0, 0, 0, 0, 1};  // x a b c | d
    const auto groups = simulator::form_fusion_groups(cg, decision);
    // x (a product) with its elementwise consumers; d, the second product, apart.
    ASSERT_EQ(groups.num_groups(), 2);
    ASSERT_EQ(groups.group_size(0), 4);
    auto r = backend->execute(
        g, decision,
        ExecutionOptions().with_warmup_steps(1).with_timed_steps(3).with_record_timeline(true));
    EXPECT_EQ(r.fused_groups, 1);
    EXPECT_EQ(r.fused_ops, 4);
    EXPECT_EQ(r.fused_loop_ops, 3);  // a, b, c; x runs its product
    EXPECT_EQ(r.num_proxy_ops, 0);
    EXPECT_EQ(r.num_copies, two_devices ? 1 : 0);
    for (core::NodeId v : {1, 2, 3}) {  // a, b, c: the group's start and end, no time of their own
      EXPECT_EQ(r.op_start_s[static_cast<std::size_t>(v)], r.op_start_s[0]);
      EXPECT_EQ(r.op_end_s[static_cast<std::size_t>(v)], r.op_end_s[0]);
      EXPECT_EQ(r.op_time_s[static_cast<std::size_t>(v)], 0.0);
    }
    EXPECT_GT(r.op_time_s[0], 0.0);
    EXPECT_GT(r.op_time_s[4], 0.0);
    double ready = r.op_end_s[3];
    for (const auto& copy : r.copies) ready = std::max(ready, copy.end_s);
    EXPECT_GE(r.op_start_s[4], ready);
  }
}

// ExecutionOptions::reuse_kernels (measured rewards): decisions executed one after another
// with kernels kept between them run as fresh executions do (copies, fused groups, proxies,
// ops with work), also after a switch to another graph and back.
TEST(BackendTest, ReusedKernelsRunEveryDecisionAsFreshOnes) {
  auto backend = make_backend(BackendKind::kCpu, 2);
  const core::Graph g = diamond();
  const core::Graph other = diamond();
  std::vector<core::Decision> decisions(4);
  decisions[0].placement = std::vector<DeviceId>{0, 1, 0, 1, 0};
  decisions[1].placement = std::vector<DeviceId>{1, 1, 0, 0, 1};
  decisions[2].fusion = std::vector<std::int32_t>{1, 1, 1, 1, 1};
  decisions[3].placement = std::vector<DeviceId>{0, 1, 0, 1, 0};
  const auto fresh = ExecutionOptions().with_warmup_steps(0).with_timed_steps(1);
  const auto reuse = ExecutionOptions(fresh).with_reuse_kernels(true);
  for (const core::Graph* graph : {&g, &g, &other, &g}) {
    for (const auto& d : decisions) {
      const auto a = backend->execute(*graph, d, fresh);
      const auto b = backend->execute(*graph, d, reuse);
      EXPECT_EQ(b.num_copies, a.num_copies);
      EXPECT_EQ(b.bytes_copied, a.bytes_copied);
      EXPECT_EQ(b.fused_groups, a.fused_groups);
      EXPECT_EQ(b.fused_loop_ops, a.fused_loop_ops);
      EXPECT_EQ(b.num_proxy_ops, a.num_proxy_ops);
      EXPECT_GT(b.step_time_s, 0);
      ASSERT_EQ(b.op_time_s.size(), a.op_time_s.size());
      for (std::size_t v = 0; v < a.op_time_s.size(); ++v) {
        EXPECT_EQ(b.op_time_s[v] > 0, a.op_time_s[v] > 0) << "op " << v;
      }
    }
  }
}

// The arithmetic of the fused loops, element by element against hand-computed values.
TEST(FusedLoopTest, EveryLoopOpComputesItsFunction) {
  const float a[4] = {0.0F, 1.0F, 4.0F, 0.25F};
  const float b[4] = {2.0F, 1.0F, 0.5F, 3.0F};
  const float c[4] = {-1.0F, -2.0F, -3.0F, -4.0F};
  const float* abc[3] = {a, b, c};
  struct Case {
    const char* op_type;
    int inputs;
    float expected[4];
  };
  const std::vector<Case> cases = {
      {"AddV2", 2, {2, 2, 4.5F, 3.25F}},
      {"Sub", 2, {-2, 0, 3.5F, -2.75F}},
      {"Mul", 2, {0, 1, 2, 0.75F}},
      {"RealDiv", 2, {0, 1, 8, 0.25F / 3}},
      {"Maximum", 2, {2, 1, 4, 3}},
      {"Minimum", 2, {0, 1, 0.5F, 0.25F}},
      {"GreaterEqual", 2, {0, 1, 1, 0}},
      {"Pow", 2, {0, 1, 2, 0.015625F}},
      {"SquaredDifference", 2, {4, 0, 12.25F, 7.5625F}},
      {"SigmoidGrad", 2, {0, 0, -6, 0.5625F}},
      {"TanhGrad", 2, {2, 0, -7.5F, 2.8125F}},
      {"ReluGrad", 2, {0, 1, 4, 0.25F}},
      {"Sigmoid", 1, {0.5F, 0.7310586F, 0.9820138F, 0.5621765F}},
      {"Tanh", 1, {0, 0.7615942F, 0.9993293F, 0.2449187F}},
      {"Relu", 1, {0, 1, 4, 0.25F}},
      {"Exp", 1, {1, 2.7182817F, 54.59815F, 1.2840254F}},
      {"Sqrt", 1, {0, 1, 2, 0.5F}},
      {"Square", 1, {0, 1, 16, 0.0625F}},
      {"Neg", 1, {0, -1, -4, -0.25F}},
      {"Erf", 1, {0, 0.8427008F, 1.0F, 0.2763264F}},
      {"AddN", 3, {1, 0, 1.5F, -0.75F}},
      {"Select", 3, {-1, 1, 0.5F, -4}},
      {"Cast", 1, {0, 1, 4, 0.25F}},
  };
  for (const auto& k : cases) {
    SCOPED_TRACE(k.op_type);
    LoopOp op{};
    ASSERT_TRUE(loop_op_of(k.op_type, op));
    float out[4] = {};
    run_tile(op, abc, k.inputs, out, 4);
    for (int i = 0; i < 4; ++i)
      EXPECT_NEAR(out[i], k.expected[i], 1e-5F * (1 + std::abs(k.expected[i]))) << i;
  }
  LoopOp op{};
  EXPECT_FALSE(loop_op_of("Erfinv", op));  // run as a proxy addition
}

TEST(BackendTest, BadInputIsReported) {
  auto backend = make_backend(BackendKind::kCpu, 2);
  core::Graph g = diamond();
  core::Decision d;
  d.placement = std::vector<DeviceId>{0, 1, 2, 0, 0};
  std::string what = gopt::testing::error_of([&] { (void)backend->execute(g, d); });
  EXPECT_TRUE(gopt::testing::contains(what, "placement")) << what;
  what = gopt::testing::error_of([] { (void)backend_kind_from_string("tpu"); });
  EXPECT_TRUE(gopt::testing::contains(what, "unknown backend; expected one of cpu, cuda")) << what;
  what = gopt::testing::error_of([] { (void)make_backend(BackendKind::kCpu, 0); });
  EXPECT_TRUE(gopt::testing::contains(what, "at least 1 device")) << what;
}

TEST(BackendTest, WorkersArePinnedToCpusOfTheirOwnUnlessAsked) {
  const auto cpus = usable_cpus();
  ASSERT_FALSE(cpus.empty()) << "the process's affinity mask is unreadable";
  EXPECT_TRUE(std::is_sorted(cpus.begin(), cpus.end()));
  core::Graph g = diamond();
  const auto options = ExecutionOptions().with_warmup_steps(0).with_timed_steps(1);

  auto pinned = make_backend(BackendKind::kCpu, 1);
  ASSERT_EQ(pinned->worker_cpus(), std::vector<int>{cpus.front()});
  EXPECT_TRUE(
      gopt::testing::contains(pinned->describe(), "pinned to CPU " + std::to_string(cpus.front())))
      << pinned->describe();
  EXPECT_TRUE(pinned->execute(g, core::Decision(), options).pinned);

  auto free = make_backend(BackendKind::kCpu, 1, BackendOptions().with_pin_workers(false));
  EXPECT_TRUE(free->worker_cpus().empty());
  EXPECT_FALSE(gopt::testing::contains(free->describe(), "pinned")) << free->describe();
  EXPECT_FALSE(free->execute(g, core::Decision(), options).pinned);

  // More devices than usable CPUs: nothing to pin to.
  auto crowded = make_backend(BackendKind::kCpu, static_cast<DeviceId>(cpus.size() + 1));
  EXPECT_TRUE(crowded->worker_cpus().empty());
  EXPECT_FALSE(crowded->execute(g, core::Decision(), options).pinned);
}

TEST(BackendTest, CudaRunsOrSkipsWithAReason) {
  if (auto why = cuda_unavailable_reason()) {
    // Creating the backend must fail with the same clear reason, not crash.
    try {
      (void)make_backend(BackendKind::kCuda, 1);
      ADD_FAILURE() << "make_backend(kCuda) succeeded although: " << *why;
    } catch (const BackendUnavailable& e) {
      EXPECT_TRUE(gopt::testing::contains(e.what(), "CUDA")) << e.what();
    }
    GTEST_SKIP() << "CUDA backend not available here: " << *why;
  }
  auto backend = make_backend(BackendKind::kCuda, 1);
  core::Graph g = diamond();
  auto r = backend->execute(g, core::Decision(),
                            ExecutionOptions().with_warmup_steps(1).with_timed_steps(2));
  EXPECT_GT(r.step_time_s, 0);
}

TEST(BackendTest, CalibrationChainsMeasureEveryBenchmark) {
  auto backend = make_backend(BackendKind::kCpu, 2);
  MicrobenchOptions options;
  options.with_chain_length(2).with_warmup_steps(0).with_timed_steps(1).with_size_scale(0.05);
  options.rounds = 1;
  options.working_set_bytes = 0;
  auto ops = calibration_ops(0.05);
  auto m = measure_for_calibration(*backend, options);
  ASSERT_EQ(m.ops.size(), ops.size());
  for (const auto& s : m.ops) EXPECT_GT(s.time_s, 0) << s.label;
  // One copy sample per size and round: the median recorded duration of a chain's copies,
  // which is never zero (4 KiB .. 4 MiB).
  ASSERT_EQ(m.copies.size(), 6u);
  for (std::size_t i = 0; i < m.copies.size(); ++i) {
    EXPECT_GT(m.copies[i].time_s, 0);
    if (i > 0) {
      EXPECT_GT(m.copies[i].bytes, m.copies[i - 1].bytes);
    }
  }
  // The NoOp chains and every op chain measured what the executor adds.
  EXPECT_GE(m.executor.size(), 3u);
  for (const auto& e : m.executor) EXPECT_GE(e.time_s, e.kernel_time_s);
  core::Graph chain = chain_graph(ops.front(), 3);
  EXPECT_EQ(chain.num_nodes(), 3 * (1 + static_cast<core::NodeId>(ops.front().inputs.size())));
  // Fused loops: two mixes at four sizes, each timed fused (its groups fused whole, which
  // measure_fused_loops asserts) and unfused.
  ASSERT_EQ(m.fusion.size(), 8u);
  for (const auto& f : m.fusion) {
    EXPECT_GT(f.fused_s, 0) << f.mix;
    EXPECT_GT(f.unfused_s, 0) << f.mix;
    EXPECT_GT(f.bytes_written, 0) << f.mix;
  }
  // An LSTM cell's group: Mul and AddV2 read a second input, the first op two.
  core::Graph cell = fused_loop_graph({"Mul", "AddV2", "Sigmoid", "Tanh"}, 64, 3);
  EXPECT_EQ(cell.num_nodes(), 3 * (4 + 3));
  auto cg = core::CompiledGraph::compile(cell);
  core::Decision fused;
  fused.fusion = std::vector<std::int32_t>(static_cast<std::size_t>(cg.num_nodes()), 1);
  const auto groups = simulator::form_fusion_groups(cg, fused);
  int whole = 0;
  for (std::int32_t g = 0; g < groups.num_groups(); ++g) whole += groups.group_size(g) == 4;
  EXPECT_EQ(whole, 3);
}

}  // namespace
}  // namespace gopt::hardware::backend
