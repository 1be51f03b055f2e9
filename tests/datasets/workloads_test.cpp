// The workload suite: every graph valid with a well-formed backward pass, sizes in range,
// hand-counted small configurations, overrides and their errors, load_graph, round trips.
#include <gtest/gtest.h>

#include <filesystem>
#include <set>

#include "core/compiled_graph.h"
#include "core/errors.h"
#include "core/graph_io.h"
#include "core/graph_summary.h"
#include "datasets/workload_registry.h"
#include "datasets/workloads.h"
#include "tests/datasets/graph_checks.h"
#include "tests/support/expect_error.h"

namespace gopt::datasets {
namespace {

using gopt::testing::contains;
using gopt::testing::error_of;

using testing::check_training_graph;

WorkloadRegistry suite() {
  WorkloadRegistry r;
  register_builtin_workloads(r);
  return r;
}

TEST(WorkloadSuiteTest, HasTheFourteenPaperGraphs) {
  auto r = suite();
  EXPECT_EQ(r.names(), (std::vector<std::string>{
                           "rnnlm_2", "rnnlm_4", "rnnlm_8", "gnmt_2", "gnmt_4", "gnmt_8",
                           "transformer_xl_2", "transformer_xl_4", "transformer_xl_8",
                           "inception_v3", "amoebanet", "wavenet_2", "wavenet_4", "wavenet_5"}));
}

// Every suite graph: a validated DAG, every op with a phase, every backward op reachable
// from its forward op, updates colocated with their variables, metadata present.
TEST(WorkloadSuiteTest, EveryGraphIsAWellFormedTrainingStep) {
  auto r = suite();
  for (const auto& info : r.list()) {
    SCOPED_TRACE(info.name);
    core::Graph g = r.generate(info.name);
    EXPECT_NO_THROW(g.validate());
    EXPECT_EQ(g.name(), info.name);
    EXPECT_EQ(g.family(), info.family);
    EXPECT_EQ(check_training_graph(g), "");
    std::set<core::Phase> phases;
    std::int64_t with_layer = 0;
    core::Bytes params = 0;
    for (core::NodeId v = 0; v < g.num_nodes(); ++v) {
      const auto& n = g.node(v);
      phases.insert(n.phase);
      with_layer += n.layer >= 0 ? 1 : 0;
      params += n.param_bytes;
      EXPECT_GE(n.flops, 0);
    }
    EXPECT_EQ(phases, (std::set<core::Phase>{core::Phase::kForward, core::Phase::kBackward,
                                             core::Phase::kUpdate}));
    EXPECT_GT(with_layer, g.num_nodes() / 2) << "most ops belong to a layer";
    // Adam: the variables plus two slots each.
    EXPECT_EQ(params, 3 * 4 * std::stoll(g.attrs().at("num_parameters")));
    auto s = core::summarize(core::CompiledGraph::compile(g));
    EXPECT_GT(s.total_flops, 1e11);
  }
}

TEST(WorkloadSuiteTest, Gnmt8IsAsLargeAsThePapersLargestGraphs) {
  auto g = suite().generate("gnmt_8");
  EXPECT_GE(g.num_nodes(), 50000);
  EXPECT_LE(g.num_nodes(), 80000);
}

TEST(WorkloadSuiteTest, SizesGrowWithLayers) {
  auto r = suite();
  for (const char* family : {"rnnlm_", "gnmt_", "transformer_xl_"}) {
    auto a = r.generate(std::string(family) + "2").num_nodes();
    auto b = r.generate(std::string(family) + "4").num_nodes();
    auto c = r.generate(std::string(family) + "8").num_nodes();
    EXPECT_LT(a, b) << family;
    EXPECT_LT(b, c) << family;
  }
}

TEST(WorkloadSuiteTest, PublishedParameterCounts) {
  auto r = suite();
  // Inception-v3 without the auxiliary head: 23.8 M parameters (TF-slim).
  auto inception = std::stod(r.generate("inception_v3").attrs().at("num_parameters"));
  EXPECT_NEAR(inception, 23.8e6, 0.01 * 23.8e6);
  // Inception-v3 forward: about 5.7 G multiply-adds per 299x299 image.
  core::Graph g = r.generate("inception_v3", {{"batch", "1"}});
  double forward = 0;
  for (core::NodeId v = 0; v < g.num_nodes(); ++v) {
    const auto& n = g.node(v);
    if (n.phase == core::Phase::kForward && n.kind == core::OpKind::kConv) forward += n.flops;
  }
  EXPECT_NEAR(forward / 2, 5.7e9, 0.05 * 5.7e9);
  // RNNLM: embedding + per layer (2h x 4h + 4h) + softmax (h x v + v).
  auto rnnlm = std::stoll(r.generate("rnnlm_2").attrs().at("num_parameters"));
  const std::int64_t h = 2048, v = 40000;
  EXPECT_EQ(rnnlm, v * h + 2 * (2 * h * 4 * h + 4 * h) + h * v + v);
}

TEST(WorkloadSuiteTest, SmallRnnlmCountedByHand) {
  // layers=1, seq_len=1. Forward 34: embedding 5 (ids, var, read, GatherV2, Unpack),
  // layer 5 (kernel and bias with reads, zero state), cell 14, softmax 8 (concat, 2 vars
  // with reads, MatMul, BiasAdd, labels), loss 2. Backward 42: seed 1, mean 2, xent 2,
  // softmax BiasAddGrad 1 + MatMul 2 + Slice 1, Pack 1, UnsortedSegmentSum 1 and the cell's
  // 31: new_h Mul (Mul, Sum, Reshape per side) 6, SigmoidGrad 1, TanhGrad 1, new_c add (Sum,
  // Reshape per side) 4, Mul(i, j) 6, TanhGrad 1, SigmoidGrad 1, Mul(c, f) for f only 3,
  // SigmoidGrad 1, forget-bias add 2, Split -> ConcatV2 1, BiasAddGrad 1, MatMul 2 (input
  // and kernel), concat -> Slice for x only 1. Updates 6: five ApplyAdam and train_op.
  auto g = suite().generate(
      "rnnlm_2",
      {{"layers", "1"}, {"seq_len", "1"}, {"hidden", "8"}, {"vocab", "10"}, {"batch", "2"}});
  EXPECT_EQ(g.num_nodes(), 82);
  EXPECT_EQ(check_training_graph(g), "");
  // Each extra step adds a cell (14 forward), its gradient ops and AddNs for c and h.
  auto g2 = suite().generate(
      "rnnlm_2",
      {{"layers", "1"}, {"seq_len", "2"}, {"hidden", "8"}, {"vocab", "10"}, {"batch", "2"}});
  EXPECT_GT(g2.num_nodes(), g.num_nodes() + 14 + 31);
}

TEST(WorkloadSuiteTest, MetadataForBaselines) {
  auto r = suite();
  core::Graph gnmt = r.generate("gnmt_2", {{"src_len", "3"}, {"tgt_len", "3"}});
  const auto& cell = gnmt.node(*gnmt.find("decoder/layer_1/t_2/MatMul"));
  EXPECT_EQ(cell.layer, 1);
  EXPECT_EQ(cell.phase, core::Phase::kForward);
  EXPECT_EQ(gnmt.node(*gnmt.find("gradients/decoder/layer_1/t_2/MatMul_grad/MatMul")).layer, 1);
  EXPECT_EQ(gnmt.node(*gnmt.find("encoder/layer_1/kernel")).colocation_group,
            "encoder/layer_1/kernel");
  core::Graph inception = r.generate("inception_v3", {{"batch", "1"}});
  const auto& branch =
      inception.node(*inception.find("InceptionV3/Mixed_6b/Branch_2/Conv2d_0e_1x7/Conv2D"));
  EXPECT_EQ(branch.branch, 2);
  EXPECT_GT(branch.layer, 0);
  core::Graph amoeba = r.generate("amoebanet", {{"cells", "1"}, {"image", "64"}});
  std::set<std::int32_t> branches;
  for (core::NodeId v = 0; v < amoeba.num_nodes(); ++v) branches.insert(amoeba.node(v).branch);
  EXPECT_EQ(branches, (std::set<std::int32_t>{-1, 0, 1, 2, 3, 4}));
}

TEST(WorkloadSuiteTest, OverridesChangeTheGraphAndAreRecorded) {
  auto r = suite();
  core::Graph g = r.generate("gnmt_2", {{"hidden", "64"}, {"tgt_len", "4"}, {"optimizer", "sgd"}});
  EXPECT_EQ(g.attrs().at("hidden"), "64");
  EXPECT_EQ(g.attrs().at("tgt_len"), "4");
  EXPECT_EQ(g.attrs().at("optimizer"), "sgd");
  EXPECT_EQ(g.attrs().at("workload"), "gnmt_2");
  EXPECT_TRUE(g.find("encoder/layer_1/kernel/ApplyGradientDescent").has_value());
  EXPECT_LT(g.num_nodes(), r.generate("gnmt_2").num_nodes());
}

TEST(WorkloadSuiteTest, BadNamesAndOverridesAreClearErrors) {
  auto r = suite();
  auto unknown = error_of([&] { (void)r.generate("gnmt_16"); });
  EXPECT_TRUE(contains(unknown, "gnmt_16")) << unknown;
  EXPECT_TRUE(contains(unknown, "gnmt_8")) << unknown;
  EXPECT_TRUE(contains(unknown, "wavenet_5")) << unknown;
  auto key = error_of([&] { (void)r.generate("gnmt_8", {{"hiden", "5"}}); });
  EXPECT_TRUE(contains(key, "unknown hyperparameter 'hiden'")) << key;
  EXPECT_TRUE(contains(key, "hidden, vocab")) << key;
  auto range = error_of([&] { (void)r.generate("gnmt_8", {{"layers", "0"}}); });
  EXPECT_TRUE(contains(range, "--set layers")) << range;
  EXPECT_TRUE(contains(range, "[1, 32]")) << range;
  auto text = error_of([&] { (void)r.generate("rnnlm_2", {{"batch", "12abc"}}); });
  EXPECT_TRUE(contains(text, "'12abc'")) << text;
  auto choice = error_of([&] { (void)r.generate("rnnlm_2", {{"optimizer", "lamb"}}); });
  EXPECT_TRUE(contains(choice, "one of adam, sgd")) << choice;
  Overrides o;
  auto eq = error_of([&] { parse_override("layers", o); });
  EXPECT_TRUE(contains(eq, "key=value")) << eq;
  parse_override("layers=3", o);
  EXPECT_EQ(o.at("layers"), "3");
}

TEST(WorkloadSuiteTest, RoundTripsThroughTheGraphFileFormat) {
  auto r = suite();
  auto path = std::filesystem::temp_directory_path() / "gopt_workload_roundtrip.json";
  for (const char* name : {"gnmt_2", "inception_v3", "wavenet_2", "transformer_xl_2"}) {
    Overrides small;
    if (std::string(name) == "gnmt_2") small = {{"src_len", "4"}, {"tgt_len", "4"}};
    core::Graph g = r.generate(name, small);
    core::write_graph_file(g, path);
    EXPECT_TRUE(core::same_graph(g, core::read_graph_file(path))) << name;
  }
  std::filesystem::remove(path);
}

TEST(WorkloadSuiteTest, DocsTableIsUpToDate) {
  // docs/workloads.md holds the output of `gopt graph list --markdown`.
  std::string docs = core::read_text_file(std::string(GOPT_SOURCE_DIR) + "/docs/workloads.md");
  EXPECT_TRUE(contains(docs, suite_table_markdown(suite())))
      << "regenerate the table in docs/workloads.md with `gopt graph list --markdown`";
}

TEST(WorkloadSuiteTest, LoadGraphAcceptsNamesAndFiles) {
  auto r = suite();
  LoadOptions small;
  small.overrides = {{"seq_len", "2"}};
  core::Graph by_name = load_graph("rnnlm_2", r, small);
  EXPECT_EQ(by_name.name(), "rnnlm_2");
  auto path = std::filesystem::temp_directory_path() / "gopt_load_graph.json";
  core::write_graph_file(by_name, path);
  EXPECT_TRUE(core::same_graph(by_name, load_graph(path.string(), r)));
  auto err = error_of([&] { (void)load_graph("rnnlm_3", r); });
  EXPECT_TRUE(contains(err, "rnnlm_3")) << err;
  EXPECT_TRUE(contains(err, "not a suite workload")) << err;
  EXPECT_TRUE(contains(err, "rnnlm_2, rnnlm_4")) << err;
  auto file_set = error_of([&] { (void)load_graph(path.string(), r, small); });
  EXPECT_TRUE(contains(file_set, "suite workloads")) << file_set;
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace gopt::datasets
