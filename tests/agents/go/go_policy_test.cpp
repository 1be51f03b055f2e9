// GO's policy network (agents/go/go_model.h, go_features.h, segment_attention.h): shapes and
// device masking, the gradient stop of the segment memory, the fused segment attention
// against its reference and its CPU paths, decision units, the unit blend and gate, and
// the encoder's permutation equivariance.
#include <gtest/gtest.h>

#include <limits>
#include <map>
#include <numeric>
#include <random>
#include <set>

#include "agents/cpu_numerics.h"
#include "agents/go/go_agent.h"
#include "agents/go/go_features.h"
#include "agents/go/go_model.h"
#include "agents/go/go_training.h"
#include "agents/go/segment_attention.h"
#include "agents/placement_utils.h"
#include "agents/registry.h"
#include "agents/torch_utils.h"
#include "core/errors.h"
#include "datasets/workload_registry.h"
#include "tests/agents/agents_test_util.h"
#include "tests/agents/go/go_test_support.h"
#include "tests/support/expect_error.h"
#include "tests/support/random_dag.h"

namespace gopt::agents::go {
namespace {

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
// scope_exploration's noise groups (docs/design-decisions.md "GO: learning"):
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

// The handover's blend: at 0 every op of a unit has the unit's mean logits (what unit
// decisions give), at 1 its own, in between the straight line from one to the other.
TEST(GoPolicyTest, UnitBlendMovesFromTheUnitsMeanToTheOpsOwnLogits) {
  testing::ProblemFixture f(unit_graph(), "p100x2_pcie", 1);
  const GraphTensors tensors = make_graph_tensors(f.compiled);
  GoPolicy policy = small_policy(5, 8);
  torch::NoGradGuard no_grad;
  auto logits_at = [&](bool units, double blend) {
    policy->options.with_unit_decisions(units).with_unit_blend(blend);
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
  GoPolicy policy(GoPolicyOptions()
                      .with_hidden(16)
                      .with_heads(2)
                      .with_segment_length(8)
                      .with_max_devices(4)
                      .with_unit_gate(true));
  initialise(*policy, rng);
  policy->reset_heads();
  auto probs_at = [&](bool gate, bool units) {
    torch::NoGradGuard no_grad;
    policy->options.with_unit_gate(gate).with_unit_decisions(units);
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
  GraphSageEncoder encoder(GoPolicyOptions().with_hidden(16));
  initialise(*encoder, rng);
  torch::NoGradGuard no_grad;
  auto original = encoder->forward(g);
  auto renumbered = encoder->forward(h);
  EXPECT_TRUE(torch::allclose(renumbered, original.index_select(0, p), 1e-5, 1e-5));
  // And the encoder is not trivially constant.
  EXPECT_GT((original[0] - original[1]).abs().max().item<float>(), 1e-3F);
}

}  // namespace
}  // namespace gopt::agents::go
