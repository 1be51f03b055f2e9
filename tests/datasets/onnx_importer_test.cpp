// ONNX import on ModelProto fixtures built here (no model files committed): FLOPs and
// parameter bytes by hand, dynamic batch, external data, --training, the error cases, a
// ResNet-50 at batch 1 against its published 4.1 G multiply-adds, and (when Debian's
// python3-torchvision is installed) models exported by datasets/export_onnx_models.py.
#include "datasets/onnx_importer.h"

#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "core/errors.h"
#include "tests/datasets/graph_checks.h"
#include "tests/support/expect_error.h"
#include "tests/support/files.h"
#include "tests/support/run_command.h"

namespace gopt::datasets {
namespace {

using gopt::testing::contains;
using gopt::testing::error_of;

using testing::check_training_graph;

constexpr int kFloat = onnx::TensorProto_DataType_FLOAT;

// Builds a ModelProto (opset 13) with chained calls.
class ModelBuilder {
 public:
  ModelBuilder() {
    model_.set_ir_version(7);
    model_.set_producer_name("gopt-test");
    auto* opset = model_.add_opset_import();
    opset->set_domain("");
    opset->set_version(13);
    model_.mutable_graph()->set_name("test");
  }
  /// A graph input; a dim < 0 is symbolic ("batch").
  ModelBuilder& input(const std::string& name, const std::vector<std::int64_t>& dims) {
    value(model_.mutable_graph()->add_input(), name, dims);
    return *this;
  }
  ModelBuilder& output(const std::string& name) {
    auto* v = model_.mutable_graph()->add_output();
    v->set_name(name);
    v->mutable_type()->mutable_tensor_type()->set_elem_type(kFloat);
    return *this;
  }
  /// An initializer with dims only: its data lives in an external file that is not there.
  ModelBuilder& weight(const std::string& name, const std::vector<std::int64_t>& dims) {
    auto* t = model_.mutable_graph()->add_initializer();
    t->set_name(name);
    t->set_data_type(kFloat);
    for (auto d : dims) t->add_dims(d);
    t->set_data_location(onnx::TensorProto_DataLocation_EXTERNAL);
    auto* loc = t->add_external_data();
    loc->set_key("location");
    loc->set_value("missing_weights.bin");
    return *this;
  }
  ModelBuilder& node(
      const std::string& op, const std::vector<std::string>& inputs,
      const std::vector<std::string>& outputs,
      const std::vector<std::pair<std::string, std::vector<std::int64_t>>>& ints = {},
      const std::string& domain = "") {
    auto* n = model_.mutable_graph()->add_node();
    n->set_op_type(op);
    n->set_name(outputs.front() + "_node");
    n->set_domain(domain);
    for (const auto& i : inputs) n->add_input(i);
    for (const auto& o : outputs) n->add_output(o);
    for (const auto& [key, values] : ints) {
      auto* a = n->add_attribute();
      a->set_name(key);
      if (key == "transB" || key == "transA" || key == "axis" || key == "group" || key == "to") {
        a->set_type(onnx::AttributeProto_AttributeType_INT);
        a->set_i(values.front());
      } else {
        a->set_type(onnx::AttributeProto_AttributeType_INTS);
        for (auto v : values) a->add_ints(v);
      }
    }
    return *this;
  }
  /// A Constant node holding int64 values (dims {}: a scalar).
  ModelBuilder& constant(const std::string& name, const std::vector<std::int64_t>& values,
                         const std::vector<std::int64_t>& dims) {
    auto* n = model_.mutable_graph()->add_node();
    n->set_op_type("Constant");
    n->set_name(name + "_node");
    n->add_output(name);
    auto* a = n->add_attribute();
    a->set_name("value");
    a->set_type(onnx::AttributeProto_AttributeType_TENSOR);
    fill_int64(a->mutable_t(), values, dims);
    return *this;
  }
  /// An int64 initializer with its values inline.
  ModelBuilder& int_weight(const std::string& name, const std::vector<std::int64_t>& values,
                           const std::vector<std::int64_t>& dims) {
    auto* t = model_.mutable_graph()->add_initializer();
    t->set_name(name);
    fill_int64(t, values, dims);
    return *this;
  }
  /// Declares an operator set, e.g. a custom domain.
  ModelBuilder& opset(const std::string& domain, std::int64_t version) {
    auto* o = model_.add_opset_import();
    o->set_domain(domain);
    o->set_version(version);
    return *this;
  }
  [[nodiscard]] std::string bytes() const { return model_.SerializeAsString(); }

 private:
  static void fill_int64(onnx::TensorProto* t, const std::vector<std::int64_t>& values,
                         const std::vector<std::int64_t>& dims) {
    t->set_data_type(onnx::TensorProto_DataType_INT64);
    for (auto d : dims) t->add_dims(d);
    for (auto v : values) t->add_int64_data(v);
  }
  static void value(onnx::ValueInfoProto* v, const std::string& name,
                    const std::vector<std::int64_t>& dims) {
    v->set_name(name);
    auto* tt = v->mutable_type()->mutable_tensor_type();
    tt->set_elem_type(kFloat);
    auto* shape = tt->mutable_shape();
    for (auto d : dims) {
      auto* dim = shape->add_dim();
      if (d < 0) {
        dim->set_dim_param("batch");
      } else {
        dim->set_dim_value(d);
      }
    }
  }
  onnx::ModelProto model_;
};

// x [batch, 784] -> Gemm(256) -> Relu -> Gemm(10).
ModelBuilder mlp() {
  ModelBuilder m;
  m.input("x", {-1, 784})
      .weight("w1", {256, 784})
      .weight("b1", {256})
      .weight("w2", {10, 256})
      .weight("b2", {10})
      .node("Gemm", {"x", "w1", "b1"}, {"h"}, {{"transB", {1}}})
      .node("Relu", {"h"}, {"r"})
      .node("Gemm", {"r", "w2", "b2"}, {"y"}, {{"transB", {1}}})
      .output("y");
  return m;
}

core::NodeAttrs by_name(const core::Graph& g, const std::string& name) {
  auto id = g.find(name);
  EXPECT_TRUE(id.has_value()) << name;
  return g.node(*id);
}

TEST(OnnxImporterTest, MlpFlopsBytesAndParametersByHand) {
  auto r = import_onnx_bytes(mlp().bytes(), "mlp.onnx", OnnxImportOptions().with_batch(8));
  const auto& g = r.graph;
  EXPECT_EQ(g.name(), "mlp");
  EXPECT_EQ(g.family(), "onnx");
  EXPECT_EQ(g.num_nodes(), 4 + 1 + 3);  // 4 initializers, x, 3 ops
  const auto& fc1 = by_name(g, "h_node");
  EXPECT_EQ(fc1.output_shapes.front(), (core::Shape{8, 256}));
  EXPECT_DOUBLE_EQ(fc1.flops, 2.0 * 8 * 784 * 256 + 8 * 256);  // multiply-adds + bias
  EXPECT_EQ(fc1.bytes_read, (8 * 784 + 256 * 784 + 256) * 4);
  EXPECT_EQ(fc1.output_bytes, 8 * 256 * 4);
  EXPECT_DOUBLE_EQ(by_name(g, "r_node").flops, 8 * 256);
  EXPECT_EQ(by_name(g, "w1").param_bytes, 256 * 784 * 4);  // from dims, data not needed
  EXPECT_EQ(g.attrs().at("num_parameters"), std::to_string(256 * 784 + 256 + 10 * 256 + 10));
  EXPECT_TRUE(r.warning.empty()) << r.warning;
}

TEST(OnnxImporterTest, TrainingAddsGradientsAndUpdates) {
  auto r = import_onnx_bytes(mlp().bytes(), "mlp.onnx",
                             OnnxImportOptions().with_batch(8).with_training(true));
  const auto& g = r.graph;
  EXPECT_EQ(check_training_graph(g), "");
  const auto& fc1_grad = by_name(g, "gradients/h_node_grad/GemmGrad");
  // Gradients of w1 and b1 only (x is an input): twice the forward cost.
  EXPECT_DOUBLE_EQ(fc1_grad.flops, 2 * (2.0 * 8 * 784 * 256 + 8 * 256));
  const auto& fc2_grad = by_name(g, "gradients/y_node_grad/GemmGrad");
  EXPECT_EQ(fc2_grad.output_shapes.size(), 3u);  // d r, d w2, d b2
  // Adam's update of each weight (datasets/training_step.h): it reads the weight, its two
  // slots and the gradient, writes all three back, and holds the slots; 10 FLOPs a weight.
  const std::map<std::string, std::int64_t> weights = {
      {"w1", 256 * 784}, {"b1", 256}, {"w2", 10 * 256}, {"b2", 10}};
  for (const auto& [w, count] : weights) {
    const auto& up = by_name(g, w + "/ApplyAdam");
    EXPECT_EQ(up.colocation_group, w);
    EXPECT_EQ(up.phase, core::Phase::kUpdate);
    EXPECT_EQ(up.op_type, "ApplyAdam");
    const core::Bytes b = 4 * count;  // float32
    EXPECT_EQ(up.param_bytes, 2 * b) << w;
    EXPECT_EQ(up.bytes_read, 4 * b) << w;
    EXPECT_EQ(up.bytes_written, 3 * b) << w;
    EXPECT_DOUBLE_EQ(up.flops, 10.0 * static_cast<double>(count)) << w;
  }
  // Plain gradient descent reads the weight and its gradient and writes the weight.
  auto options = OnnxImportOptions().with_batch(8).with_training(true);
  options.optimizer = Optimizer::kGradientDescent;
  auto sgd = import_onnx_bytes(mlp().bytes(), "mlp.onnx", options);
  const auto& w1 = by_name(sgd.graph, "w1/ApplyGradientDescent");
  EXPECT_EQ(w1.param_bytes, 0);
  EXPECT_EQ(w1.bytes_read, 2 * 4 * 256 * 784);
  EXPECT_EQ(w1.bytes_written, 4 * 256 * 784);
  EXPECT_DOUBLE_EQ(w1.flops, 2.0 * 256 * 784);
  EXPECT_TRUE(g.find("train_op").has_value());
}

TEST(OnnxImporterTest, DynamicBatchNeedsTheBatchOption) {
  auto err = error_of([] { (void)import_onnx_bytes(mlp().bytes(), "mlp.onnx"); });
  EXPECT_TRUE(contains(err, "mlp.onnx")) << err;
  EXPECT_TRUE(contains(err, "input 'x'")) << err;
  EXPECT_TRUE(contains(err, "--batch")) << err;
  ModelBuilder m;
  m.input("x", {2, -1}).node("Relu", {"x"}, {"y"}).output("y");
  auto inner = error_of(
      [&] { (void)import_onnx_bytes(m.bytes(), "seq.onnx", OnnxImportOptions().with_batch(4)); });
  EXPECT_TRUE(contains(inner, "dimension 1 is dynamic")) << inner;
}

TEST(OnnxImporterTest, TruncatedAndCorruptFilesNameTheFile) {
  auto dir = std::filesystem::temp_directory_path();
  std::string full = mlp().bytes();
  auto truncated = dir / "gopt_truncated.onnx";
  std::ofstream(truncated, std::ios::binary) << full.substr(0, full.size() / 2);
  auto err = error_of([&] { (void)import_onnx(truncated, OnnxImportOptions().with_batch(1)); });
  EXPECT_TRUE(contains(err, "gopt_truncated.onnx")) << err;
  EXPECT_TRUE(contains(err, "truncated or corrupt")) << err;
  auto corrupt = dir / "gopt_corrupt.onnx";
  std::ofstream(corrupt, std::ios::binary) << "\xff\xff\xff\xff this is not a protobuf";
  err = error_of([&] { (void)import_onnx(corrupt); });
  EXPECT_TRUE(contains(err, "gopt_corrupt.onnx")) << err;
  auto missing = error_of([&] { (void)import_onnx(dir / "gopt_no_such_model.onnx"); });
  EXPECT_TRUE(contains(missing, "no such file")) << missing;
  std::filesystem::remove(truncated);
  std::filesystem::remove(corrupt);
}

TEST(OnnxImporterTest, UninferableShapeNamesTheNode) {
  // A declared custom domain: ONNX skips the op, the importer finds no shape for it.
  ModelBuilder m;
  m.opset("com.example", 1)
      .input("x", {2, 3})
      .node("FancyOp", {"x"}, {"y"}, {}, "com.example")
      .output("y");
  auto err = error_of([&] { (void)import_onnx_bytes(m.bytes(), "custom.onnx"); });
  EXPECT_TRUE(contains(err, "custom.onnx")) << err;
  EXPECT_TRUE(contains(err, "'y_node' (FancyOp)")) << err;
  EXPECT_TRUE(contains(err, "cannot be inferred")) << err;
  // An undeclared domain: ONNX's shape inference itself fails, naming the node.
  ModelBuilder u;
  u.input("x", {2, 3}).node("FancyOp", {"x"}, {"y"}, {}, "com.unknown").output("y");
  err = error_of([&] { (void)import_onnx_bytes(u.bytes(), "undeclared.onnx"); });
  EXPECT_TRUE(contains(err, "undeclared.onnx")) << err;
  EXPECT_TRUE(contains(err, "y_node")) << err;
}

TEST(OnnxImporterTest, OpsWithoutFlopsRuleAreReportedOnce) {
  ModelBuilder m;
  m.input("x", {4, 4})
      .node("LpNormalization", {"x"}, {"a"})
      .node("LpNormalization", {"a"}, {"b"})
      .node("Det", {"b"}, {"c"})
      .output("c");
  auto r = import_onnx_bytes(m.bytes(), "odd.onnx");
  EXPECT_EQ(r.uncosted_op_types, (std::vector<std::string>{"Det", "LpNormalization"}));
  EXPECT_TRUE(contains(r.warning, "Det, LpNormalization")) << r.warning;
  EXPECT_EQ(by_name(r.graph, "a_node").flops, 0);
  EXPECT_EQ(by_name(r.graph, "a_node").bytes_read, 16 * 4);  // still costed by bytes
}

// The shape arithmetic of PyTorch's exports, folded at import: x is [batch, 6, 8] and every
// shape argument below is computed from Shape(x) (batch 3 given to the importer).
ModelBuilder shape_arithmetic() {
  ModelBuilder m;
  m.input("x", {-1, 6, 8})
      .node("Shape", {"x"}, {"s"})
      .constant("i0", {0}, {})
      .constant("i1", {1}, {})
      .constant("i2", {2}, {})
      .constant("zero", {0}, {1})
      .constant("two", {2}, {})
      .constant("minus1", {-1}, {1})
      .node("Gather", {"s", "i0"}, {"b"}, {{"axis", {0}}})  // 3
      .node("Gather", {"s", "i1"}, {"t"}, {{"axis", {0}}})  // 6
      .node("Gather", {"s", "i2"}, {"e"}, {{"axis", {0}}})  // 8
      .node("Div", {"e", "two"}, {"h"})                     // 4
      .node("Mul", {"b", "t"}, {"bt"})                      // 18
      .node("Unsqueeze", {"bt", "zero"}, {"bt1"})           // [18]
      .node("Unsqueeze", {"h", "zero"}, {"h1"})             // [4]
      .node("Unsqueeze", {"b", "zero"}, {"b1"})             // [3]
      .node("Concat", {"bt1", "h1", "minus1"}, {"shape1"}, {{"axis", {0}}})
      .node("Reshape", {"x", "shape1"}, {"r"})               // [18, 4, 2]
      .node("Slice", {"x", "zero", "h1", "minus1"}, {"sl"})  // [3, 6, 4]
      // Expand's -1 replaced by 1 as PyTorch does: Where(Equal(s2, -1), 1, s2).
      .node("Concat", {"b1", "minus1", "h1"}, {"s2"}, {{"axis", {0}}})  // [3, -1, 4]
      .node("Equal", {"s2", "minus1"}, {"is_free"})
      .constant("one", {1}, {})
      .node("Where", {"is_free", "one", "s2"}, {"s3"})  // [3, 1, 4]
      .constant("step", {1}, {})
      .node("Range", {"i0", "h", "step"}, {"pos"})  // [0, 1, 2, 3]
      .node("Expand", {"pos", "s3"}, {"ex"})        // [3, 1, 4]
      .node("Concat", {"b1", "bt1"}, {"s4"}, {{"axis", {0}}})
      .node("ConstantOfShape", {"s4"}, {"zeros"})  // [3, 18]
      .node("Concat", {"h1", "b1"}, {"reps"}, {{"axis", {0}}})
      .node("Tile", {"zeros", "reps"}, {"tiled"})  // [12, 54]
      .node("Cast", {"pos"}, {"posf"}, {{"to", {onnx::TensorProto_DataType_FLOAT}}})
      .output("r")
      .output("sl")
      .output("ex")
      .output("tiled")
      .output("posf");
  return m;
}

TEST(OnnxImporterTest, ShapeArithmeticFoldsToConstants) {
  auto r = import_onnx_bytes(shape_arithmetic().bytes(), "shapes.onnx",
                             OnnxImportOptions().with_batch(3));
  const auto& g = r.graph;
  EXPECT_EQ(by_name(g, "r_node").output_shapes.front(), (core::Shape{18, 4, 2}));
  EXPECT_EQ(by_name(g, "sl_node").output_shapes.front(), (core::Shape{3, 6, 4}));
  EXPECT_EQ(by_name(g, "pos_node").output_shapes.front(), (core::Shape{4}));
  EXPECT_EQ(by_name(g, "ex_node").output_shapes.front(), (core::Shape{3, 1, 4}));
  EXPECT_EQ(by_name(g, "zeros_node").output_shapes.front(), (core::Shape{3, 18}));
  EXPECT_EQ(by_name(g, "tiled_node").output_shapes.front(), (core::Shape{12, 54}));
  // The shape ops stay in the graph (they are ops of the model), costed by their bytes.
  EXPECT_EQ(by_name(g, "s_node").output_shapes.front(), (core::Shape{3}));
  EXPECT_EQ(by_name(g, "b_node").output_shapes.front(), (core::Shape{}));
  EXPECT_EQ(by_name(g, "ex_node").flops, 3 * 4);  // Expand: one per output element
  // Another batch gives other shapes: nothing was fixed at export.
  auto r5 = import_onnx_bytes(shape_arithmetic().bytes(), "shapes.onnx",
                              OnnxImportOptions().with_batch(5));
  EXPECT_EQ(by_name(r5.graph, "r_node").output_shapes.front(), (core::Shape{30, 4, 2}));
  EXPECT_EQ(by_name(r5.graph, "tiled_node").output_shapes.front(), (core::Shape{20, 150}));
}

TEST(OnnxImporterTest, BadShapeValuesNameTheNodeAndInput) {
  ModelBuilder m;
  m.input("x", {2, 3})
      .node("Shape", {"x"}, {"s"})
      .constant("i", {5}, {1})
      .node("Gather", {"s", "i"}, {"g"}, {{"axis", {0}}})
      .node("Reshape", {"x", "g"}, {"y"})
      .output("y");
  auto err = error_of([&] { (void)import_onnx_bytes(m.bytes(), "bad_index.onnx"); });
  EXPECT_TRUE(contains(err, "bad_index.onnx")) << err;
  EXPECT_TRUE(contains(err, "'g_node' (Gather) input 'indices'")) << err;
  EXPECT_TRUE(contains(err, "index 5 is outside [-2, 2)")) << err;
  ModelBuilder d;
  d.input("x", {2, 3})
      .node("Shape", {"x"}, {"s"})
      .constant("z", {0}, {1})
      .node("Div", {"s", "z"}, {"q"})
      .node("Reshape", {"x", "q"}, {"y"})
      .output("y");
  err = error_of([&] { (void)import_onnx_bytes(d.bytes(), "div0.onnx"); });
  EXPECT_TRUE(contains(err, "'q_node' (Div) input 'B'")) << err;
  EXPECT_TRUE(contains(err, "division by zero")) << err;
  // ONNX's own inference errors name the node too.
  ModelBuilder c;
  c.input("x", {2, 3})
      .constant("v", {1, 2}, {2})
      .node("Concat", {"x", "v"}, {"y"}, {{"axis", {0}}})
      .output("y");
  err = error_of([&] { (void)import_onnx_bytes(c.bytes(), "ranks.onnx"); });
  EXPECT_TRUE(contains(err, "'y_node' (Concat): shape inference failed")) << err;
}

// libonnx's Conv inference read past the input's dimensions when the weight had another
// rank (fuzz_onnx_model, tests/fuzz/corpus/onnx_model/regression-conv-weight-rank*.onnx).
TEST(OnnxImporterTest, ConvWeightOfAnotherRankNamesTheNode) {
  for (const std::vector<std::int64_t>& dims :
       {std::vector<std::int64_t>{4, 3, 3, 3, 1}, std::vector<std::int64_t>{4, 3, 3}}) {
    ModelBuilder m;
    m.input("x", {1, 3, 8, 8}).weight("k", dims).node("Conv", {"x", "k"}, {"y"}).output("y");
    auto err = error_of([&] { (void)import_onnx_bytes(m.bytes(), "conv.onnx"); });
    EXPECT_TRUE(contains(err, "conv.onnx")) << err;
    EXPECT_TRUE(contains(err, "'y_node' (Conv): the weight (input 1) has rank " +
                                  std::to_string(dims.size()) + " but input 0 has rank 4"))
        << err;
  }
  ModelBuilder t;
  t.input("x", {1, 3, 8, 8})
      .weight("k", {3, 4, 3, 3})
      .node("ConvTranspose", {"x", "k"}, {"y"}, {{"output_padding", {1}}})
      .output("y");
  auto err = error_of([&] { (void)import_onnx_bytes(t.bytes(), "deconv.onnx"); });
  EXPECT_TRUE(contains(err, "attribute 'output_padding' has 1 values for 2 spatial")) << err;
}

// Sizes gopt derives from a shape must be representable (docs/graph-format.md "Limits").
TEST(OnnxImporterTest, ShapesBeyondTheSizeLimitNameTheValue) {
  ModelBuilder m;
  m.input("x", {2, 3})
      .weight("k", {std::int64_t{1} << 31, std::int64_t{1} << 31})
      .node("Add", {"x", "x"}, {"y"})
      .output("y");
  auto err = error_of([&] { (void)import_onnx_bytes(m.bytes(), "huge.onnx"); });
  EXPECT_TRUE(contains(err, "huge.onnx: initializer 'k': the shape [2147483648, 2147483648]"))
      << err;
  EXPECT_TRUE(contains(err, "more than 2^60 bytes")) << err;
}

// Reshape to the first two values of an int64 initializer of `size` elements: folded up
// to 4096 elements; a bigger tensor's contents are never read, so the shape is unknown.
std::string reshape_from_table(std::int64_t size) {
  std::vector<std::int64_t> values(static_cast<std::size_t>(size), 1);
  values[0] = 3;
  values[1] = 2;
  ModelBuilder m;
  m.input("x", {2, 3})
      .int_weight("table", values, {size})
      .constant("start", {0}, {1})
      .constant("end", {2}, {1})
      .node("Slice", {"table", "start", "end"}, {"dims"})
      .node("Reshape", {"x", "dims"}, {"y"})
      .output("y");
  return m.bytes();
}

TEST(OnnxImporterTest, OnlySmallTensorsAreFolded) {
  auto small = import_onnx_bytes(reshape_from_table(4096), "small.onnx");
  EXPECT_EQ(by_name(small.graph, "y_node").output_shapes.front(), (core::Shape{3, 2}));
  auto err = error_of([] { (void)import_onnx_bytes(reshape_from_table(4097), "big.onnx"); });
  EXPECT_TRUE(contains(err, "'y_node' (Reshape)")) << err;
  EXPECT_TRUE(contains(err, "cannot be inferred")) << err;
}

// torchvision's ResNet-50 (v1.5: stride on the 3x3 convolution), batch-normalised.
std::string resnet50() {
  ModelBuilder m;
  int counter = 0;
  auto conv_bn = [&](const std::string& x, std::int64_t cin, std::int64_t cout, std::int64_t k,
                     std::int64_t stride, bool relu) {
    std::string id = std::to_string(counter++);
    std::int64_t pad = k / 2;
    m.weight("w" + id, {cout, cin, k, k});
    for (const char* p : {"s", "b", "m", "v"}) m.weight(p + id, {cout});
    m.node(
        "Conv", {x, "w" + id}, {"conv" + id},
        {{"kernel_shape", {k, k}}, {"strides", {stride, stride}}, {"pads", {pad, pad, pad, pad}}});
    m.node("BatchNormalization", {"conv" + id, "s" + id, "b" + id, "m" + id, "v" + id},
           {"bn" + id});
    if (!relu) return "bn" + id;
    m.node("Relu", {"bn" + id}, {"relu" + id});
    return "relu" + id;
  };
  m.input("images", {1, 3, 224, 224});
  std::string x = conv_bn("images", 3, 64, 7, 2, true);
  m.node("MaxPool", {x}, {"pool"},
         {{"kernel_shape", {3, 3}}, {"strides", {2, 2}}, {"pads", {1, 1, 1, 1}}});
  x = "pool";
  std::int64_t cin = 64;
  const std::int64_t blocks[4] = {3, 4, 6, 3};
  for (int stage = 0; stage < 4; ++stage) {
    std::int64_t width = 64 << stage;
    for (std::int64_t b = 0; b < blocks[stage]; ++b) {
      std::int64_t stride = (b == 0 && stage > 0) ? 2 : 1;
      std::string y = conv_bn(x, cin, width, 1, 1, true);
      y = conv_bn(y, width, width, 3, stride, true);
      y = conv_bn(y, width, 4 * width, 1, 1, false);
      std::string shortcut = b == 0 ? conv_bn(x, cin, 4 * width, 1, stride, false) : x;
      std::string id = std::to_string(counter++);
      m.node("Add", {y, shortcut}, {"add" + id});
      m.node("Relu", {"add" + id}, {"out" + id});
      x = "out" + id;
      cin = 4 * width;
    }
  }
  m.node("GlobalAveragePool", {x}, {"gap"});
  m.node("Flatten", {"gap"}, {"flat"});
  m.weight("fc_w", {1000, 2048}).weight("fc_b", {1000});
  m.node("Gemm", {"flat", "fc_w", "fc_b"}, {"logits"}, {{"transB", {1}}});
  m.output("logits");
  return m.bytes();
}

double total_flops(const core::Graph& g) {
  double f = 0;
  for (core::NodeId v = 0; v < g.num_nodes(); ++v) f += g.node(v).flops;
  return f;
}

TEST(OnnxImporterTest, ResNet50FlopsMatchThePublishedFigure) {
  auto r = import_onnx_bytes(resnet50(), "resnet50.onnx");
  // 4.1 G multiply-adds at batch 1 (He et al. 2016 report 3.8 G for v1; torchvision's v1.5
  // has 4.1 G), i.e. 8.2 GFLOP with a multiply-add counted as two.
  EXPECT_NEAR(total_flops(r.graph), 2 * 4.1e9, 0.05 * 2 * 4.1e9);
  EXPECT_NEAR(std::stod(r.graph.attrs().at("num_parameters")), 25.6e6, 0.01 * 25.6e6);
  auto t = import_onnx_bytes(resnet50(), "resnet50.onnx", OnnxImportOptions().with_training(true));
  EXPECT_EQ(check_training_graph(t.graph), "");
  EXPECT_GT(total_flops(t.graph), 2.5 * total_flops(r.graph));
}

// Real exported models: needs Debian's python3-torch, python3-torchvision, python3-onnx.
TEST(OnnxImporterTest, TorchvisionExportsImport) {
  const std::string python = "/usr/bin/python3";
  auto probe = gopt::testing::run_command(python + " -c 'import torch, torchvision, onnx'");
  if (probe.exit_code != 0) {
    GTEST_SKIP() << "python3-torch, python3-torchvision or python3-onnx is not installed "
                    "(scripts/setup.sh installs them): "
                 << probe.err;
  }
  // Per process: a fixed name raced with the same test run from another build tree.
  std::filesystem::path dir = gopt::testing::make_temp_dir("gopt_onnx_export_test");
  auto run = gopt::testing::run_command(python + " " + GOPT_SOURCE_DIR +
                                        "/datasets/export_onnx_models.py " + dir.string() +
                                        " --models resnet50,transformer");
  ASSERT_EQ(run.exit_code, 0) << run.err;
  // External data: the weights are in resnet50.onnx.data; import without it.
  std::filesystem::remove(dir / "resnet50.onnx.data");
  auto r = import_onnx(dir / "resnet50.onnx", OnnxImportOptions().with_batch(1));
  EXPECT_NEAR(total_flops(r.graph), 2 * 4.1e9, 0.05 * 2 * 4.1e9);
  EXPECT_NEAR(std::stod(r.graph.attrs().at("num_parameters")), 25.6e6, 0.01 * 25.6e6);
  auto t =
      import_onnx(dir / "transformer.onnx", OnnxImportOptions().with_batch(8).with_training(true));
  EXPECT_EQ(check_training_graph(t.graph), "");
  auto cli = gopt::testing::run_command(std::string(GOPT_BINARY) + " graph import " +
                                        (dir / "resnet50.onnx").string() + " --batch 32 --out " +
                                        (dir / "resnet50.json").string() + " --training");
  EXPECT_EQ(cli.exit_code, 0) << cli.err;
  auto info = gopt::testing::run_command(std::string(GOPT_BINARY) + " graph validate " +
                                         (dir / "resnet50.json").string());
  EXPECT_EQ(info.exit_code, 0) << info.err;
  gopt::testing::remove_tree(dir.string());
}

}  // namespace
}  // namespace gopt::datasets
