// The GO agent: policy shapes and masking, the gradient stop of the segment memory, the
// encoder's permutation equivariance, learning a placement whose optimum is known, the
// pretrain -> checkpoint -> zero-shot -> fine-tune round trip, and determinism.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <limits>
#include <map>
#include <numeric>
#include <random>
#include <set>
#include <thread>

#include "agents/baselines/list_scheduling.h"
#include "agents/compute_threads.h"
#include "agents/cpu_numerics.h"
#include "agents/go/go_agent.h"
#include "agents/go/go_checkpoint.h"
#include "agents/go/go_features.h"
#include "agents/go/go_inspect.h"
#include "agents/go/go_learner.h"
#include "agents/go/go_memory_repair.h"
#include "agents/go/go_model.h"
#include "agents/go/go_training.h"
#include "agents/go/segment_attention.h"
#include "agents/placement_utils.h"
#include "agents/registry.h"
#include "agents/torch_utils.h"
#include "core/errors.h"
#include "datasets/workload_registry.h"
#include "tests/agents/agents_test_util.h"
#include "tests/support/expect_error.h"
#include "tests/support/files.h"
#include "tests/support/random_dag.h"

namespace gopt::agents::go {
namespace {

using testing::Curve;

// Chains joined by a small sum (agents_test_util.h): one chain per device is optimal.
core::Graph parallel_chains(int chains, int length) {
  return testing::parallel_chains(chains, length, /*join=*/true);
}

// The hand-made optimum of parallel_chains: chain c on device c, the rest on device 0.
core::Decision chains_optimum(const core::CompiledGraph& g) {
  std::vector<core::DeviceId> placement(static_cast<std::size_t>(g.num_nodes()), 0);
  for (core::NodeId v = 0; v < g.num_nodes(); ++v) {
    const auto& name = g.node_names()[static_cast<std::size_t>(v)];
    if (name.size() > 1 && name[0] == 'c') placement[static_cast<std::size_t>(v)] = name[1] - '0';
  }
  core::Decision d;
  d.placement = placement;
  return d;
}

GoPolicy small_policy(std::uint64_t seed, std::int64_t segment = 4) {
  GoPolicy policy(GoPolicyOptions().hidden(16).heads(2).segment_length(segment).max_devices(4));
  core::Rng rng(seed);
  initialise(*policy, rng);
  return policy;
}

TEST(GoPolicyTest, ShapesAndDeviceMasking) {
  testing::ProblemFixture f(parallel_chains(2, 5), "p100x2_pcie");
  auto tensors = make_graph_tensors(f.compiled);
  EXPECT_EQ(tensors.num_layers, 0);  // no op carries a layer: no layer-shared exploration
  auto policy = small_policy(1);
  auto out = policy->forward(tensors, 3);
  const auto n = static_cast<std::int64_t>(f.compiled.num_nodes());
  ASSERT_EQ(out.logits.sizes(), (std::vector<std::int64_t>{n, 4}));
  EXPECT_EQ(out.value.dim(), 0);
  EXPECT_EQ(out.embeddings.sizes(), (std::vector<std::int64_t>{n, 16}));
  auto probs = torch::softmax(out.logits, 1);
  // The fourth device does not exist on this cluster: never chosen.
  EXPECT_EQ(probs.select(1, 3).max().item<float>(), 0.0F);
  EXPECT_GT(probs.slice(1, 0, 3).min().item<float>(), 0.0F);
  EXPECT_TRUE(torch::allclose(probs.sum(1), torch::ones({n})));
  // More devices than the head has is an error, not a silent truncation.
  EXPECT_THROW((void)policy->forward(tensors, 5), c10::Error);
}

TEST(GoPolicyTest, SegmentMemoryIsGradientStopped) {
  core::Rng rng(2);
  SegmentAttentionLayer layer(8, 2, 4);
  initialise(*layer, rng);
  torch::manual_seed(2);
  auto x = torch::randn({12, 8}).requires_grad_(true);  // three segments of four
  auto y = layer->forward(x);
  ASSERT_EQ(y.sizes(), x.sizes());
  // Segment 1 (rows 4..7) attends to segment 0 only through the detached memory. (A
  // weighted sum: the plain sum of a LayerNorm output does not depend on its input.)
  (y.slice(0, 4, 8) * torch::linspace(-1.0, 1.0, 8)).sum().backward();
  EXPECT_EQ(x.grad().slice(0, 0, 4).abs().max().item<float>(), 0.0F);
  EXPECT_GT(x.grad().slice(0, 4, 8).abs().max().item<float>(), 0.0F);
  EXPECT_EQ(x.grad().slice(0, 8, 12).abs().max().item<float>(), 0.0F);

  // ... but the forward pass does see the memory: changing segment 0 changes segment 1.
  torch::NoGradGuard no_grad;
  auto x2 = x.detach().clone();
  x2.slice(0, 0, 4).add_(1.0);
  auto y2 = layer->forward(x2);
  EXPECT_FALSE(torch::allclose(y.detach().slice(0, 4, 8), y2.slice(0, 4, 8)));
  EXPECT_TRUE(torch::allclose(y.detach().slice(0, 8, 12), y2.slice(0, 8, 12)));
}

// The fused CPU kernel against the same computation in LibTorch ops, values and gradients:
// every head size the kernel serves (16, 32, 64, 128) and two it leaves to the reference
// (4, 20); one segment or many, with and without padding, score rows of whole vectors or
// not (segments of 24: rows of 48 keys, 24 in the first segment); on every code path this
// CPU runs (baseline x86-64, AVX2, AVX-512).
TEST(GoPolicyTest, FusedSegmentAttentionMatchesTheReference) {
  struct Case {
    std::int64_t nodes, length, hidden, heads;
  };
  const CpuKernelPath entry_path = cpu_kernel_path();
  for (const auto path : {CpuKernelPath::kBaseline, CpuKernelPath::kAvx2, CpuKernelPath::kAvx512}) {
    if (!cpu_supports(path)) continue;
    set_cpu_kernel_path(path);
    ASSERT_EQ(cpu_kernel_path(), path);
    for (const Case c : {Case{12, 4, 8, 2}, Case{3, 4, 8, 1}, Case{200, 16, 48, 3},
                         Case{1000, 64, 64, 2}, Case{777, 32, 64, 4}, Case{130, 64, 128, 2},
                         Case{100, 8, 40, 2}, Case{70, 24, 32, 1}, Case{150, 32, 128, 1}}) {
      SCOPED_TRACE(::testing::Message()
                   << to_string(path) << " path, " << c.nodes << " nodes, segments of " << c.length
                   << ", " << c.hidden << " hidden, " << c.heads << " heads");
      torch::manual_seed(c.nodes);
      const std::int64_t segments = (c.nodes + c.length - 1) / c.length;
      auto make = [&] { return torch::randn({segments, c.length, c.hidden}).requires_grad_(true); };
      auto q = make();
      auto k = make();
      auto v = make();
      auto bias = (0.3 * torch::randn({c.heads, 3 * c.length})).requires_grad_(true);
      // Gradients of padding rows are zero upstream (the layer slices them off).
      auto real = torch::arange(segments * c.length).lt(c.nodes).view({segments, c.length, 1});
      auto grad_out = torch::randn({segments, c.length, c.hidden}) * real.to(torch::kFloat);
      auto expected = segment_attention_reference(q, k, v, bias, c.heads, c.nodes);
      auto actual = segment_attention(q, k, v, bias, c.heads, c.nodes);
      // The served head sizes really take the kernel (its autograd node), the others not.
      const std::int64_t head = c.hidden / c.heads;
      const bool served = head == 16 || head == 32 || head == 64 || head == 128;
      ASSERT_TRUE(actual.grad_fn());
      EXPECT_EQ(actual.grad_fn()->name().find("SegmentAttention") != std::string::npos, served)
          << actual.grad_fn()->name();
      EXPECT_TRUE(torch::allclose(actual, expected, 1e-4, 1e-5));
      EXPECT_EQ(actual.masked_select(real.logical_not()).abs().sum().item<float>(), 0.0F);
      auto expected_grads = torch::autograd::grad({expected}, {q, k, v, bias}, {grad_out});
      auto actual_grads = torch::autograd::grad({actual}, {q, k, v, bias}, {grad_out});
      const char* names[] = {"q", "k", "v", "rel_bias"};
      for (std::size_t i = 0; i < 4; ++i) {
        EXPECT_TRUE(torch::allclose(actual_grads[i], expected_grads[i], 1e-4, 1e-4))
            << "gradient of " << names[i] << " off by "
            << (actual_grads[i] - expected_grads[i]).abs().max().item<float>();
      }
    }
  }
  set_cpu_kernel_path(entry_path);
}

// The kernel path is the widest the CPU runs unless forced; forcing one the CPU lacks is an
// input error that names it.
TEST(GoPolicyTest, KernelPathIsSelectableAndNamedInTheProvenance) {
  EXPECT_TRUE(cpu_supports(CpuKernelPath::kBaseline));
  EXPECT_TRUE(cpu_supports(native_cpu_kernel_path()));
  const CpuKernelPath entry_path = cpu_kernel_path();
  for (const auto path : {CpuKernelPath::kBaseline, CpuKernelPath::kAvx2, CpuKernelPath::kAvx512}) {
    SCOPED_TRACE(to_string(path));
    const CpuKernelPath before = cpu_kernel_path();
    if (cpu_supports(path)) {
      set_cpu_kernel_path(path);
      EXPECT_EQ(cpu_kernel_path(), path);
      const std::string said = cpu_numerics_description();
      EXPECT_EQ(said.rfind("gopt kernels " + std::string(to_string(path)), 0), 0u) << said;
      EXPECT_NE(said.find("; ATen "), std::string::npos) << said;
      EXPECT_NE(said.find("; OpenBLAS "), std::string::npos) << said;
      // The line names the environment that forces it again.
      EXPECT_EQ(cpu_numerics_environment(said).rfind(
                    "GOPT_CPU_KERNEL=" + std::string(to_string(path)) + " ATEN_CPU_CAPABILITY=", 0),
                0u)
          << said;
    } else {
      // Refused, and the path stays the one taken before the attempt.
      EXPECT_THROW(set_cpu_kernel_path(path), core::InputError);
      EXPECT_EQ(cpu_kernel_path(), before);
    }
  }
  set_cpu_kernel_path(entry_path);
  EXPECT_EQ(cpu_kernel_path(), entry_path);
}

// What a CPU without AVX-512 (or AVX2) does, on any CPU: the paths above the ceiling are
// hidden, refused by name, dropped when forced, and the ceiling lifted shows them again.
TEST(GoPolicyTest, HiddenPathsAreRefusedAsIfTheCpuLackedThem) {
  const CpuKernelPath entry_path = cpu_kernel_path();
  const CpuKernelPath entry_ceiling = cpu_feature_ceiling();
  set_cpu_feature_ceiling(CpuKernelPath::kAvx512);
  const CpuKernelPath widest = native_cpu_kernel_path();  // what the CPU itself runs
  for (const auto ceiling : {CpuKernelPath::kBaseline, CpuKernelPath::kAvx2}) {
    SCOPED_TRACE(to_string(ceiling));
    set_cpu_feature_ceiling(CpuKernelPath::kAvx512);
    if (cpu_supports(CpuKernelPath::kAvx2)) set_cpu_kernel_path(CpuKernelPath::kAvx2);
    set_cpu_feature_ceiling(ceiling);
    EXPECT_FALSE(cpu_supports(CpuKernelPath::kAvx512));
    EXPECT_EQ(cpu_supports(CpuKernelPath::kAvx2),
              ceiling == CpuKernelPath::kAvx2 && widest >= CpuKernelPath::kAvx2);
    EXPECT_LE(native_cpu_kernel_path(), ceiling);
    EXPECT_LE(cpu_kernel_path(), ceiling);  // a forced AVX2 path is dropped below it
    const std::string said = cpu_numerics_description();
    EXPECT_EQ(
        said.rfind("gopt kernels " + std::string(to_string(native_cpu_kernel_path())) + " (native)",
                   0),
        0u)
        << said;
    const std::string refused =
        gopt::testing::error_of([] { set_cpu_kernel_path(CpuKernelPath::kAvx512); });
    EXPECT_NE(refused.find("does not run the 'avx512' path"), std::string::npos) << refused;
    if (widest == CpuKernelPath::kAvx512) {
      EXPECT_NE(refused.find("GOPT_CPU_HIDE"), std::string::npos) << refused;
    }
    EXPECT_EQ(cpu_kernel_path(), native_cpu_kernel_path());
  }
  set_cpu_feature_ceiling(CpuKernelPath::kAvx512);
  EXPECT_EQ(native_cpu_kernel_path(), widest);
  set_cpu_feature_ceiling(entry_ceiling);
  set_cpu_kernel_path(entry_path);
  EXPECT_EQ(cpu_kernel_path(), entry_path);
}

// Half the smallest normal float is subnormal: kept normally, 0 while the guard lives, and
// kept again after it (the thread's mode restored).
TEST(GoPolicyTest, SubnormalsAreFlushedOnlyWhileTheGuardLives) {
#if !defined(__SSE__)
  GTEST_SKIP() << "flushing subnormals is implemented for x86 (SSE) only";
#endif
  auto half_of_smallest = [] {
    volatile float smallest = std::numeric_limits<float>::min();
    return smallest * 0.5F;
  };
  EXPECT_GT(half_of_smallest(), 0.0F);
  {
    const SubnormalsFlushed flushed;
    EXPECT_EQ(half_of_smallest(), 0.0F);
  }
  EXPECT_GT(half_of_smallest(), 0.0F);
}

// The two memory columns are absolute, not standardised per graph: the graph's total is
// the same on every op and grows with the graph, and an op's own memory reads the same in
// any graph.
// scope_exploration's noise groups (docs/agents.md "Design decisions (GO)"):
// on GNMT the encoder and the decoder layer with the same index are apart, a layer's
// gradients are with it, and an op without a layer has no group.
TEST(GoPolicyTest, ScopeLayersSeparateTheEncoderFromTheDecoderLayer) {
  datasets::WorkloadRegistry workloads;
  datasets::register_builtin_workloads(workloads);
  const auto graph = core::CompiledGraph::compile(workloads.generate("gnmt_2"));
  const auto tensors = make_graph_tensors(graph);
  ASSERT_GT(tensors.num_layers, 0);
  EXPECT_GT(tensors.num_scope_layers, tensors.num_layers);
  std::map<std::string, std::int64_t> group_of_scope;  // "scope layer" -> group
  const auto order = tensors.order.accessor<std::int64_t, 1>();
  const auto group = tensors.scope_layer.accessor<std::int64_t, 1>();
  for (std::int64_t p = 0; p < tensors.num_nodes; ++p) {
    const auto v = static_cast<std::size_t>(order[p]);
    if (graph.layer()[v] < 0) {
      EXPECT_EQ(group[p], -1);
      continue;
    }
    std::string name = graph.node_names()[v];
    if (name.rfind("gradients/", 0) == 0) name.erase(0, std::string("gradients/").size());
    const auto key = name.substr(0, name.find('/')) + " " + std::to_string(graph.layer()[v]);
    EXPECT_EQ(group_of_scope.emplace(key, group[p]).first->second, group[p]) << name;
  }
  ASSERT_TRUE(group_of_scope.count("encoder 0") && group_of_scope.count("decoder 0"));
  EXPECT_NE(group_of_scope["encoder 0"], group_of_scope["decoder 0"]);
  EXPECT_EQ(static_cast<std::int64_t>(group_of_scope.size()), tensors.num_scope_layers);
}

// A layer's weight gradients, the backward ops that only feed updates, are the tail
// (weight_gradient_tail); the upstream gradient that also feeds the input gradient is not,
// nor are forward and update ops.
TEST(GoPolicyTest, WeightGradientTailIsTheBackwardOpsThatOnlyFeedUpdates) {
  using core::Phase;
  core::GraphBuilder b("dense");
  const auto backward = [&](const char* name, const char* op, core::Shape shape) {
    return b.add(name, op).output(std::move(shape)).layer(1).phase(Phase::kBackward).id();
  };
  auto x = b.add("input/x", "Placeholder").output({8, 64}).id();
  auto w = b.add("dense_1/w", "VariableV2").output({64, 64}).param_bytes(64 * 64 * 4).layer(1).id();
  auto y = b.add("dense_1/matmul", "MatMul").output({8, 64}).layer(1).id();
  auto loss = b.add("loss/sum", "Sum").output({1}).id();
  auto dy = b.add("gradients/loss/sum_grad", "Tile").output({8, 64}).phase(Phase::kBackward).id();
  auto relu = backward("gradients/dense_1/relu_grad", "ReluGrad", {8, 64});
  auto dx = backward("gradients/dense_1/matmul_grad/MatMul", "MatMul", {8, 64});
  auto dw = backward("gradients/dense_1/matmul_grad/MatMul_1", "MatMul", {64, 64});
  auto dw_sum = backward("gradients/dense_1/w_grad/AddN", "AddN", {64, 64});
  auto apply = b.add("dense_1/w/ApplyAdam", "ApplyAdam")
                   .output({64, 64})
                   .layer(1)
                   .phase(Phase::kUpdate)
                   .id();
  auto dx_sink =
      b.add("gradients/input/x_grad", "Identity").output({8, 64}).phase(Phase::kBackward).id();
  b.connect(x, y).connect(w, y).connect(y, loss).connect(loss, dy).connect(dy, relu);
  b.connect(relu, dx).connect(relu, dw).connect(x, dw).connect(dw, dw_sum).connect(dw_sum, apply);
  b.connect(w, apply).connect(dx, dx_sink);
  const auto graph = core::CompiledGraph::compile(std::move(b).build());
  const auto tail = weight_gradient_tail(graph);
  const auto in_tail = [&](core::NodeId v) { return tail[static_cast<std::size_t>(v)] != 0; };
  EXPECT_TRUE(in_tail(dw));
  EXPECT_TRUE(in_tail(dw_sum));
  for (auto v : {x, w, y, loss, dy, relu, dx, apply, dx_sink}) EXPECT_FALSE(in_tail(v)) << v;
}

// Weight-gradient units (make_graph_tensors' split_below): transformer_xl_2 has two layer
// units, each of whose weight gradients become a unit of their own when fewer units than
// asked for are large; every new unit is weight gradients only, and every other op keeps
// its unit. transformer_xl_4's four layers are not fewer than four devices.
TEST(GoPolicyTest, WeightGradientsSplitOffTheUnitsOfAGraphWithFewUnits) {
  datasets::WorkloadRegistry workloads;
  datasets::register_builtin_workloads(workloads);
  const auto graph = core::CompiledGraph::compile(workloads.generate("transformer_xl_2"));
  const auto whole = make_graph_tensors(graph);
  const auto split = make_graph_tensors(graph, 4);
  EXPECT_EQ(split.num_units, whole.num_units + 2);
  EXPECT_TRUE(torch::equal(make_graph_tensors(graph, 2).unit, whole.unit));  // 2 not fewer than 2
  const auto tail = weight_gradient_tail(graph);
  const auto order = whole.order.accessor<std::int64_t, 1>();
  const auto was = whole.unit.accessor<std::int64_t, 1>();
  const auto now = split.unit.accessor<std::int64_t, 1>();
  std::map<std::int64_t, std::set<std::int64_t>> before;  // new unit -> the units it came from
  std::map<std::int64_t, std::set<std::int64_t>> after;   // unit -> the new units of its ops
  std::map<std::int64_t, std::set<bool>> kinds;           // new unit -> in the tail or not
  for (std::int64_t p = 0; p < whole.num_nodes; ++p) {
    before[now[p]].insert(was[p]);
    after[was[p]].insert(now[p]);
    kinds[now[p]].insert(tail[static_cast<std::size_t>(order[p])] != 0);
  }
  for (const auto& [unit, from] : before) EXPECT_EQ(from.size(), 1u) << "new unit " << unit;
  std::int64_t split_units = 0;
  for (const auto& [unit, into] : after) {
    if (into.size() == 1) continue;
    ++split_units;
    ASSERT_EQ(into.size(), 2u) << "unit " << unit;
    const auto a = kinds[*into.begin()];
    const auto b = kinds[*into.rbegin()];
    ASSERT_TRUE(a.size() == 1 && b.size() == 1) << "unit " << unit << " split by something else";
    EXPECT_NE(*a.begin(), *b.begin()) << "unit " << unit;
  }
  EXPECT_EQ(split_units, 2);
  const auto sizes = split.unit_sizes.accessor<float, 2>();
  for (std::int64_t u = 0; u < split.num_units; ++u) EXPECT_GT(sizes[u][0], 0.0F);

  const auto four = core::CompiledGraph::compile(workloads.generate("transformer_xl_4"));
  EXPECT_TRUE(torch::equal(make_graph_tensors(four, 4).unit, make_graph_tensors(four).unit));
}

// GoOptions::weight_gradient_units reaches the tensors the agents train on: off keeps whole
// units, always splits, fewer_units_than_devices splits on four devices and not on two;
// an unknown value names the option.
TEST(GoAgentTest, WeightGradientUnitsOptionSetsTheTrainingUnits) {
  datasets::WorkloadRegistry workloads;
  datasets::register_builtin_workloads(workloads);
  testing::ProblemFixture four(workloads.generate("transformer_xl_2"), "p100x4_pcie", 1);
  testing::ProblemFixture two(workloads.generate("transformer_xl_2"), "p100x2_pcie", 1);
  const auto units = [](const testing::ProblemFixture& f, WeightGradientUnits split) {
    GoOptions options;
    options.weight_gradient_units = split;
    const GoLearner learner(options);
    return learner.tensors_for(f.problem, learner.base_for(f.problem)).num_units;
  };
  const std::int64_t whole = units(four, WeightGradientUnits::kOff);
  EXPECT_EQ(units(four, WeightGradientUnits::kAlways), whole + 2);
  EXPECT_EQ(units(two, WeightGradientUnits::kAlways), whole + 2);
  EXPECT_EQ(units(four, WeightGradientUnits::kFewerUnitsThanDevices), whole + 2);
  EXPECT_EQ(units(two, WeightGradientUnits::kFewerUnitsThanDevices), whole);

  AgentRegistry r;
  register_builtin_agents(r);
  (void)r.create("go_one", {{"weight_gradient_units", "fewer_units_than_devices"}}, "exp.yaml");
  const auto message = gopt::testing::error_of([&] {
    (void)r.create("go_one", {{"weight_gradient_units", "some"}}, "exp.yaml");
  });
  EXPECT_TRUE(gopt::testing::contains(message, "agents.go_one.weight_gradient_units")) << message;
}

// A graph of named units: two heavy layer chains ("enc/..." layer 0 and "dec/..." layer 0,
// each with gradients under "gradients/"), a decoder attention scope, an embedding scope
// without a layer, and a few flat-named ops. One unit per device (enc on one device, dec on
// the other) is optimal.
core::Graph unit_graph(int length = 24) {
  core::GraphBuilder b("units");
  auto prev = b.add("emb/lookup/in", "Placeholder").output({256, 1024}).id();
  auto chain = [&](const std::string& prefix, int count, std::int32_t layer, const char* type,
                   core::NodeId from) {
    core::NodeId last = from;
    for (int i = 0; i < count; ++i) {
      auto n = b.add(prefix + std::to_string(i), type)
                   .output({256, 1024})
                   .flops(2.0 * 256 * 1024 * 1024 * 8)
                   .layer(layer)
                   .id();
      b.connect(last, n);
      last = n;
    }
    return last;
  };
  prev = chain("emb/lookup/op", 20, -1, "Gather", prev);
  const auto enc = chain("enc/cell/op", length, 0, "MatMul", prev);
  const auto dec = chain("dec/cell/op", length, 0, "Conv2D", prev);
  const auto enc_grad = chain("gradients/enc/cell/grad", 4, 0, "MatMul", enc);
  const auto att = chain("dec/attention/op", 20, 0, "BatchMatMul", dec);
  auto sum = b.add("sum", "AddN").output({256, 1024}).id();
  b.connect(enc_grad, sum);
  b.connect(att, sum);
  chain("flat", 6, -1, "Relu", sum);
  return std::move(b).build();
}

// The unit of every op, by name.
std::map<std::string, std::int64_t> units_by_name(const core::CompiledGraph& graph,
                                                  const GraphTensors& tensors) {
  std::map<std::string, std::int64_t> out;
  for (std::int64_t p = 0; p < tensors.num_nodes; ++p) {
    const auto v = static_cast<std::size_t>(tensors.order[p].item<std::int64_t>());
    out[graph.node_names()[v]] = tensors.unit[p].item<std::int64_t>();
  }
  return out;
}

// Ops of `placement` (by node) on another device than their unit's first op.
int ops_off_their_unit(const GraphTensors& tensors, const std::vector<core::DeviceId>& placement) {
  std::map<std::int64_t, core::DeviceId> device_of_unit;
  int off = 0;
  for (std::int64_t p = 0; p < tensors.num_nodes; ++p) {
    const auto v = static_cast<std::size_t>(tensors.order[p].item<std::int64_t>());
    const auto u = tensors.unit[p].item<std::int64_t>();
    off += device_of_unit.emplace(u, placement[v]).first->second != placement[v] ? 1 : 0;
  }
  return off;
}

TEST(GoPolicyTest, DecisionUnitsAreLayersScopesAndBlocks) {
  const auto graph = core::CompiledGraph::compile(unit_graph());
  const auto tensors = make_graph_tensors(graph);
  const auto unit = units_by_name(graph, tensors);
  // A layer's ops and its gradients form one unit; the same layer index under another
  // top-level scope is another unit, and an attention scope is its own unit.
  for (int i = 1; i < 24; ++i)
    EXPECT_EQ(unit.at("enc/cell/op" + std::to_string(i)), unit.at("enc/cell/op0"));
  EXPECT_EQ(unit.at("gradients/enc/cell/grad3"), unit.at("enc/cell/op0"));
  EXPECT_NE(unit.at("dec/cell/op0"), unit.at("enc/cell/op0"));
  EXPECT_EQ(unit.at("dec/cell/op23"), unit.at("dec/cell/op0"));
  EXPECT_NE(unit.at("dec/attention/op0"), unit.at("dec/cell/op0"));
  EXPECT_EQ(unit.at("dec/attention/op19"), unit.at("dec/attention/op0"));
  // An unlayered two-level scope of kMinUnitOps or more ops is one unit (with its input).
  EXPECT_EQ(unit.at("emb/lookup/op19"), unit.at("emb/lookup/in"));
  // Flat names make units too small: they are blocks of consecutive positions instead,
  // here of n / 64 = 1 op, so each is its own unit.
  std::set<std::int64_t> flat;
  for (int i = 0; i < 6; ++i) flat.insert(unit.at("flat" + std::to_string(i)));
  flat.insert(unit.at("sum"));
  EXPECT_EQ(flat.size(), 7u);
  EXPECT_EQ(tensors.num_units, 4 + 7);  // emb, enc with its gradients, dec, attention
  EXPECT_EQ(tensors.unit_sizes.sum().item<float>(), static_cast<float>(tensors.num_nodes));
  ASSERT_EQ(tensors.unit_rows.size(0), tensors.num_units);
  for (std::int64_t u = 0; u < tensors.num_units; ++u) {
    EXPECT_EQ(tensors.unit[tensors.unit_rows[u].item<std::int64_t>()].item<std::int64_t>(), u);
  }
}

TEST(GoPpoTest, UnitDecisionsPlaceEveryUnitWhole) {
  testing::ProblemFixture f(unit_graph(), "p100x2_pcie", 1);
  const GraphTensors tensors = make_graph_tensors(f.compiled);
  core::Rng rng(5);
  GoPolicy policy(
      GoPolicyOptions().hidden(16).heads(2).segment_length(8).max_devices(4).unit_decisions(true));
  initialise(*policy, rng);
  policy->reset_heads();
  // Every op of a unit has its unit's logits.
  {
    torch::NoGradGuard no_grad;
    auto logits = policy->forward(tensors, 2).logits;
    auto unit_logits = logits.index_select(0, tensors.unit_rows).index_select(0, tensors.unit);
    EXPECT_TRUE(torch::equal(logits, unit_logits));
  }
  // Every sampled decision, and so the best one, moves units whole.
  torch::optim::Adam adam(policy->parameters(), torch::optim::AdamOptions(3e-3));
  PpoOptions ppo;
  ppo.samples_per_step = 8;
  PpoTrainer trainer(policy, adam, ppo, make_generator(rng));
  Environment env(f.problem);
  PpoTask task(env);
  for (int step = 0; step < 5; ++step) {
    const auto stats = trainer.step(task);
    EXPECT_EQ(stats.samples, 9);
    EXPECT_GE(stats.entropy, 0.0);
    EXPECT_LE(stats.entropy, std::log(2.0) + 1e-6);  // per unit, not summed over ops
    EXPECT_EQ(ops_off_their_unit(tensors, *env.best_decision().placement), 0);
  }
  const auto greedy = greedy_decision(policy, tensors, f.problem);
  EXPECT_EQ((*greedy.placement)[0], (*greedy.placement)[1]);  // "emb/lookup" in and op0
}

// The handover's blend: at 0 every op of a unit has the unit's mean logits (what unit
// decisions give), at 1 its own, in between the straight line from one to the other.
TEST(GoPolicyTest, UnitBlendMovesFromTheUnitsMeanToTheOpsOwnLogits) {
  testing::ProblemFixture f(unit_graph(), "p100x2_pcie", 1);
  const GraphTensors tensors = make_graph_tensors(f.compiled);
  GoPolicy policy = small_policy(5, 8);
  torch::NoGradGuard no_grad;
  auto logits_at = [&](bool units, double blend) {
    policy->options.unit_decisions(units).unit_blend(blend);
    return policy->forward(tensors, 2).logits;
  };
  const auto own = logits_at(false, 1.0);
  const auto means = logits_at(true, 1.0);
  ASSERT_FALSE(torch::allclose(own, means));
  EXPECT_TRUE(torch::allclose(logits_at(false, 0.0), means, 1e-5, 1e-5));
  EXPECT_TRUE(torch::allclose(logits_at(false, 0.25), means + 0.25 * (own - means), 1e-5, 1e-5));
  // Unit decisions ignore the blend: a unit has one distribution whatever it is.
  EXPECT_TRUE(torch::equal(logits_at(true, 0.25), means));
}

// The unit gate: each op's distribution is g p_unit + (1 - g) p_own with g the sigmoid of
// the gate head, 1/2 at first; the head is trained with the rest of the policy.
TEST(GoPolicyTest, UnitGateMixesTheUnitsDistributionWithTheOpsOwn) {
  testing::ProblemFixture f(unit_graph(), "p100x2_pcie", 1);
  const GraphTensors tensors = make_graph_tensors(f.compiled);
  core::Rng rng(5);
  GoPolicy policy(
      GoPolicyOptions().hidden(16).heads(2).segment_length(8).max_devices(4).unit_gate(true));
  initialise(*policy, rng);
  policy->reset_heads();
  auto probs_at = [&](bool gate, bool units) {
    torch::NoGradGuard no_grad;
    policy->options.unit_gate(gate).unit_decisions(units);
    return torch::softmax(policy->forward(tensors, 2).logits, 1);
  };
  const auto own = probs_at(false, false);
  const auto unit = probs_at(false, true);
  ASSERT_FALSE(torch::allclose(own, unit, 1e-3, 1e-3));
  const auto mixed = probs_at(true, false);
  EXPECT_TRUE(torch::allclose(mixed, 0.5 * unit + 0.5 * own, 1e-5, 1e-6));
  {
    torch::NoGradGuard no_grad;
    const auto gate = policy->forward(tensors, 2).unit_gate;
    ASSERT_TRUE(gate.defined());
    EXPECT_TRUE(torch::allclose(gate, torch::full({tensors.num_nodes}, 0.5)));
  }
  EXPECT_EQ(mixed.slice(1, 2).max().item<float>(), 0.0f);  // masked devices stay masked
  // PPO moves the gate: its head gets gradients from the placement's log-probabilities.
  torch::optim::Adam adam(policy->parameters(), torch::optim::AdamOptions(3e-3));
  PpoOptions ppo;
  ppo.samples_per_step = 8;
  PpoTrainer trainer(policy, adam, ppo, make_generator(rng));
  Environment env(f.problem);
  PpoTask task(env);
  for (int step = 0; step < 3; ++step) (void)trainer.step(task);
  const auto trained = probs_at(true, false);
  const auto own_now = probs_at(false, false);
  const auto unit_now = probs_at(false, true);
  EXPECT_FALSE(torch::allclose(trained, 0.5 * unit_now + 0.5 * own_now, 1e-4, 1e-6));
  // Unit decisions take the unit's distribution, gate or not.
  EXPECT_TRUE(torch::allclose(probs_at(true, true), unit_now));
}

// Mixed sampling: with per-op decisions, unit samples place whole units (drawn from the
// mean of the unit's logits) and train that pooled distribution.
TEST(GoPpoTest, UnitSamplesPlaceWholeUnitsAndTrainTheirPooledDistribution) {
  testing::ProblemFixture f(unit_graph(), "p100x2_pcie", 1);
  const GraphTensors tensors = make_graph_tensors(f.compiled);
  auto pooled_entropy = [&](GoPolicy& policy) {
    torch::NoGradGuard no_grad;
    auto logits = policy->forward(tensors, 2).logits.slice(1, 0, 2);
    auto log_p = torch::log_softmax(unit_means(logits, tensors), 1);
    return -(log_p.exp() * log_p).sum().item<double>();
  };
  core::Rng rng(5);
  GoPolicy policy(GoPolicyOptions().hidden(16).heads(2).segment_length(8).max_devices(4));
  initialise(*policy, rng);
  policy->reset_heads();
  const double before = pooled_entropy(policy);
  torch::optim::Adam adam(policy->parameters(), torch::optim::AdamOptions(3e-3));
  PpoOptions ppo;
  ppo.samples_per_step = 8;
  ppo.unit_samples = 8;
  ppo.evaluate_greedy = false;  // the greedy placement is per op
  PpoTrainer trainer(policy, adam, ppo, make_generator(rng));
  Environment env(f.problem);
  PpoTask task(env);
  for (int step = 0; step < 20; ++step) {
    (void)trainer.step(task);
    EXPECT_EQ(ops_off_their_unit(tensors, *env.best_decision().placement), 0);
  }
  // The unit samples' objective sharpened the pooled distributions.
  EXPECT_LT(pooled_entropy(policy), 0.8 * before) << "before " << before;

  AgentRegistry registry;
  register_builtin_agents(registry);
  const auto message = gopt::testing::error_of([&] {
    (void)registry.create("go_one", {{"unit_samples", "4"}, {"unit_decisions", "true"}},
                          "exp.yaml");
  });
  EXPECT_TRUE(gopt::testing::contains(message, "agents.go_one.unit_samples")) << message;
}

TEST(GoAgentTest, GoOneWithUnitDecisionsFindsTheBestPlacementOfUnits) {
  testing::ProblemFixture f(unit_graph(40), "p100x2_pcie", 1);
  Environment reference(f.problem);
  // The hand-made optimum: the decoder side (layer and attention) on device 1.
  core::Decision split;
  split.placement = std::vector<core::DeviceId>(f.compiled.num_nodes(), 0);
  for (core::NodeId v = 0; v < f.compiled.num_nodes(); ++v) {
    if (f.compiled.node_names()[static_cast<std::size_t>(v)].rfind("dec/", 0) == 0) {
      (*split.placement)[static_cast<std::size_t>(v)] = 1;
    }
  }
  const double optimum = reference.evaluate(split).step_time_s;
  core::Decision single;
  single.placement = std::vector<core::DeviceId>(f.compiled.num_nodes(), 0);
  ASSERT_LT(optimum, 0.75 * reference.evaluate(single).step_time_s);

  AgentRegistry r;
  register_builtin_agents(r);
  auto agent = r.create(
      "go_one",
      {{"hidden", "16"}, {"segment_length", "8"}, {"unit_decisions", "true"}, {"seed", "1"}});
  Environment env(f.problem);
  agent->train(env, TrainBudget().with_steps(20), nullptr);
  EXPECT_LE(env.best_step_time_s(), 1.001 * optimum);
  EXPECT_LE(env.samples(), 20 * 17);
}

TEST(GoPolicyTest, MemoryFeaturesAreNotStandardised) {
  const auto small = core::CompiledGraph::compile(parallel_chains(2, 4));
  const auto large = core::CompiledGraph::compile(parallel_chains(2, 40));
  const auto a = make_graph_tensors(small);
  const auto b = make_graph_tensors(large);
  const auto graph_a = a.numeric.select(1, kGraphMemoryColumn);
  const auto graph_b = b.numeric.select(1, kGraphMemoryColumn);
  EXPECT_TRUE(torch::all(graph_a.eq(graph_a[0])).item<bool>());
  EXPECT_TRUE(torch::all(graph_b.eq(graph_b[0])).item<bool>());
  EXPECT_GT(graph_b[0].item<float>(), graph_a[0].item<float>());
  // Every op's own memory column is a function of its bytes alone, not of the rest of the
  // graph (unlike the standardised columns).
  auto own = [](const GraphTensors& t, const core::CompiledGraph& g, std::int64_t p) {
    const auto v = static_cast<std::size_t>(t.order[p].item<std::int64_t>());
    const double mib = static_cast<double>(g.output_bytes()[v] + g.param_bytes()[v]) / (1 << 20);
    EXPECT_NEAR(t.numeric[p][kOpMemoryColumn].item<float>(), std::log2(1.0 + mib) / 8.0, 1e-6);
  };
  for (std::int64_t p = 0; p < a.num_nodes; ++p) own(a, small, p);
  for (std::int64_t p = 0; p < b.num_nodes; ++p) own(b, large, p);
}

TEST(GoPolicyTest, EncoderIsPermutationEquivariant) {
  auto graph = core::CompiledGraph::compile(
      gopt::testing::random_dag(gopt::testing::RandomDagOptions().with_nodes(60).with_seed(3)));
  auto g = make_graph_tensors(graph);
  // A renumbered copy: position p of the copy holds position perm[p] of the original.
  std::vector<std::int64_t> perm(static_cast<std::size_t>(g.num_nodes));
  std::iota(perm.begin(), perm.end(), 0);
  std::shuffle(perm.begin(), perm.end(), std::mt19937(4));
  auto p = torch::tensor(perm, torch::kLong);
  auto inverse = torch::empty_like(p);
  inverse.index_put_({p}, torch::arange(g.num_nodes, torch::kLong));
  GraphTensors h = g;
  h.kinds = g.kinds.index_select(0, p);
  h.numeric = g.numeric.index_select(0, p);
  h.inv_in_deg = g.inv_in_deg.index_select(0, p);
  h.inv_out_deg = g.inv_out_deg.index_select(0, p);
  h.edge_src = inverse.index_select(0, g.edge_src);
  h.edge_dst = inverse.index_select(0, g.edge_dst);

  core::Rng rng(5);
  GraphSageEncoder encoder(GoPolicyOptions().hidden(16));
  initialise(*encoder, rng);
  torch::NoGradGuard no_grad;
  auto original = encoder->forward(g);
  auto renumbered = encoder->forward(h);
  EXPECT_TRUE(torch::allclose(renumbered, original.index_select(0, p), 1e-5, 1e-5));
  // And the encoder is not trivially constant.
  EXPECT_GT((original[0] - original[1]).abs().max().item<float>(), 1e-3F);
}

// The mean sampled step time of each of `steps` training updates, and the placement the
// agent proposes after them.
std::pair<std::vector<double>, std::vector<core::DeviceId>> train_and_propose(
    Agent& agent, const Problem& problem, std::int64_t steps) {
  Environment env(problem);
  Curve curve;
  agent.train(env, TrainBudget().with_steps(steps), &curve);
  std::vector<double> means;
  for (const auto& p : curve.points) means.push_back(p.mean_step_time_s);
  return {means, *agent.propose(problem).placement};
}

TEST(GoAgentTest, GoOneLearnsAPlacementWithAKnownOptimum) {
  testing::ProblemFixture f(parallel_chains(2, 12), "p100x2_pcie", 7);
  Environment reference(f.problem);
  const double optimum = reference.evaluate(chains_optimum(f.compiled)).step_time_s;
  core::Decision single;
  single.placement = std::vector<core::DeviceId>(f.compiled.num_nodes(), 0);
  const double single_time = reference.evaluate(single).step_time_s;
  ASSERT_LT(optimum, 0.6 * single_time);  // the problem is worth solving

  AgentRegistry r;
  register_builtin_agents(r);
  auto agent = r.create(
      "go_one",
      {{"hidden", "32"}, {"segment_length", "8"}, {"samples_per_step", "16"}, {"seed", "1"}});
  Environment env(f.problem);
  Curve curve;
  agent->train(env, TrainBudget().with_steps(150), &curve);
  ASSERT_EQ(curve.points.size(), 150u);
  // The reward moved: the last updates sample placements within a few percent of the
  // optimum, and the best found is at it. (Seeds 1, 3, 4 and 5 get there in 150 updates;
  // seed 2's samples stay spread although its best is within 2%.)
  EXPECT_LT(curve.points.back().mean_step_time_s, 1.05 * optimum)
      << "first mean " << curve.points.front().mean_step_time_s << " optimum " << optimum;
  EXPECT_LT(env.best_step_time_s(), 1.02 * optimum);
  Environment check(f.problem);
  EXPECT_LT(check.evaluate(agent->propose(f.problem)).step_time_s, 1.02 * optimum);
}

// GO-one trains at `oversize_learning_rate` on a graph that runs out of memory on one
// device, and at `learning_rate` on one that fits: two chains of 12 ops holding 1 GiB of
// parameters each need 24 GiB, more than a P100's 16 GiB, but fit one chain per device.
TEST(GoAgentTest, GoOneTakesTheOversizeLearningRateOnlyOnAGraphTooLargeForOneDevice) {
  auto chains = [](core::Bytes params) {
    core::GraphBuilder b("heavy_chains");
    auto in = b.add("in", "Placeholder").output({256, 1024});
    for (int c = 0; c < 2; ++c) {
      core::NodeId prev = in;
      for (int i = 0; i < 12; ++i) {
        auto n =
            b.add("c" + std::to_string(c) + "_" + std::to_string(i), c == 0 ? "MatMul" : "Conv2D")
                .output({256, 1024})
                .flops(2.0 * 256 * 1024 * 1024 * 8)
                .param_bytes(params);
        b.connect(prev, n);
        prev = n;
      }
    }
    return std::move(b).build();
  };
  AgentRegistry r;
  register_builtin_agents(r);
  auto run = [&](const testing::ProblemFixture& f, const std::string& lr,
                 const std::string& oversize_lr) {
    auto agent = r.create("go_one", {{"hidden", "16"},
                                     {"segment_length", "8"},
                                     {"seed", "3"},
                                     {"learning_rate", lr},
                                     {"oversize_learning_rate", oversize_lr}});
    return train_and_propose(*agent, f.problem, 5);
  };

  testing::ProblemFixture oversize(chains(core::Bytes{1} << 30), "p100x2_pcie", 4);
  ASSERT_TRUE(Environment(oversize.problem).evaluate(core::Decision{}).oom);
  const auto both = run(oversize, "0.0003", "0.003");
  EXPECT_EQ(both, run(oversize, "0.003", "0"));
  EXPECT_NE(both, run(oversize, "0.0003", "0"));  // the rate matters on this problem

  testing::ProblemFixture fits(chains(core::Bytes{1} << 20), "p100x2_pcie", 4);
  ASSERT_FALSE(Environment(fits.problem).evaluate(core::Decision{}).oom);
  const auto small = run(fits, "0.0003", "0.003");
  EXPECT_EQ(small, run(fits, "0.0003", "0"));
  EXPECT_NE(small, run(fits, "0.003", "0"));

  const auto message = gopt::testing::error_of([&] {
    (void)r.create("go_one", {{"oversize_learning_rate", "-1"}}, "exp.yaml");
  });
  EXPECT_TRUE(gopt::testing::contains(message, "exp.yaml")) << message;
  EXPECT_TRUE(gopt::testing::contains(message, "agents.go_one.oversize_learning_rate")) << message;
}

// The runner limits each parallel job thread's LibTorch threads; the limit holds for work
// issued from that thread and leaves a thread that already runs LibTorch work alone.
TEST(ComputeThreadsTest, LimitAppliesToTheCallingThread) {
  const int before = at::get_num_threads();
  at::set_num_threads(2);  // whatever OMP_NUM_THREADS says (ctest sets 1)
  int in_job = -1;
  std::thread job([&] {
    limit_compute_threads(1);
    in_job = at::get_num_threads();
  });
  job.join();
  EXPECT_EQ(in_job, 1);
  EXPECT_EQ(at::get_num_threads(), 2);
  limit_compute_threads(0);  // clamped to one thread, not an error
  EXPECT_EQ(at::get_num_threads(), 1);
  at::set_num_threads(before);  // the other tests run with the default
}

// `steps` PPO updates of 8 samples on `problem` with the device-balance penalty (weight
// `balance`, floor `floor`; 0 and 0: plain PPO), Adam at `learning_rate`, seed 4.
void train_balanced(GoPolicy& policy, const Problem& problem, double learning_rate, double balance,
                    double floor, int steps) {
  core::Rng rng(4);
  torch::optim::Adam adam(policy->parameters(), torch::optim::AdamOptions(learning_rate));
  PpoOptions ppo;
  ppo.samples_per_step = 8;
  ppo.device_balance = balance;
  ppo.device_floor = floor;
  PpoTrainer trainer(policy, adam, ppo, make_generator(rng));
  Environment env(problem);
  PpoTask task(env);
  for (int step = 0; step < steps; ++step) (void)trainer.step(task);
}

// Device balance (device_balance): a device the policy stopped sampling (its placement
// bias far below the others', as pretraining leaves one on the GNMT graphs) stays dead
// under PPO alone and comes back with the penalty.
TEST(GoPpoTest, DeviceBalanceBringsBackADeviceThePolicyStoppedSampling) {
  testing::ProblemFixture f(parallel_chains(3, 6), "p100x4_pcie", 1);
  const GraphTensors tensors = make_graph_tensors(f.compiled);
  auto dead_share = [&](GoPolicy& policy) {  // device 3's mean probability over the ops
    torch::NoGradGuard no_grad;
    const auto p = torch::softmax(policy->forward(tensors, 4).logits, 1);
    return p.select(1, 3).mean().item<double>();
  };
  double before = 0;
  auto after = [&](double balance, double floor = 0) {
    GoPolicy policy = small_policy(3);
    policy->reset_heads();
    {
      torch::NoGradGuard no_grad;
      auto params = policy->named_parameters();
      EXPECT_TRUE(params.contains("placement.bias"));
      params["placement.bias"][3].fill_(-12.0);
    }
    before = dead_share(policy);
    train_balanced(policy, f.problem, 3e-2, balance, floor, 5);
    return dead_share(policy);
  };
  const double without = after(0);
  EXPECT_LT(before, 1e-4);
  EXPECT_LT(without, 1e-3) << "before " << before;
  const double with = after(1.0);
  EXPECT_GT(with, 100 * without) << "before " << before;
  // A floor at a quarter of the uniform share brings it back too.
  EXPECT_GT(after(1.0, 0.25), 100 * without) << "before " << before;
}

// A device floor (device_floor) leaves a policy whose devices all lie above it exactly as
// PPO alone trains it, where the full KL pulls it towards uniform.
TEST(GoPpoTest, DeviceFloorLeavesDevicesAboveItAlone) {
  testing::ProblemFixture f(parallel_chains(3, 6), "p100x4_pcie", 1);
  const GraphTensors tensors = make_graph_tensors(f.compiled);
  auto trained = [&](double balance, double floor) {
    GoPolicy policy = small_policy(3);
    train_balanced(policy, f.problem, 1e-3, balance, floor, 1);
    torch::NoGradGuard no_grad;
    return torch::softmax(policy->forward(tensors, 4).logits.slice(1, 0, 4), 1);
  };
  const auto plain = trained(0, 0);
  ASSERT_GT(plain.mean(0).min().item<double>(), 0.25 * 0.25);  // every device above the floor
  EXPECT_TRUE(torch::equal(trained(1.0, 0.25), plain));
  EXPECT_FALSE(torch::equal(trained(1.0, 0), plain));

  // A floor without the penalty it bounds would do nothing: an error naming the option.
  AgentRegistry r;
  register_builtin_agents(r);
  const auto lone = gopt::testing::error_of([&] {
    (void)r.create("go_finetune", {{"device_floor", "0.25"}}, "exp.yaml");
  });
  EXPECT_TRUE(gopt::testing::contains(lone, "agents.go_finetune.device_floor")) << lone;
  EXPECT_TRUE(gopt::testing::contains(lone, "device_balance > 0")) << lone;
}

// Self-imitation (imitation_coef) pulls the policy towards the best decision found so far:
// one update from the same start, with the same samples, raises that decision's
// log-likelihood with it, and more than without it.
TEST(GoPpoTest, SelfImitationPullsThePolicyTowardsTheBestDecision) {
  testing::ProblemFixture f(parallel_chains(3, 6), "p100x4_pcie", 1);
  const core::Decision optimum = chains_optimum(f.compiled);
  const GraphTensors tensors = make_graph_tensors(f.compiled);
  auto target = torch::empty({tensors.num_nodes, 1}, torch::kLong);
  for (std::int64_t p = 0; p < tensors.num_nodes; ++p) {
    const auto v = static_cast<std::size_t>(tensors.order[p].item<std::int64_t>());
    target[p][0] = (*optimum.placement)[v];
  }
  auto log_likelihood = [&](GoPolicy& policy) {
    torch::NoGradGuard no_grad;
    auto logits = policy->forward(tensors, 4).logits.slice(1, 0, 4);
    return (torch::log_softmax(logits, 1).gather(1, target).squeeze(1) * tensors.action_mask)
        .sum()
        .item<double>();
  };
  double before = 0;
  auto after_one_update = [&](double coef, double cap = 0.9) {
    Environment env(f.problem);
    (void)env.evaluate(optimum);  // the best decision so far
    core::Rng rng(3);
    GoPolicy policy = small_policy(3);
    before = log_likelihood(policy);
    torch::optim::Adam adam(policy->parameters(), torch::optim::AdamOptions(1e-3));
    PpoOptions ppo;
    ppo.samples_per_step = 8;
    ppo.epochs = 1;
    ppo.imitation_coef = coef;
    ppo.imitation_cap = cap;
    PpoTrainer trainer(policy, adam, ppo, make_generator(rng));
    PpoTask task(env);
    (void)trainer.step(task);
    EXPECT_EQ(env.best_decision().placement, optimum.placement);
    return log_likelihood(policy);
  };
  const double without = after_one_update(0);
  const double with = after_one_update(1.0);
  EXPECT_GT(with, before);
  EXPECT_GT(with, without + 0.1) << "before " << before;
  // Capped below every op's current probability, imitation adds no gradient at all.
  EXPECT_EQ(after_one_update(1.0, 1e-4), without);

  AgentRegistry registry;
  register_builtin_agents(registry);
  const auto message = gopt::testing::error_of([&] {
    (void)registry.create("go_one", {{"imitation_cap", "1.5"}}, "exp.yaml");
  });
  EXPECT_TRUE(gopt::testing::contains(message, "exp.yaml")) << message;
  EXPECT_TRUE(gopt::testing::contains(message, "agents.go_one.imitation_cap")) << message;
}

TEST(GoAgentTest, SameSeedSameRun) {
  testing::ProblemFixture f(parallel_chains(3, 4), "p100x4_pcie", 2);
  AgentRegistry r;
  register_builtin_agents(r);
  auto run = [&] {
    auto agent = r.create("go_one", {{"hidden", "16"}, {"segment_length", "4"}, {"seed", "9"}});
    return train_and_propose(*agent, f.problem, 4);
  };
  auto a = run();
  auto b = run();
  EXPECT_EQ(a.first, b.first);
  EXPECT_EQ(a.second, b.second);
}

// order: critical_path: every placement GO-one samples runs in critical-path order, and its
// decision carries those priorities; an agent that decides priorities itself refuses it.
TEST(GoAgentTest, CriticalPathOrderGivesEverySampledPlacementItsPriorities) {
  testing::ProblemFixture f(testing::parallel_chains(3, 4, /*join=*/true), "p100x4_pcie", 2);
  AgentRegistry r;
  register_builtin_agents(r);
  auto agent = r.create(
      "go_one",
      {{"hidden", "16"}, {"segment_length", "4"}, {"seed", "9"}, {"order", "critical_path"}});
  Environment env(f.problem);
  agent->train(env, TrainBudget().with_steps(3), nullptr);
  const core::Decision best = env.best_decision();
  ASSERT_TRUE(best.placement.has_value());
  ASSERT_TRUE(best.priority.has_value());
  EXPECT_EQ(*best.priority, critical_path_priorities(f.problem, *best.placement));
  const core::Decision proposed = agent->propose(f.problem);
  ASSERT_TRUE(proposed.priority.has_value());
  EXPECT_EQ(*proposed.priority, critical_path_priorities(f.problem, *proposed.placement));
  // The executor's order (the default) leaves the priorities to the executor.
  auto plain = r.create("go_one", {{"hidden", "16"}, {"segment_length", "4"}, {"seed", "9"}});
  Environment plain_env(f.problem);
  plain->train(plain_env, TrainBudget().with_steps(1), nullptr);
  EXPECT_FALSE(plain_env.best_decision().priority.has_value());
  const auto message = gopt::testing::error_of([&] {
    (void)r.create("go_scheduling", {{"order", "critical_path"}}, "exp.yaml");
  });
  EXPECT_NE(message.find("decides priorities itself"), std::string::npos) << message;
}

// Zero-shot's memory repair: every op of rnnlm_4 pushed onto device 0 by a prior runs out
// of memory there (about 23 GB on a 16 GB P100); the repair moves whole layers and blocks
// the policy is least sure of to the devices with room until the placement fits.
TEST(GoZeroShotTest, MemoryRepairMovesAnOutOfMemoryPlacementIntoMemory) {
  datasets::WorkloadRegistry workloads;
  datasets::register_builtin_workloads(workloads);
  testing::ProblemFixture f(workloads.generate("rnnlm_4"), "p100x4_pcie", 1);
  GoPolicy policy = small_policy(1);
  GraphTensors tensors = make_graph_tensors(f.compiled);
  tensors.placement_prior = torch::zeros({tensors.num_nodes, 4});
  tensors.placement_prior.select(1, 0).fill_(20.0);

  Environment greedy_env(f.problem);
  MemoryRepair none;
  const auto greedy = memory_fitting_decision(policy, tensors, greedy_env, {}, 0, 64, &none);
  EXPECT_EQ(none.simulations, 1);
  EXPECT_FALSE(none.fits);
  ASSERT_TRUE(greedy.placement);
  EXPECT_TRUE(std::all_of(greedy.placement->begin(), greedy.placement->end(),
                          [](core::DeviceId d) { return d == 0; }));
  EXPECT_TRUE(greedy_env.evaluate(greedy).oom);

  Environment env(f.problem);
  MemoryRepair repair;
  const auto fitted = memory_fitting_decision(policy, tensors, env, {}, 10, 64, &repair);
  EXPECT_TRUE(repair.fits);
  EXPECT_GT(repair.simulations, 1);
  EXPECT_LE(repair.simulations, 11);
  EXPECT_EQ(env.samples(), repair.simulations);  // every simulation is counted
  EXPECT_GT(repair.moved_ops, 0);
  Environment check(f.problem);
  EXPECT_FALSE(check.evaluate(fitted).oom);
  // Ops move by layer: an LSTM layer's ops stay on one device.
  const auto& layers = f.compiled.layer();
  std::map<std::int32_t, std::set<core::DeviceId>> devices_of_layer;
  for (core::NodeId v = 0; v < f.compiled.num_nodes(); ++v) {
    const auto layer = layers[static_cast<std::size_t>(v)];
    if (layer >= 0)
      devices_of_layer[layer].insert((*fitted.placement)[static_cast<std::size_t>(v)]);
  }
  ASSERT_FALSE(devices_of_layer.empty());
  for (const auto& [layer, devices] : devices_of_layer) EXPECT_EQ(devices.size(), 1u) << layer;

  Environment again(f.problem);
  EXPECT_EQ(memory_fitting_decision(policy, tensors, again, {}, 10, 64).placement,
            fitted.placement);
}

class GoCheckpointTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = std::filesystem::temp_directory_path() /
           ("gopt_go_ckpt_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    std::filesystem::create_directories(dir_);
  }
  void TearDown() override { gopt::testing::remove_tree(dir_.string()); }

  // Pretrains go_pretrain with `options` on `problem` for `steps` updates; it writes its
  // checkpoint where options["checkpoint"] says.
  static void pretrain(const Problem& problem, const std::map<std::string, std::string>& options,
                       std::int64_t steps) {
    AgentRegistry r;
    register_builtin_agents(r);
    auto agent = r.create("go_pretrain", options);
    auto* transferable = dynamic_cast<TransferableAgent*>(agent.get());
    ASSERT_NE(transferable, nullptr);
    Environment env(problem);
    transferable->train_on_set({&env}, TrainBudget().with_steps(steps), nullptr);
  }

  // go_pretrain's options for the granularity tests: a small policy writing `checkpoint`.
  static std::map<std::string, std::string> small_pretrain(const std::string& checkpoint) {
    return {{"hidden", "16"},
            {"segment_length", "8"},
            {"max_devices", "4"},
            {"checkpoint", checkpoint},
            {"seed", "2"}};
  }

  std::filesystem::path dir_;
};

// `gopt agents inspect`: a checkpoint's placement distribution per device over a graph's
// ops. A policy one update from its random start still tells ops apart (its head starts at
// 3x the usual scale), so the logit spread measures something that can be far from 0.
TEST_F(GoCheckpointTest, PlacementSpreadMeasuresACheckpointAndNamesABadFile) {
  testing::ProblemFixture a(parallel_chains(2, 6), "p100x2_pcie", 1);
  const std::string checkpoint = (dir_ / "go.ckpt").string();
  ASSERT_NO_FATAL_FAILURE(pretrain(
      a.problem,
      {{"hidden", "16"}, {"segment_length", "4"}, {"max_devices", "4"}, {"checkpoint", checkpoint}},
      1));

  const auto spread = placement_spread(checkpoint, a.compiled, 2);
  EXPECT_EQ(spread.updates, 1);
  EXPECT_NE(spread.options.find("hidden=16"), std::string::npos);
  ASSERT_EQ(spread.mean_probability.size(), 2u);
  ASSERT_EQ(spread.logit_spread.size(), 2u);
  ASSERT_EQ(spread.argmax_ops.size(), 2u);
  EXPECT_NEAR(spread.mean_probability[0] + spread.mean_probability[1], 1.0, 1e-5);
  EXPECT_EQ(spread.argmax_ops[0] + spread.argmax_ops[1], a.compiled.num_nodes());
  EXPECT_GT(std::max(spread.logit_spread[0], spread.logit_spread[1]), 0.05);
  EXPECT_FALSE(spread.unit_gate_mean.has_value());  // no gate to report

  const auto not_a_checkpoint = (dir_ / "notes.txt").string();
  std::ofstream(not_a_checkpoint) << "not a checkpoint\n";
  const auto message =
      gopt::testing::error_of([&] { (void)placement_spread(not_a_checkpoint, a.compiled, 2); });
  EXPECT_TRUE(gopt::testing::contains(message, not_a_checkpoint)) << message;
  EXPECT_THROW((void)placement_spread(checkpoint, a.compiled, 5), core::InputError);
}

// The policy keeps telling ops apart while it trains at the default learning rate. At
// 3e-3 (the default before 2026-11-22), Adam's first, sign-like steps moved the whole
// network at once: five updates on rnnlm_2 put every op on one device (p = 0.98, logit
// spread 0.2-0.4), and longer runs left a constant function of the input
// (docs/agents.md "Design decisions (GO)"). At 3e-4 five updates keep spreads of 1.4-2.2 and
// several devices in the greedy placement.
TEST_F(GoCheckpointTest, DefaultTrainingKeepsThePolicyConditionedOnTheOp) {
  datasets::WorkloadRegistry workloads;
  datasets::register_builtin_workloads(workloads);
  testing::ProblemFixture f(workloads.generate("rnnlm_2"), "p100x4_pcie", 1);
  const std::string checkpoint = (dir_ / "go.ckpt").string();
  ASSERT_NO_FATAL_FAILURE(pretrain(f.problem, {{"checkpoint", checkpoint}, {"seed", "1"}}, 5));

  const auto spread = placement_spread(checkpoint, f.compiled, 4);
  ASSERT_EQ(spread.updates, 5);
  double widest = 0;
  int used = 0;
  for (int d = 0; d < 4; ++d) {
    widest = std::max(widest, spread.logit_spread[static_cast<std::size_t>(d)]);
    used += spread.argmax_ops[static_cast<std::size_t>(d)] > 0;
  }
  EXPECT_GT(widest, 1.0);
  EXPECT_GE(used, 2) << "the greedy placement puts every op on one device";
}

TEST_F(GoCheckpointTest, PretrainThenZeroShotThenFinetune) {
  testing::ProblemFixture a(parallel_chains(2, 6), "p100x2_pcie", 1);
  testing::ProblemFixture b(parallel_chains(3, 4), "p100x2_pcie", 2);
  testing::ProblemFixture held_out(parallel_chains(2, 9), "p100x2_pcie", 3);
  const std::string checkpoint = (dir_ / "go.ckpt").string();
  AgentRegistry r;
  register_builtin_agents(r);
  const std::map<std::string, std::string> sizes = {
      {"hidden", "16"}, {"segment_length", "4"}, {"max_devices", "4"}};
  auto pretrain_options = sizes;
  pretrain_options["checkpoint"] = checkpoint;
  auto pretrain = r.create("go_pretrain", pretrain_options);
  auto* transferable = dynamic_cast<TransferableAgent*>(pretrain.get());
  ASSERT_NE(transferable, nullptr);
  Environment env_a(a.problem);
  Environment env_b(b.problem);
  Curve curve;
  transferable->train_on_set({&env_a, &env_b}, TrainBudget().with_steps(6), &curve);
  ASSERT_EQ(curve.points.size(), 6u);
  EXPECT_GT(env_a.samples(), 0);  // both graphs were trained on
  EXPECT_GT(env_b.samples(), 0);
  ASSERT_TRUE(std::filesystem::exists(checkpoint));

  // Zero-shot: the pretrained policy's greedy placement of an unseen graph. It "trains" only
  // to simulate that placement (one sample; it fits, so no memory repair).
  auto zero_shot = r.create("go_zero_shot", {{"checkpoint", checkpoint}});
  EXPECT_TRUE(zero_shot->is_learner());
  auto decision = zero_shot->propose(held_out.problem);
  EXPECT_EQ(decision.placement, pretrain->propose(held_out.problem).placement);
  core::validate_decision(decision, held_out.compiled.num_nodes(), held_out.cluster.num_devices());
  Environment env_z(held_out.problem);
  zero_shot->train(env_z, TrainBudget().with_steps(50), nullptr);
  EXPECT_EQ(env_z.samples(), 1);
  EXPECT_EQ(zero_shot->propose(held_out.problem).placement, decision.placement);

  // Fine-tuning starts from the same policy, so it is never worse than zero-shot.
  auto finetune = r.create("go_finetune", {{"checkpoint", checkpoint}, {"finetune_steps", "3"}});
  Environment env_h(held_out.problem);
  Curve finetune_curve;
  finetune->train(env_h, TrainBudget().with_steps(50), &finetune_curve);
  EXPECT_EQ(finetune_curve.points.size(), 3u);  // capped by finetune_steps
  Environment check(held_out.problem);
  EXPECT_LE(check.evaluate(finetune->propose(held_out.problem)).step_time_s,
            check.evaluate(decision).step_time_s);
}

// order: critical_path on the agents that read a checkpoint: zero-shot's greedy placement
// and every placement fine-tuning samples run in critical-path order and their decisions carry
// those priorities, on the placement the executor's order gives; a checkpoint whose policy
// decides priorities itself is refused, naming the option.
TEST_F(GoCheckpointTest, CriticalPathOrderCarriesIntoZeroShotAndFinetune) {
  testing::ProblemFixture train(parallel_chains(2, 6), "p100x2_pcie", 1);
  testing::ProblemFixture held_out(testing::parallel_chains(3, 4, /*join=*/true), "p100x2_pcie", 3);
  const std::string checkpoint = (dir_ / "go.ckpt").string();
  ASSERT_NO_FATAL_FAILURE(pretrain(train.problem, small_pretrain(checkpoint), 2));
  AgentRegistry r;
  register_builtin_agents(r);

  auto plain = r.create("go_zero_shot", {{"checkpoint", checkpoint}});
  Environment plain_env(held_out.problem);
  plain->train(plain_env, TrainBudget().with_steps(1), nullptr);
  EXPECT_FALSE(plain_env.best_decision().priority.has_value());
  auto zero_shot =
      r.create("go_zero_shot", {{"checkpoint", checkpoint}, {"order", "critical_path"}});
  Environment env_z(held_out.problem);
  zero_shot->train(env_z, TrainBudget().with_steps(1), nullptr);
  const core::Decision greedy = env_z.best_decision();
  ASSERT_TRUE(greedy.placement.has_value());
  ASSERT_TRUE(greedy.priority.has_value());
  EXPECT_EQ(greedy.placement, plain_env.best_decision().placement);
  EXPECT_EQ(*greedy.priority, critical_path_priorities(held_out.problem, *greedy.placement));
  EXPECT_EQ(zero_shot->propose(held_out.problem).priority, greedy.priority);

  auto finetune = r.create("go_finetune", {{"checkpoint", checkpoint},
                                           {"finetune_steps", "2"},
                                           {"samples_per_step", "4"},
                                           {"order", "critical_path"}});
  Environment env_f(held_out.problem);
  finetune->train(env_f, TrainBudget().with_steps(2), nullptr);
  EXPECT_GT(env_f.samples(), 1);
  const core::Decision best = env_f.best_decision();
  ASSERT_TRUE(best.priority.has_value());
  EXPECT_EQ(*best.priority, critical_path_priorities(held_out.problem, *best.placement));
  EXPECT_LE(env_f.best_step_time_s(), env_z.best_step_time_s());

  // A checkpoint of a policy that schedules (written directly: go_pretrain places only).
  GoOptions scheduling;
  scheduling.policy.hidden(16).segment_length(4).schedule(true).task_layers(true);
  GoLearner learner(scheduling);
  learner.create_policy(1);
  const std::string scheduling_checkpoint = (dir_ / "scheduling.ckpt").string();
  save_checkpoint(scheduling_checkpoint, learner.trained());
  for (const std::string agent : {"go_zero_shot", "go_finetune"}) {
    auto reader =
        r.create(agent, {{"checkpoint", scheduling_checkpoint}, {"order", "critical_path"}});
    Environment env(held_out.problem);
    const auto message =
        gopt::testing::error_of([&] { reader->train(env, TrainBudget().with_steps(1), nullptr); });
    EXPECT_TRUE(gopt::testing::contains(message, "agents." + agent + ".order")) << message;
    EXPECT_TRUE(gopt::testing::contains(message, "decides priorities itself")) << message;
  }
}

// Zero-shot's granularity: `unit` places every decision unit whole, `best` simulates both
// greedy placements and keeps the faster, and neither changes how the loaded policy decides
// afterwards.
TEST_F(GoCheckpointTest, ZeroShotGranularityPlacesUnitsWholeOrTheFasterOfBoth) {
  testing::ProblemFixture train(unit_graph(), "p100x2_pcie", 1);
  testing::ProblemFixture held_out(unit_graph(), "p100x2_pcie", 2);
  testing::ProblemFixture other(unit_graph(), "p100x2_pcie", 3);  // not remembered
  const std::string checkpoint = (dir_ / "go.ckpt").string();
  AgentRegistry r;
  register_builtin_agents(r);
  ASSERT_NO_FATAL_FAILURE(pretrain(train.problem, small_pretrain(checkpoint), 4));
  ASSERT_TRUE(std::filesystem::exists(checkpoint));

  struct Placed {
    std::vector<core::DeviceId> placement;
    double step_time_s;
    std::int64_t samples;
    std::vector<core::DeviceId> afterwards;  // the same agent's greedy placement of `other`
  };
  auto place = [&](const std::string& granularity) {
    auto agent =
        r.create("go_zero_shot", {{"checkpoint", checkpoint}, {"granularity", granularity}});
    Environment env(held_out.problem);
    agent->train(env, TrainBudget().with_steps(1), nullptr);
    Placed p;
    p.placement = *agent->propose(held_out.problem).placement;
    Environment check(held_out.problem);
    p.step_time_s = check.evaluate(agent->propose(held_out.problem)).step_time_s;
    p.samples = env.samples();
    p.afterwards = *agent->propose(other.problem).placement;
    return p;
  };
  const Placed per_op = place("policy");
  const Placed per_unit = place("unit");
  const Placed best = place("best");
  const GraphTensors tensors = make_graph_tensors(held_out.compiled);
  EXPECT_EQ(ops_off_their_unit(tensors, per_unit.placement), 0);
  EXPECT_GT(ops_off_their_unit(tensors, per_op.placement), 0)
      << "the test needs a per-op placement that splits a unit";
  EXPECT_EQ(per_op.samples, 1);  // both fit: no memory repair
  EXPECT_EQ(per_unit.samples, 1);
  EXPECT_EQ(best.samples, 2);
  EXPECT_EQ(best.step_time_s, std::min(per_op.step_time_s, per_unit.step_time_s));
  EXPECT_TRUE(best.placement == per_op.placement || best.placement == per_unit.placement);
  // The granularity held for the held-out graph only: the policy still decides per op.
  EXPECT_EQ(per_unit.afterwards, per_op.afterwards);
  EXPECT_EQ(best.afterwards, per_op.afterwards);

  const auto message = gopt::testing::error_of([&] {
    (void)r.create("go_zero_shot", {{"checkpoint", checkpoint}, {"granularity", "layer"}},
                   "exp.yaml");
  });
  EXPECT_TRUE(gopt::testing::contains(message, "agents.go_zero_shot.granularity")) << message;
}

// Fine-tuning's granularity: `best` starts from zero-shot's placements (counted as samples,
// never ended behind) and runs its unit phase only when whole units were faster; after the
// start it trains exactly as `unit` (unit phase) or as `policy` without one.
TEST_F(GoCheckpointTest, FinetuneRunsItsUnitPhaseOnlyFromAFasterPerUnitStart) {
  testing::ProblemFixture train(unit_graph(), "p100x2_pcie", 1);
  testing::ProblemFixture held_out(unit_graph(), "p100x2_pcie", 2);
  const std::string checkpoint = (dir_ / "go.ckpt").string();
  AgentRegistry r;
  register_builtin_agents(r);
  ASSERT_NO_FATAL_FAILURE(pretrain(train.problem, small_pretrain(checkpoint), 4));

  auto zero_shot_time = [&](const std::string& granularity) {
    auto agent =
        r.create("go_zero_shot", {{"checkpoint", checkpoint}, {"granularity", granularity}});
    Environment env(held_out.problem);
    agent->train(env, TrainBudget(), nullptr);
    return env.best_step_time_s();
  };
  const double per_op = zero_shot_time("policy");
  const double per_unit = zero_shot_time("unit");
  ASSERT_NE(per_op, per_unit) << "the test needs the two starts to differ";

  struct Run {
    std::vector<double> means;  // each update's mean sampled step time
    double best_s;
    std::int64_t samples;
  };
  auto finetune = [&](std::map<std::string, std::string> options) {
    options.insert({{"checkpoint", checkpoint},
                    {"finetune_steps", "4"},
                    {"samples_per_step", "4"},
                    {"unit_phase", "2"}});
    auto agent = r.create("go_finetune", options);
    Environment env(held_out.problem);
    Curve curve;
    agent->train(env, TrainBudget().with_steps(4), &curve);
    Run run{{}, env.best_step_time_s(), env.samples()};
    for (const auto& p : curve.points) run.means.push_back(p.mean_step_time_s);
    return run;
  };
  const Run best = finetune({{"granularity", "best"}});
  const Run from_units = finetune({{"granularity", "unit"}});
  const Run per_op_only = finetune({{"granularity", "policy"}, {"unit_phase", "0"}});
  const Run coarse_to_fine = finetune({{"granularity", "policy"}});
  ASSERT_EQ(best.means.size(), 4u);
  EXPECT_NE(per_op_only.means, coarse_to_fine.means);  // the unit phase changes training
  EXPECT_EQ(best.means, per_unit < per_op ? coarse_to_fine.means : per_op_only.means)
      << "per op " << per_op << " s, per unit " << per_unit << " s";
  EXPECT_EQ(from_units.means, coarse_to_fine.means);
  EXPECT_LE(best.best_s, std::min(per_op, per_unit));
  EXPECT_EQ(best.samples, per_op_only.samples + 2);  // the two greedy starts
  EXPECT_EQ(from_units.samples, per_op_only.samples + 1);
}

// A policy pretrained per unit: zero-shot's `best` reads it per op too, and fine-tuning from
// a greedy start decides per op once its unit phase is over (before, both stayed per unit).
TEST_F(GoCheckpointTest, APolicyPretrainedPerUnitIsAlsoReadAndFineTunedPerOp) {
  testing::ProblemFixture train(unit_graph(), "p100x2_pcie", 1);
  testing::ProblemFixture held_out(unit_graph(), "p100x2_pcie", 2);
  const std::string checkpoint = (dir_ / "go.ckpt").string();
  AgentRegistry r;
  register_builtin_agents(r);
  auto options = small_pretrain(checkpoint);
  options["unit_decisions"] = "true";
  ASSERT_NO_FATAL_FAILURE(pretrain(train.problem, options, 4));

  auto zero_shot = [&](const std::string& granularity) {
    auto agent =
        r.create("go_zero_shot", {{"checkpoint", checkpoint}, {"granularity", granularity}});
    Environment env(held_out.problem);
    agent->train(env, TrainBudget(), nullptr);
    return std::pair{env.samples(), env.best_step_time_s()};
  };
  const auto [as_trained_samples, as_trained_s] = zero_shot("policy");
  const auto [best_samples, best_s] = zero_shot("best");
  EXPECT_EQ(as_trained_samples, 1);
  EXPECT_EQ(best_samples, 2);  // per unit as trained, then per op
  EXPECT_LE(best_s, as_trained_s);

  auto finetune_means = [&](const std::string& unit_phase) {
    auto agent = r.create("go_finetune", {{"checkpoint", checkpoint},
                                          {"granularity", "unit"},
                                          {"finetune_steps", "4"},
                                          {"samples_per_step", "4"},
                                          {"unit_phase", unit_phase}});
    Environment env(held_out.problem);
    Curve curve;
    agent->train(env, TrainBudget().with_steps(4), &curve);
    std::vector<double> means;
    for (const auto& p : curve.points) means.push_back(p.mean_step_time_s);
    return means;
  };
  const auto two_per_unit = finetune_means("2");
  const auto all_per_unit = finetune_means("4");
  ASSERT_EQ(two_per_unit.size(), 4u);
  ASSERT_EQ(all_per_unit.size(), 4u);
  EXPECT_EQ(two_per_unit[0], all_per_unit[0]);
  EXPECT_EQ(two_per_unit[1], all_per_unit[1]);
  EXPECT_NE(std::vector(two_per_unit.begin() + 2, two_per_unit.end()),
            std::vector(all_per_unit.begin() + 2, all_per_unit.end()))
      << "the updates after the unit phase sample per op";
}

// The learning curve of a small go_one (seed 3, 8 samples per update) trained `steps`
// updates on `problem`, with `extra` options: the coarse-to-fine tests' runs.
std::vector<LearningCurvePoint> small_go_one_curve(const Problem& problem,
                                                   const std::map<std::string, std::string>& extra,
                                                   std::int64_t steps) {
  AgentRegistry r;
  register_builtin_agents(r);
  std::map<std::string, std::string> options = {
      {"hidden", "16"}, {"segment_length", "8"}, {"samples_per_step", "8"}, {"seed", "3"}};
  options.insert(extra.begin(), extra.end());
  auto agent = r.create("go_one", options);
  Environment env(problem);
  Curve curve;
  agent->train(env, TrainBudget().with_steps(steps), &curve);
  return curve.points;
}

// Coarse to fine (unit_phase): the first updates are exactly those of unit decisions, the
// later ones per op; unit_phase over the whole budget is unit decisions.
TEST(GoAgentTest, CoarseToFineDecidesPerUnitFirstThenPerOp) {
  testing::ProblemFixture f(unit_graph(), "p100x2_pcie", 1);
  AgentRegistry r;
  register_builtin_agents(r);
  auto curve_of = [&](const std::map<std::string, std::string>& extra) {
    std::vector<double> means;
    for (const auto& p : small_go_one_curve(f.problem, extra, 8)) {
      means.push_back(p.mean_step_time_s);
    }
    return means;
  };
  const auto units = curve_of({{"unit_decisions", "true"}});
  const auto per_op = curve_of({});
  const auto phased = curve_of({{"unit_phase", "4"}});
  ASSERT_EQ(units.size(), 8u);
  EXPECT_EQ(curve_of({{"unit_phase", "8"}}), units);
  EXPECT_EQ(std::vector<double>(phased.begin(), phased.begin() + 4),
            std::vector<double>(units.begin(), units.begin() + 4));
  EXPECT_NE(phased, units);
  EXPECT_NE(phased, per_op);

  const auto message = gopt::testing::error_of([&] {
    (void)r.create("go_one", {{"unit_phase", "4"}, {"unit_decisions", "true"}}, "exp.yaml");
  });
  EXPECT_TRUE(gopt::testing::contains(message, "agents.go_one.unit_phase")) << message;

  // A handover of 2 updates after a unit phase of 4: the unit phase is unchanged, the
  // handover's updates differ from an abrupt switch.
  const auto handed = curve_of({{"unit_phase", "4"}, {"unit_handover", "2"}});
  EXPECT_EQ(std::vector<double>(handed.begin(), handed.begin() + 4),
            std::vector<double>(units.begin(), units.begin() + 4));
  EXPECT_NE(handed, phased);
  const auto lone = gopt::testing::error_of([&] {
    (void)r.create("go_one", {{"unit_handover", "2"}}, "exp.yaml");
  });
  EXPECT_TRUE(gopt::testing::contains(lone, "agents.go_one.unit_handover")) << lone;
  EXPECT_TRUE(gopt::testing::contains(lone, "unit_phase > 0")) << lone;
}

// The unit phase's end with a patience: the first update after which the best step time has
// not improved over the last `patience` updates; without a valid time, never.
TEST(GoTrainingTest, UnitPhaseEndsOnceTheBestStopsImproving) {
  std::vector<LearningCurvePoint> curve;
  const double inf = std::numeric_limits<double>::infinity();
  for (const double best : {inf, inf, inf, 5.0, 4.0, 4.0, 4.0, 3.0, 3.0, 3.0}) {
    curve.push_back(LearningCurvePoint{static_cast<std::int64_t>(curve.size()) + 1, 0, best, 0, 0});
  }
  EXPECT_EQ(unit_phase_end(curve, 10, 8, 0), 8);    // no patience: the fixed phase
  EXPECT_EQ(unit_phase_end(curve, 10, 8, 2), 7);    // 4.0 after updates 5 and 7
  EXPECT_EQ(unit_phase_end(curve, 6, 8, 2), 8);     // not yet told at update 6
  EXPECT_EQ(unit_phase_end(curve, 10, 8, 1), 6);    // 4.0 after updates 5 and 6
  EXPECT_EQ(unit_phase_end(curve, 10, 5, 1), 5);    // the cap first
  EXPECT_EQ(unit_phase_end(curve, 10, 20, 3), 20);  // 5, 4, 3: always improving over 3
  EXPECT_EQ(
      unit_phase_end(std::vector<LearningCurvePoint>(curve.begin(), curve.begin() + 3), 3, 8, 1),
      8);  // no valid placement yet is no stall
}

// A unit phase with a patience decides per unit until unit_phase_end() of its own curve,
// then per op, and a patience needs a unit phase.
TEST(GoAgentTest, CoarseToFineWithPatienceSwitchesOnceTheUnitPhaseStalls) {
  testing::ProblemFixture f(unit_graph(), "p100x2_pcie", 1);
  AgentRegistry r;
  register_builtin_agents(r);
  auto curve_of = [&](const std::map<std::string, std::string>& extra) {
    return small_go_one_curve(f.problem, extra, 12);
  };
  const auto units = curve_of({{"unit_decisions", "true"}});
  const std::int64_t end = unit_phase_end(units, 12, 12, 2);
  ASSERT_LT(end, 12) << "the unit decisions' best should stall within 12 updates";
  const auto means = [](const std::vector<LearningCurvePoint>& c, std::int64_t n) {
    std::vector<double> m;
    for (std::int64_t i = 0; i < n; ++i)
      m.push_back(c[static_cast<std::size_t>(i)].mean_step_time_s);
    return m;
  };
  const auto patient = curve_of({{"unit_phase", "12"}, {"unit_patience", "2"}});
  ASSERT_EQ(patient.size(), 12u);
  EXPECT_EQ(means(patient, end), means(units, end));
  EXPECT_NE(means(patient, 12), means(units, 12));
  // Switching at `end` is what a fixed unit phase of `end` updates does.
  EXPECT_EQ(means(patient, 12), means(curve_of({{"unit_phase", std::to_string(end)}}), 12));

  const auto lone = gopt::testing::error_of([&] {
    (void)r.create("go_one", {{"unit_patience", "2"}}, "exp.yaml");
  });
  EXPECT_TRUE(gopt::testing::contains(lone, "agents.go_one.unit_patience")) << lone;
  EXPECT_TRUE(gopt::testing::contains(lone, "unit_phase > 0")) << lone;
}

// A checkpoint records unit decisions, and a zero-shot policy read from it decides per unit.
TEST_F(GoCheckpointTest, UnitDecisionsTravelInTheCheckpoint) {
  EXPECT_NE(policy_options_text(GoPolicyOptions().unit_decisions(true)).find("unit_decisions=1"),
            std::string::npos);
  testing::ProblemFixture a(unit_graph(), "p100x2_pcie", 1);
  testing::ProblemFixture held_out(unit_graph(33), "p100x2_pcie", 2);
  const std::string checkpoint = (dir_ / "go.ckpt").string();
  pretrain(a.problem,
           {{"hidden", "16"},
            {"segment_length", "4"},
            {"unit_decisions", "true"},
            {"checkpoint", checkpoint}},
           2);
  AgentRegistry r;
  register_builtin_agents(r);
  auto zero_shot = r.create("go_zero_shot", {{"checkpoint", checkpoint}});
  const auto placement = *zero_shot->propose(held_out.problem).placement;
  const auto tensors = make_graph_tensors(held_out.compiled);
  EXPECT_EQ(ops_off_their_unit(tensors, placement), 0);
}

TEST_F(GoCheckpointTest, UnitGateTravelsInTheCheckpoint) {
  const auto text = policy_options_text(GoPolicyOptions().unit_gate(true));
  EXPECT_NE(text.find("unit_gate=1"), std::string::npos);
  EXPECT_TRUE(parse_policy_options(text, kCheckpointVersion, "a.ckpt").unit_gate());
  // A checkpoint from before the gate records no unit_gate: its policy had none.
  std::string before = policy_options_text(GoPolicyOptions());
  const auto at = before.find(";unit_gate=0");
  ASSERT_NE(at, std::string::npos);
  before.erase(at, std::string(";unit_gate=0").size());
  EXPECT_FALSE(parse_policy_options(before, kCheckpointVersion, "a.ckpt").unit_gate());
  // Zero-shot rebuilds the gate head and reads its trained weights.
  testing::ProblemFixture a(unit_graph(), "p100x2_pcie", 1);
  testing::ProblemFixture held_out(unit_graph(33), "p100x2_pcie", 2);
  const std::string checkpoint = (dir_ / "go.ckpt").string();
  pretrain(a.problem,
           {{"hidden", "16"},
            {"segment_length", "4"},
            {"unit_gate", "true"},
            {"checkpoint", checkpoint}},
           2);
  const auto loaded = load_checkpoint(checkpoint, 1e-3);
  EXPECT_TRUE(loaded.policy->options.unit_gate());
  EXPECT_NE(loaded.policy->named_parameters().find("unit_gate.weight"), nullptr);
  // `gopt agents inspect` reports what the gate learned.
  const auto spread = placement_spread(checkpoint, held_out.compiled, 2);
  ASSERT_TRUE(spread.unit_gate_mean.has_value());
  EXPECT_GT(*spread.unit_gate_mean, 0.0);
  EXPECT_LT(*spread.unit_gate_mean, 1.0);
  EXPECT_NE(*spread.unit_gate_mean, 0.5);  // trained away from the even mix
  EXPECT_GE(*spread.ops_following_unit, 0.0);
  EXPECT_LE(*spread.ops_following_unit, 1.0);
  AgentRegistry r;
  register_builtin_agents(r);
  auto zero_shot = r.create("go_zero_shot", {{"checkpoint", checkpoint}});
  EXPECT_TRUE(zero_shot->propose(held_out.problem).placement.has_value());
  // The gate mixes per-op decisions; with unit decisions it has nothing to gate.
  const auto message = gopt::testing::error_of([&] {
    (void)r.create("go_one", {{"unit_gate", "true"}, {"unit_decisions", "true"}}, "exp.yaml");
  });
  EXPECT_TRUE(gopt::testing::contains(message, "agents.go_one.unit_gate")) << message;
}

// With validation graphs the checkpoint is the checked policy whose zero-shot placement of
// them is best, not the last one; the checks change nothing in training. The policies
// checked are recomputed here by pretraining as long as each check point (training is
// deterministic, so a shorter budget gives the same first updates).
TEST_F(GoCheckpointTest, ValidationKeepsThePolicyThatPlacesTheValidationGraphsBest) {
  testing::ProblemFixture a(parallel_chains(2, 6), "p100x2_pcie", 1);
  testing::ProblemFixture b(parallel_chains(3, 4), "p100x2_pcie", 2);
  testing::ProblemFixture validation(parallel_chains(4, 5), "p100x2_pcie", 4);
  AgentRegistry r;
  register_builtin_agents(r);
  const std::map<std::string, std::string> sizes = {
      {"hidden", "16"}, {"segment_length", "4"}, {"max_devices", "4"}, {"validate_every", "2"}};
  auto pretrain = [&](std::int64_t steps, bool validate, const std::string& checkpoint,
                      Curve& curve) {
    auto options = sizes;
    options["checkpoint"] = checkpoint;
    auto agent = r.create("go_pretrain", options);
    auto* transferable = dynamic_cast<TransferableAgent*>(agent.get());
    Environment env_a(a.problem);
    Environment env_b(b.problem);
    Environment env_v(validation.problem);
    if (validate) transferable->set_validation({&env_v});
    transferable->train_on_set({&env_a, &env_b}, TrainBudget().with_steps(steps), &curve);
    if (!validate) {
      EXPECT_EQ(env_v.samples(), 0);
    }
    return transferable->checkpoint_steps();
  };
  auto zero_shot_s = [&](const std::string& checkpoint) {
    auto agent = r.create("go_zero_shot", {{"checkpoint", checkpoint}});
    Environment env(validation.problem);
    agent->train(env, TrainBudget(), nullptr);
    return Environment(validation.problem).evaluate(agent->propose(validation.problem)).step_time_s;
  };
  const std::string chosen = (dir_ / "chosen.ckpt").string();
  Curve with_validation;
  const std::int64_t steps = pretrain(8, true, chosen, with_validation);
  double best_s = std::numeric_limits<double>::infinity();
  std::int64_t best_steps = 0;
  for (std::int64_t k = 2; k <= 8; k += 2) {
    const std::string path = (dir_ / ("after" + std::to_string(k) + ".ckpt")).string();
    Curve curve;
    EXPECT_EQ(pretrain(k, false, path, curve), k);  // without validation: the last policy
    const double s = zero_shot_s(path);
    if (s < best_s) {
      best_s = s;
      best_steps = k;
    }
    if (k == 8) {
      ASSERT_EQ(curve.points.size(), with_validation.points.size());
      for (std::size_t i = 0; i < curve.points.size(); ++i) {
        EXPECT_EQ(curve.points[i].best_step_time_s, with_validation.points[i].best_step_time_s);
        EXPECT_EQ(curve.points[i].samples, with_validation.points[i].samples);
      }
    }
  }
  EXPECT_EQ(steps, best_steps);
  EXPECT_LT(best_steps, 8);  // an earlier policy here, so the last one would not pass
  EXPECT_EQ(zero_shot_s(chosen), best_s);
}

TEST_F(GoCheckpointTest, ValidationNeedsACheckpointFile) {
  testing::ProblemFixture a(parallel_chains(2, 3), "p100x2_pcie", 1);
  AgentRegistry r;
  register_builtin_agents(r);
  auto agent = r.create("go_pretrain", {{"hidden", "16"}, {"segment_length", "4"}});
  auto* transferable = dynamic_cast<TransferableAgent*>(agent.get());
  Environment env(a.problem);
  Environment env_v(a.problem);
  transferable->set_validation({&env_v});
  EXPECT_THROW(transferable->train_on_set({&env}, TrainBudget().with_steps(2), nullptr),
               core::Error);
  EXPECT_THROW(r.create("go_pretrain", {{"validate_every", "0"}}), core::InputError);
}

TEST_F(GoCheckpointTest, BadCheckpointsAreClearErrors) {
  testing::ProblemFixture f(parallel_chains(2, 3), "p100x4_pcie", 1);
  AgentRegistry r;
  register_builtin_agents(r);
  auto missing = (dir_ / "missing.ckpt").string();
  auto message = gopt::testing::error_of([&] {
    (void)r.create("go_zero_shot", {{"checkpoint", missing}})->propose(f.problem);
  });
  EXPECT_TRUE(gopt::testing::contains(message, missing)) << message;
  EXPECT_TRUE(gopt::testing::contains(message, "go_pretrain")) << message;

  message = gopt::testing::error_of([&] { (void)r.create("go_zero_shot")->propose(f.problem); });
  EXPECT_TRUE(gopt::testing::contains(message, "checkpoint")) << message;

  auto corrupt = (dir_ / "corrupt.ckpt").string();
  std::ofstream(corrupt) << "this is not a checkpoint";
  message = gopt::testing::error_of([&] {
    (void)r.create("go_zero_shot", {{"checkpoint", corrupt}})->propose(f.problem);
  });
  EXPECT_TRUE(gopt::testing::contains(message, corrupt)) << message;

  // A policy for two devices cannot place on four.
  testing::ProblemFixture small(parallel_chains(2, 3), "p100x2_pcie", 1);
  auto two = (dir_ / "two.ckpt").string();
  auto pretrain = r.create(
      "go_pretrain",
      {{"hidden", "16"}, {"segment_length", "4"}, {"max_devices", "2"}, {"checkpoint", two}});
  Environment env(small.problem);
  pretrain->train(env, TrainBudget().with_steps(1), nullptr);
  ASSERT_TRUE(std::filesystem::exists(two));
  message = gopt::testing::error_of([&] {
    (void)r.create("go_zero_shot", {{"checkpoint", two}})->propose(f.problem);
  });
  EXPECT_TRUE(gopt::testing::contains(message, "max_devices")) << message;

  // Truncated: the first half of a good checkpoint.
  auto truncated = (dir_ / "truncated.ckpt").string();
  {
    std::ifstream in(two, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::ofstream(truncated, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  }
  message = gopt::testing::error_of([&] {
    (void)r.create("go_zero_shot", {{"checkpoint", truncated}})->propose(small.problem);
  });
  EXPECT_TRUE(gopt::testing::contains(message, truncated)) << message;
}

// Stops training by throwing from the observer after `limit` updates, as the runner's
// recorder does when Ctrl-C sets its stop flag.
class StopAfter final : public TrainingObserver {
 public:
  explicit StopAfter(std::size_t limit) : limit_(limit) {}
  struct Stopped {};
  void on_training_step(const LearningCurvePoint& p) override {
    points.push_back(p);
    if (points.size() == limit_) throw Stopped{};
  }
  std::vector<LearningCurvePoint> points;

 private:
  std::size_t limit_;
};

// Trains `agent` on `problem` for `steps` updates three times: whole; stopped after
// `stop_after` updates, writing its snapshot at `snapshot`; and resumed from that snapshot.
// The resumed run must end exactly where the whole one does: every curve point (the
// restored ones replayed first), the samples, the best time and the proposed decision.
void expect_resume_as_if_never_stopped(const Problem& problem, const std::string& agent,
                                       const std::map<std::string, std::string>& options,
                                       std::int64_t steps, std::size_t stop_after,
                                       const std::string& snapshot) {
  AgentRegistry r;
  register_builtin_agents(r);
  const TrainBudget budget = TrainBudget().with_steps(steps);
  TrainSnapshots snapshots;
  snapshots.path = snapshot;
  snapshots.identity = "job / " + agent;
  snapshots.interval_s = 1e9;  // only the snapshot written when stopped

  auto whole = r.create(agent, options);
  Environment whole_env(problem);
  Curve whole_curve;
  whole->train(whole_env, budget, &whole_curve);
  ASSERT_EQ(whole_curve.points.size(), static_cast<std::size_t>(steps));

  auto first = r.create(agent, options);
  first->set_snapshots(snapshots);
  Environment first_env(problem);
  StopAfter stop(stop_after);
  EXPECT_THROW(first->train(first_env, budget, &stop), StopAfter::Stopped);
  ASSERT_TRUE(std::filesystem::exists(snapshots.path));

  auto second = r.create(agent, options);
  second->set_snapshots(snapshots);
  Environment second_env(problem);
  Curve resumed;
  second->train(second_env, budget, &resumed);
  ASSERT_EQ(resumed.points.size(), whole_curve.points.size());
  for (std::size_t i = 0; i < resumed.points.size(); ++i) {
    EXPECT_EQ(resumed.points[i].step, whole_curve.points[i].step);
    EXPECT_EQ(resumed.points[i].samples, whole_curve.points[i].samples);
    EXPECT_EQ(resumed.points[i].mean_step_time_s, whole_curve.points[i].mean_step_time_s) << i;
    EXPECT_EQ(resumed.points[i].best_step_time_s, whole_curve.points[i].best_step_time_s) << i;
  }
  EXPECT_EQ(second_env.samples(), whole_env.samples());
  EXPECT_EQ(second_env.best_step_time_s(), whole_env.best_step_time_s());
  // The samples that improved the best, those before the snapshot included.
  ASSERT_FALSE(whole_env.improvements().empty());
  EXPECT_EQ(second_env.improvements(), whole_env.improvements());
  const auto a = whole->propose(problem);
  const auto b = second->propose(problem);
  EXPECT_EQ(a.placement, b.placement);
  EXPECT_EQ(a.priority, b.priority);
  EXPECT_EQ(a.fusion, b.fusion);
}

// A training run stopped after 3 updates and resumed from its snapshot ends exactly where
// the uninterrupted run does: curve, best time and decision (go_multitask: all three tasks,
// both random streams, the optimizer state and the reward reference come back).
TEST_F(GoCheckpointTest, StoppedTrainingResumesFromItsSnapshotAsIfNeverStopped) {
  testing::ProblemFixture f(parallel_chains(3, 4), "p100x4_pcie", 2);
  expect_resume_as_if_never_stopped(
      f.problem, "go_multitask",
      {{"hidden", "16"}, {"segment_length", "4"}, {"seed", "3"}, {"samples_per_step", "4"}}, 6, 3,
      (dir_ / "job.pt").string());
}

// A run stopped during the handover (updates 2 to 4) resumes on the same schedule: the
// blend is a function of the update's number, and the snapshot holds the policy's own
// (per-op) options.
TEST_F(GoCheckpointTest, StoppedHandoverResumesAsIfNeverStopped) {
  testing::ProblemFixture f(unit_graph(), "p100x2_pcie", 1);
  expect_resume_as_if_never_stopped(f.problem, "go_one",
                                    {{"hidden", "16"},
                                     {"segment_length", "8"},
                                     {"samples_per_step", "4"},
                                     {"seed", "3"},
                                     {"unit_phase", "2"},
                                     {"unit_handover", "3"}},
                                    7, 3, (dir_ / "handover.pt").string());
}

// A run stopped after its unit phase ended early (unit_patience) resumes on the same
// schedule: the switch is recomputed from the restored curve, not kept in the snapshot.
TEST_F(GoCheckpointTest, StoppedAfterAnEarlyUnitPhaseEndResumesAsIfNeverStopped) {
  testing::ProblemFixture f(unit_graph(), "p100x2_pcie", 1);
  const auto units = small_go_one_curve(f.problem, {{"unit_decisions", "true"}}, 12);
  ASSERT_LT(unit_phase_end(units, 12, 12, 2), 9) << "the unit phase should end before the stop";
  expect_resume_as_if_never_stopped(f.problem, "go_one",
                                    {{"hidden", "16"},
                                     {"segment_length", "8"},
                                     {"samples_per_step", "8"},
                                     {"seed", "3"},
                                     {"unit_phase", "12"},
                                     {"unit_patience", "2"}},
                                    12, 9, (dir_ / "patience.pt").string());
}

// A snapshot of another job (identity), or a file that is not a snapshot, is not used:
// training starts over, as without one.
TEST_F(GoCheckpointTest, ForeignOrDamagedSnapshotsStartTrainingOver) {
  testing::ProblemFixture f(parallel_chains(2, 4), "p100x2_pcie", 1);
  AgentRegistry r;
  register_builtin_agents(r);
  const std::map<std::string, std::string> options = {
      {"hidden", "16"}, {"segment_length", "4"}, {"samples_per_step", "4"}};
  TrainSnapshots snapshots;
  snapshots.path = (dir_ / "job.pt").string();
  snapshots.identity = "job A";
  snapshots.interval_s = 0;  // after every update
  {
    auto agent = r.create("go_one", options);
    agent->set_snapshots(snapshots);
    Environment env(f.problem);
    agent->train(env, TrainBudget().with_steps(3), nullptr);
  }
  ASSERT_TRUE(std::filesystem::exists(snapshots.path));
  auto starts_at = [&](const TrainSnapshots& s) {
    auto agent = r.create("go_one", options);
    agent->set_snapshots(s);
    Environment env(f.problem);
    Curve curve;
    agent->train(env, TrainBudget().with_steps(4), &curve);
    return curve.points.empty() ? std::int64_t{-1} : curve.points.front().step;
  };
  TrainSnapshots other = snapshots;
  other.identity = "job B";
  EXPECT_EQ(starts_at(other), 1);      // not job B's: starts over (and overwrites it)
  EXPECT_EQ(starts_at(snapshots), 1);  // job B's now: job A starts over too
  std::ofstream(snapshots.path) << "not a snapshot";
  EXPECT_EQ(starts_at(snapshots), 1);
  // Job A's own snapshot after 4 updates: a longer budget continues from it.
  auto agent = r.create("go_one", options);
  agent->set_snapshots(snapshots);
  Environment env(f.problem);
  Curve curve;
  agent->train(env, TrainBudget().with_steps(6), &curve);
  ASSERT_EQ(curve.points.size(), 6u);  // four replayed, two new
  EXPECT_EQ(curve.points[4].step, 5);
}

}  // namespace
}  // namespace gopt::agents::go
