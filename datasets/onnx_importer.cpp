#include "datasets/onnx_importer.h"

#include <onnx/defs/schema.h>
#include <onnx/onnx_pb.h>
#include <onnx/shape_inference/implementation.h>

#include <algorithm>
#include <limits>
#include <map>
#include <memory>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "core/errors.h"
#include "core/graph_io.h"
#include "datasets/flop_conventions.h"
#include "datasets/onnx_constant_folding.h"

namespace gopt::datasets {
namespace {

using core::Flops;
using core::NodeId;
using core::Phase;
using core::Shape;
using onnx_folding::KnownTensor;

std::optional<core::DType> dtype_of(int elem_type) {
  using T = onnx::TensorProto_DataType;
  switch (elem_type) {
    case T::TensorProto_DataType_FLOAT:
      return core::DType::kFloat32;
    case T::TensorProto_DataType_FLOAT16:
      return core::DType::kFloat16;
    case T::TensorProto_DataType_BFLOAT16:
      return core::DType::kBFloat16;
    case T::TensorProto_DataType_DOUBLE:
      return core::DType::kFloat64;
    case T::TensorProto_DataType_INT8:
      return core::DType::kInt8;
    case T::TensorProto_DataType_UINT8:
      return core::DType::kUInt8;
    case T::TensorProto_DataType_INT32:
      return core::DType::kInt32;
    case T::TensorProto_DataType_INT64:
      return core::DType::kInt64;
    case T::TensorProto_DataType_BOOL:
      return core::DType::kBool;
    default:
      return std::nullopt;
  }
}

bool is_float(core::DType d) {
  return d == core::DType::kFloat32 || d == core::DType::kFloat16 || d == core::DType::kBFloat16 ||
         d == core::DType::kFloat64;
}

// A value (tensor) of the ONNX graph: its producer in the gopt graph, its type and, for
// small tensors whose values are known at import time, its contents.
struct Value {
  NodeId producer = -1;
  std::int32_t output = 0;
  Shape shape;
  core::DType dtype = core::DType::kFloat32;
  std::int32_t elem_type = 0;  ///< onnx::TensorProto_DataType
  bool known = false;          ///< shape fully known
  bool trainable = false;
  std::shared_ptr<const KnownTensor> data;  ///< contents, when folded

  [[nodiscard]] core::Bytes bytes() const {
    return core::num_elements(shape) * core::dtype_size_bytes(dtype);
  }
};

double elems(const Shape& s) { return static_cast<double>(core::num_elements(s)); }

std::int64_t int_attr(const onnx::NodeProto& n, const char* name, std::int64_t fallback) {
  for (const auto& a : n.attribute()) {
    if (a.name() == name) return a.i();
  }
  return fallback;
}

std::vector<std::int64_t> ints_attr(const onnx::NodeProto& n, const char* name) {
  for (const auto& a : n.attribute()) {
    if (a.name() == name) return {a.ints().begin(), a.ints().end()};
  }
  return {};
}

const std::unordered_set<std::string>& transcendental_ops() {
  static const std::unordered_set<std::string> s = {
      "Exp",      "Log",      "Sigmoid",     "Tanh",      "Erf",  "Gelu",
      "Softplus", "Softsign", "Elu",         "Selu",      "Sqrt", "Pow",
      "Sin",      "Cos",      "HardSigmoid", "HardSwish", "Mish", "Reciprocal"};
  return s;
}

const std::unordered_set<std::string>& pointwise_ops() {
  static const std::unordered_set<std::string> s = {"Add",    "Sub",         "Mul",
                                                    "Div",    "Neg",         "Abs",
                                                    "Relu",   "LeakyRelu",   "PRelu",
                                                    "Clip",   "Max",         "Min",
                                                    "Sum",    "Mean",        "Where",
                                                    "Equal",  "Less",        "Greater",
                                                    "Not",    "And",         "Or",
                                                    "Floor",  "Ceil",        "Round",
                                                    "Sign",   "Cast",        "Dropout",
                                                    "Expand", "LessOrEqual", "GreaterOrEqual",
                                                    "Mod",    "BitShift",    "ThresholdedRelu",
                                                    "Celu",   "Shrink",      "IsNaN",
                                                    "IsInf"};
  return s;
}

// Ops that only move or reinterpret data: no FLOPs, costed by their bytes (not a warning).
const std::unordered_set<std::string>& data_ops() {
  static const std::unordered_set<std::string> s = {
      "Reshape",      "Transpose",    "Concat",    "Split",           "Gather", "GatherElements",
      "GatherND",     "Flatten",      "Squeeze",   "Unsqueeze",       "Slice",  "Pad",
      "Identity",     "Shape",        "Constant",  "ConstantOfShape", "Tile",   "Size",
      "DepthToSpace", "SpaceToDepth", "ScatterND", "ScatterElements", "Range",  "OneHot",
      "CastLike",     "NonZero",      "Trilu"};
  return s;
}

const std::unordered_set<std::string>& reduction_ops() {
  static const std::unordered_set<std::string> s = {
      "ReduceSum", "ReduceMean",      "ReduceMax",       "ReduceMin", "ReduceProd", "ReduceL1",
      "ReduceL2",  "ReduceLogSumExp", "ReduceSumSquare", "ArgMax",    "ArgMin",     "CumSum",
      "TopK"};
  return s;
}

class Importer {
 public:
  /// A forward op with the values it reads and writes, kept for --training.
  struct ForwardOp {
    NodeId node;
    std::vector<Value> inputs;
    std::vector<Value> outputs;
    Flops flops;
  };

  Importer(std::string source, const OnnxImportOptions& options)
      : source_(std::move(source)), options_(options) {}

  OnnxImportResult run(std::string_view serialized) {
    onnx::ModelProto model;
    if (serialized.empty()) fail("", "the file is empty");
    if (serialized.size() > static_cast<std::size_t>(std::numeric_limits<int>::max()) ||
        !model.ParseFromArray(serialized.data(), static_cast<int>(serialized.size()))) {
      fail("", "not a valid ONNX model: the protobuf is truncated or corrupt");
    }
    if (!model.has_graph() || model.graph().node_size() == 0) {
      fail("", "not a valid ONNX model: it has no graph or the graph has no nodes");
    }
    fix_batch(model);
    check_window_attributes(model.graph());
    check_node_inputs(model);
    auto& g = *model.mutable_graph();
    std::string stem = std::filesystem::path(source_).stem().string();
    graph_ = core::Graph(stem.empty() ? "onnx_model" : stem);
    graph_.set_family("onnx");
    graph_.mutable_attrs()["source"] = source_;
    if (!model.producer_name().empty()) {
      graph_.mutable_attrs()["producer"] = model.producer_name() + " " + model.producer_version();
    }
    for (const auto& op : model.opset_import()) {
      std::string domain = op.domain() == "ai.onnx" ? "" : op.domain();
      opsets_[domain] = static_cast<int>(op.version());
      if (domain.empty()) graph_.mutable_attrs()["opset"] = std::to_string(op.version());
    }
    subgraph_context_ = std::make_unique<onnx::shape_inference::GraphInferenceContext>(
        type_ptrs_, opsets_, &symbols_, local_functions_, onnx::OpSchemaRegistry::Instance(),
        nullptr, static_cast<int>(model.ir_version()));
    for (const auto& f : model.functions()) local_functions_[f.domain() + ":" + f.name()] = &f;
    collect_types(g);
    add_sources(g);
    for (int i = 0; i < g.node_size(); ++i) add_node(*g.mutable_node(i), i);
    std::vector<std::string> outputs;
    for (const auto& o : g.output()) outputs.push_back(o.name());
    if (options_.training) add_training(outputs);
    graph_.mutable_attrs()["num_parameters"] = std::to_string(num_parameters_);
    graph_.complete();
    graph_.validate(source_);

    OnnxImportResult result{std::move(graph_), {uncosted_.begin(), uncosted_.end()}, {}};
    if (!result.uncosted_op_types.empty()) {
      std::string list;
      for (const auto& t : result.uncosted_op_types) list += (list.empty() ? "" : ", ") + t;
      result.warning = source_ + ": warning: no FLOPs rule for op types " + list +
                       "; their ops are costed by bytes moved only";
    }
    return result;
  }

 private:
  [[noreturn]] void fail(const std::string& location, const std::string& problem) const {
    throw core::InputError(source_, location, problem);
  }

  static std::string node_label(const onnx::NodeProto& n, int index) {
    return "node " + std::to_string(index) + " '" + (n.name().empty() ? n.op_type() : n.name()) +
           "' (" + n.op_type() + ")";
  }

  // Sets dynamic leading dims of graph inputs to --batch; any other dynamic dim is an error.
  // ONNX's own shape inference (libonnx 1.13) divides by strides and dilations and
  // crashed with SIGFPE on a zero (found by fuzz_onnx_model): window attributes are
  // checked here first, in every node of the graph and its subgraphs.
  void check_window_attributes(const onnx::GraphProto& graph) {
    for (const auto& node : graph.node()) {
      // Window attributes given must agree on the number of spatial dimensions (libonnx
      // indexed past an empty kernel_shape: SIGSEGV, found by fuzz_onnx_model).
      int spatial = -1;
      for (const auto& a : node.attribute()) {
        const std::string& name = a.name();
        int n = -1;
        if (name == "strides" || name == "dilations" || name == "kernel_shape") {
          n = a.ints_size();
        } else if (name == "pads") {
          n = a.ints_size() % 2 == 0 ? a.ints_size() / 2 : 0;
        }
        if (n == 0 || (n > 0 && spatial >= 0 && n != spatial)) {
          fail(node_label(node), "attribute '" + name + "' has " + std::to_string(a.ints_size()) +
                                     " values, which do not match one per spatial dimension "
                                     "(pads: two) as the node's other window attributes give");
        }
        if (n > 0) spatial = n;
      }
      for (const auto& a : node.attribute()) {
        const std::string& name = a.name();
        const bool positive = name == "strides" || name == "dilations" || name == "kernel_shape";
        const bool non_negative = name == "pads" || name == "output_padding";
        if (positive || non_negative) {
          for (auto v : a.ints()) {
            if (positive ? v <= 0 : v < 0) {
              fail(node_label(node), "attribute '" + name + "' must be " +
                                         (positive ? "> 0" : ">= 0") + ", found " +
                                         std::to_string(v));
            }
          }
        }
        if (name == "group" && a.has_i() && a.i() <= 0) {
          fail(node_label(node), "attribute 'group' must be > 0, found " + std::to_string(a.i()));
        }
        if (a.has_g()) check_window_attributes(a.g());
        for (const auto& g : a.graphs()) check_window_attributes(g);
      }
    }
  }

  // libonnx's shape inference dereferenced the type of a missing or undefined input (a
  // Conv without its weight: SIGSEGV, found by fuzz_onnx_model). Each node of the main
  // graph must have the inputs its schema requires, each defined before it (a graph input,
  // an initializer or an earlier node's output).
  void check_node_inputs(const onnx::ModelProto& model) {
    int opset = 0;
    for (const auto& op : model.opset_import()) {
      if (op.domain().empty() || op.domain() == "ai.onnx") opset = static_cast<int>(op.version());
    }
    const auto& g = model.graph();
    std::unordered_set<std::string> defined;
    std::unordered_set<std::string> initializers;
    for (const auto& t : g.initializer()) initializers.insert(t.name());
    // A graph input without a tensor type and shape crashed libonnx's Conv inference too;
    // gopt needs every input's shape anyway.
    for (const auto& v : g.input()) {
      if (initializers.count(v.name())) continue;
      if (!v.type().has_tensor_type() || !v.type().tensor_type().has_shape()) {
        fail("input '" + v.name() + "'", "a graph input needs a tensor type with a shape");
      }
    }
    for (const auto& v : g.input()) defined.insert(v.name());
    for (const auto& t : g.initializer()) defined.insert(t.name());
    for (const auto& node : g.node()) {
      const onnx::OpSchema* schema = node.domain().empty() || node.domain() == "ai.onnx"
                                         ? onnx::OpSchemaRegistry::Schema(node.op_type(), opset, "")
                                         : nullptr;
      if (schema) {
        if (node.input_size() < schema->min_input() || node.input_size() > schema->max_input()) {
          fail(node_label(node), node.op_type() + " takes " + std::to_string(schema->min_input()) +
                                     " to " + std::to_string(schema->max_input()) +
                                     " inputs, found " + std::to_string(node.input_size()));
        }
        for (int i = 0; i < schema->min_input(); ++i) {
          if (node.input(i).empty()) {
            fail(node_label(node), "required input " + std::to_string(i) + " is empty");
          }
        }
      }
      for (const auto& name : node.input()) {
        if (!name.empty() && !defined.count(name)) {
          fail(node_label(node), "input '" + name +
                                     "' is not a graph input, an initializer or the output of an "
                                     "earlier node");
        }
      }
      for (const auto& name : node.output()) defined.insert(name);
    }
  }

  // libonnx 1.13's convPoolShapeInference takes the kernel's spatial dimensions from the
  // weight when `kernel_shape` is absent and then indexes the input's dimensions, strides
  // and pads by them: a weight of another rank than the input read past their ends
  // (SIGSEGV, found by fuzz_onnx_model). For a convolution the weight (M x C/group x k1 x
  // ... x kn) has the input's rank by definition; ConvTranspose's output_shape and
  // output_padding have one value per spatial dimension.
  void check_conv_ranks(const onnx::NodeProto& n, int index,
                        const std::vector<const Value*>& inputs) const {
    if (!n.domain().empty() && n.domain() != "ai.onnx") return;
    const std::string& op = n.op_type();
    int weight = -1;
    if (op == "Conv" || op == "ConvInteger" || op == "ConvTranspose") weight = 1;
    if (op == "QLinearConv") weight = 3;
    if (weight < 0 || inputs.empty() || inputs[0] == nullptr || !inputs[0]->known) return;
    const auto rank = static_cast<int>(inputs[0]->shape.size());
    if (rank < 3) {
      fail(node_label(n, index), "input 0 has rank " + std::to_string(rank) +
                                     "; a convolution needs (N x C x D1 x ... x Dn), n >= 1");
    }
    if (static_cast<int>(inputs.size()) > weight && inputs[weight] != nullptr &&
        inputs[weight]->known && static_cast<int>(inputs[weight]->shape.size()) != rank) {
      fail(node_label(n, index), "the weight (input " + std::to_string(weight) + ") has rank " +
                                     std::to_string(inputs[weight]->shape.size()) +
                                     " but input 0 has rank " + std::to_string(rank) +
                                     "; they must be equal (M x C/group x k1 x ... x kn)");
    }
    for (const auto& a : n.attribute()) {
      if ((a.name() == "output_shape" || a.name() == "output_padding") &&
          a.ints_size() != rank - 2) {
        fail(node_label(n, index), "attribute '" + a.name() + "' has " +
                                       std::to_string(a.ints_size()) + " values for " +
                                       std::to_string(rank - 2) + " spatial dimensions");
      }
    }
  }

  static std::string node_label(const onnx::NodeProto& node) {
    return "node '" + (node.name().empty() ? node.op_type() : node.name()) + "'";
  }

  void fix_batch(onnx::ModelProto& model) {
    std::unordered_set<std::string> inits;
    for (const auto& t : model.graph().initializer()) inits.insert(t.name());
    for (auto& in : *model.mutable_graph()->mutable_input()) {
      if (inits.count(in.name()) != 0 || !in.type().has_tensor_type()) continue;
      auto* shape = in.mutable_type()->mutable_tensor_type()->mutable_shape();
      for (int d = 0; d < shape->dim_size(); ++d) {
        auto* dim = shape->mutable_dim(d);
        if (dim->has_dim_value() && dim->dim_value() > 0) continue;
        std::string what = dim->has_dim_param() ? "'" + dim->dim_param() + "'" : "unknown";
        if (d != 0) {
          fail("input '" + in.name() + "'",
               "dimension " + std::to_string(d) + " is dynamic (" + what +
                   "); only the leading batch dimension can be set (with --batch); export the "
                   "model with fixed shapes");
        }
        if (options_.batch <= 0) {
          fail("input '" + in.name() + "'",
               "dimension 0 is dynamic (" + what + "): give the batch size with --batch N");
        }
        dim->set_dim_value(options_.batch);
      }
    }
  }

  void note_type(const onnx::ValueInfoProto& v) {
    if (!v.type().has_tensor_type()) return;
    const auto& tt = v.type().tensor_type();
    Value val;
    val.dtype = dtype_of(tt.elem_type()).value_or(core::DType::kFloat32);
    val.elem_type = tt.elem_type();
    val.known = tt.has_shape();
    if (tt.has_shape()) {
      for (const auto& d : tt.shape().dim()) {
        if (!d.has_dim_value() || d.dim_value() < 0) {
          val.known = false;
          break;
        }
        val.shape.push_back(d.dim_value());
      }
    }
    types_[v.name()] = std::move(val);
  }

  void collect_types(const onnx::GraphProto& g) {
    for (const auto& v : g.input()) note_type(v);
    for (const auto& v : g.value_info()) note_type(v);
    for (const auto& v : g.output()) note_type(v);
  }

  std::string unique(std::string name) {
    if (name.empty()) name = "unnamed";
    if (used_names_.insert(name).second) return name;
    for (int i = 1;; ++i) {
      std::string c = name + "_" + std::to_string(i);
      if (used_names_.insert(c).second) return c;
    }
  }

  void add_sources(const onnx::GraphProto& g) {
    for (const auto& t : g.initializer()) {
      Value v;
      v.dtype = dtype_of(t.data_type()).value_or(core::DType::kFloat32);
      v.elem_type = t.data_type();
      v.shape.assign(t.dims().begin(), t.dims().end());
      v.known = true;
      v.trainable = is_float(v.dtype);
      check_size("initializer '" + t.name() + "'", v);
      try {
        if (auto data = onnx_folding::read_tensor(t)) {
          v.data = std::make_shared<const KnownTensor>(std::move(*data));
        }
      } catch (const onnx_folding::FoldError& e) {
        fail("initializer '" + t.name() + "'", e.what());
      }
      core::NodeAttrs n;
      n.name = unique(t.name());
      n.op_type = "Initializer";
      n.kind = core::OpKind::kVariable;
      n.output_shapes = {v.shape};
      n.dtype = v.dtype;
      n.param_bytes = v.bytes();
      n.phase = Phase::kForward;
      n.colocation_group = n.name;
      v.producer = graph_.add_node(std::move(n));
      if (v.trainable) {
        // Each tensor holds at most kMaxBytes; their sum is checked too.
        num_parameters_ += core::num_elements(v.shape);
        if (num_parameters_ > core::kMaxBytes) {
          fail("initializer '" + t.name() + "'",
               "the model's parameters add up to more than 2^60 elements (the size limit of "
               "docs/graph-format.md)");
        }
        initializers_.push_back(v.producer);
      }
      set_value(t.name(), v);
    }
    for (const auto& in : g.input()) {
      if (values_.count(in.name()) != 0) continue;  // an initializer listed as input
      auto it = types_.find(in.name());
      if (it == types_.end() || !it->second.known) {
        fail("input '" + in.name() + "'", "has no tensor shape");
      }
      Value v = it->second;
      check_size("input '" + in.name() + "'", v);
      core::NodeAttrs n;
      n.name = unique(in.name());
      n.op_type = "Placeholder";
      n.kind = core::OpKind::kInput;
      n.output_shapes = {v.shape};
      n.dtype = v.dtype;
      n.phase = Phase::kForward;
      v.producer = graph_.add_node(std::move(n));
      set_value(in.name(), v);
    }
  }

  Flops flops_of(const onnx::NodeProto& n, const std::vector<const Value*>& in,
                 const std::vector<Value>& out) {
    const std::string& t = n.op_type();
    const Shape& y = out.empty() ? Shape{} : out.front().shape;
    auto input_shape = [&](std::size_t i) -> const Shape* {
      return i < in.size() && in[i] != nullptr ? &in[i]->shape : nullptr;
    };
    if (t == "Conv" || t == "ConvInteger" || t == "QLinearConv") {
      const Shape* w = input_shape(t == "QLinearConv" ? 3 : 1);
      if (w == nullptr || w->empty() || (*w)[0] == 0) return 0;
      double per_output = elems(*w) / static_cast<double>((*w)[0]);
      return 2.0 * elems(y) * per_output + (input_shape(2) && t == "Conv" ? elems(y) : 0);
    }
    if (t == "ConvTranspose") {
      const Shape* x = input_shape(0);
      const Shape* w = input_shape(1);
      if (x == nullptr || w == nullptr || w->empty() || (*w)[0] == 0) return 0;
      return 2.0 * elems(*x) * elems(*w) / static_cast<double>((*w)[0]);
    }
    if (t == "Gemm") {
      const Shape* a = input_shape(0);
      if (a == nullptr || a->size() != 2) return 0;
      double k = static_cast<double>(int_attr(n, "transA", 0) != 0 ? (*a)[0] : (*a)[1]);
      return 2.0 * elems(y) * k + (input_shape(2) ? elems(y) : 0);
    }
    if (t == "MatMul" || t == "MatMulInteger") {
      const Shape* a = input_shape(0);
      if (a == nullptr || a->empty()) return 0;
      return 2.0 * elems(y) * static_cast<double>(a->back());
    }
    if (t == "Einsum") {
      uncosted_.insert(t);
      return 0;
    }
    if (t == "LSTM" || t == "GRU" || t == "RNN") {
      const Shape* x = input_shape(0);
      const Shape* w = input_shape(1);
      const Shape* r = input_shape(2);
      if (x == nullptr || w == nullptr || r == nullptr || x->size() != 3) return 0;
      // Per step and direction: [batch, input] x W^T and [batch, hidden] x R^T, plus the
      // gate arithmetic (about 10 pointwise ops per hidden unit per gate).
      double steps_batch = static_cast<double>((*x)[0] * (*x)[1]);
      double matmul = 2.0 * steps_batch * (elems(*w) + elems(*r));
      double gates = (*w).size() == 3 ? static_cast<double>((*w)[0] * (*w)[1]) : 0;
      return matmul + 10.0 * steps_batch * gates;
    }
    if (t == "MaxPool" || t == "AveragePool" || t == "LpPool") {
      double window = 1;
      for (auto k : ints_attr(n, "kernel_shape")) window *= static_cast<double>(k);
      return elems(y) * window;
    }
    if (t == "GlobalAveragePool" || t == "GlobalMaxPool") {
      return input_shape(0) ? elems(*input_shape(0)) : 0;
    }
    if (t == "BatchNormalization" || t == "InstanceNormalization" || t == "LayerNormalization" ||
        t == "GroupNormalization" || t == "LRN" || t == "MeanVarianceNormalization") {
      return elems(y) * (t == "BatchNormalization" ? 2 : kNormFlops);
    }
    if (t == "Softmax" || t == "LogSoftmax" || t == "Hardmax") return elems(y) * kSoftmaxFlops;
    if (t == "Resize" || t == "Upsample") return elems(y) * 4;
    if (transcendental_ops().count(t) != 0) return elems(y) * kTranscendentalFlops;
    if (pointwise_ops().count(t) != 0) return elems(y);
    if (reduction_ops().count(t) != 0) return input_shape(0) ? elems(*input_shape(0)) : 0;
    if (data_ops().count(t) != 0) return 0;
    uncosted_.insert(t);
    return 0;
  }

  // Every size gopt derives from a value (bytes, elements, FLOPs) stays representable: a
  // known shape holds at most kMaxBytes (docs/graph-format.md "Limits"), else an input error
  // naming the value (an initializer of 1.7e18 x 104 elements overflowed int64, found by
  // fuzz_onnx_model under UBSan).
  void check_size(const std::string& location, const Value& v) const {
    if (!v.known) return;
    const std::int64_t elem = core::dtype_size_bytes(v.dtype);
    if (!core::checked_num_elements(v.shape, core::kMaxBytes / std::max<std::int64_t>(1, elem))) {
      std::string dims;
      for (auto d : v.shape) dims += (dims.empty() ? "" : ", ") + std::to_string(d);
      fail(location, "the shape [" + dims +
                         "] has a negative dimension or holds more than 2^60 bytes (the size "
                         "limit of docs/graph-format.md)");
    }
  }

  // Records a value and its ONNX type, which later nodes' shape inference reads.
  void set_value(const std::string& name, const Value& v) {
    values_[name] = v;
    onnx::TypeProto type;
    auto* tt = type.mutable_tensor_type();
    tt->set_elem_type(v.elem_type);
    auto* shape = tt->mutable_shape();
    for (auto d : v.shape) shape->add_dim()->set_dim_value(d);
    onnx_types_[name] = std::move(type);
    type_ptrs_[name] = &onnx_types_[name];
  }

  // The node's output types from ONNX's inference function for its op, given its input
  // types and the contents of its small inputs (so Reshape, Slice, Expand, Tile, Range,
  // ConstantOfShape, ... see the values of their shape inputs). An output type is left
  // empty when the op has no schema or inference does not determine it; when ONNX's
  // inference throws, all are empty and `error` says why (the model's declared shapes may
  // still give the outputs).
  std::vector<onnx::TypeProto> infer_outputs(onnx::NodeProto& n, int index,
                                             const std::vector<const Value*>& inputs,
                                             std::string& error) {
    std::string domain = n.domain() == "ai.onnx" ? "" : n.domain();
    auto opset = opsets_.find(domain);
    if (opset == opsets_.end()) {
      fail(node_label(n, index),
           "its operator domain '" + domain + "' is not declared in the model's opset_import");
    }
    const auto* registry = onnx::OpSchemaRegistry::Instance();
    const onnx::OpSchema* schema = registry->GetSchema(n.op_type(), opset->second, domain);
    std::vector<onnx::TensorProto> protos;
    protos.reserve(inputs.size());
    std::unordered_map<std::string, const onnx::TensorProto*> data_by_name;
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      if (inputs[i] == nullptr || !inputs[i]->data) continue;
      protos.push_back(onnx_folding::to_proto(*inputs[i]->data));
      data_by_name[n.input(static_cast<int>(i))] = &protos.back();
    }
    onnx::shape_inference::InferenceContextImpl ctx(n, type_ptrs_, data_by_name, {}, nullptr,
                                                    subgraph_context_.get());
    try {
      if (schema != nullptr && schema->has_type_and_shape_inference_function()) {
        schema->GetTypeAndShapeInferenceFunction()(ctx);
      } else if (schema != nullptr && schema->HasFunction()) {
        onnx::shape_inference::InferShapeForFunctionNode(*schema->GetFunction(), registry, ctx, {},
                                                         local_functions_, &symbols_);
      } else if (auto f = local_functions_.find(n.domain() + ":" + n.op_type());
                 schema == nullptr && f != local_functions_.end()) {
        // A model-local function (torch.onnx.export(..., export_modules_as_functions=...)).
        std::unordered_map<std::string, int> function_opsets;
        for (const auto& o : f->second->opset_import()) {
          function_opsets[o.domain()] = static_cast<int>(o.version());
        }
        onnx::shape_inference::InferShapeForFunctionNode(*f->second, function_opsets, registry, ctx,
                                                         {}, local_functions_, &symbols_);
      }
    } catch (const std::exception& e) {
      error = e.what();
      return std::vector<onnx::TypeProto>(static_cast<std::size_t>(n.output_size()));
    }
    return ctx.allOutputTypes_;
  }

  // A concrete Value from an inferred type, else from the type the model declares
  // (value_info, graph outputs); nullopt when neither gives every dimension.
  std::optional<Value> output_value(const std::string& name, const onnx::TypeProto& inferred) {
    if (inferred.has_tensor_type() && inferred.tensor_type().has_shape()) {
      const auto& tt = inferred.tensor_type();
      Value v;
      v.elem_type = tt.elem_type();
      v.dtype = dtype_of(tt.elem_type()).value_or(core::DType::kFloat32);
      v.known = true;
      for (const auto& d : tt.shape().dim()) {
        if (!d.has_dim_value() || d.dim_value() < 0) {
          v.known = false;
          break;
        }
        v.shape.push_back(d.dim_value());
      }
      if (v.known) return v;
    }
    auto it = types_.find(name);
    if (it != types_.end() && it->second.known) {
      Value v = it->second;
      if (v.elem_type == 0 && inferred.has_tensor_type()) {
        v.elem_type = inferred.tensor_type().elem_type();
        v.dtype = dtype_of(v.elem_type).value_or(core::DType::kFloat32);
      }
      return v;
    }
    return std::nullopt;
  }

  // Folds the node's outputs when its inputs' contents are known (see
  // onnx_constant_folding.h); bad values become input errors naming the node and field.
  void fold(const onnx::NodeProto& n, int index, const std::vector<const Value*>& inputs,
            std::vector<Value>& outputs) {
    std::string domain = n.domain() == "ai.onnx" ? "" : n.domain();
    if (!domain.empty()) return;
    std::vector<const KnownTensor*> data;
    std::vector<const Shape*> shapes;
    data.reserve(inputs.size());
    shapes.reserve(inputs.size());
    for (const Value* v : inputs) {
      data.push_back(v != nullptr ? v->data.get() : nullptr);
      shapes.push_back(v != nullptr ? &v->shape : nullptr);
    }
    std::vector<onnx_folding::OutputType> types;
    types.reserve(outputs.size());
    for (const auto& o : outputs) types.push_back({o.elem_type, o.shape});
    try {
      auto folded = onnx_folding::fold_node(n, opsets_.at(""), data, shapes, types);
      for (std::size_t i = 0; i < folded.size(); ++i) {
        if (folded[i]) outputs[i].data = std::make_shared<const KnownTensor>(std::move(*folded[i]));
      }
    } catch (const onnx_folding::FoldError& e) {
      std::string where = node_label(n, index);
      if (!e.field().empty()) where += " " + e.field();
      fail(where, e.what());
    }
  }

  void add_node(onnx::NodeProto& n, int index) {
    std::vector<const Value*> inputs;
    for (const auto& name : n.input()) {
      if (name.empty()) {
        inputs.push_back(nullptr);  // an omitted optional input
        continue;
      }
      auto it = values_.find(name);
      if (it == values_.end()) {
        fail(node_label(n, index), "input '" + name +
                                       "' is produced by no earlier node, initializer or graph "
                                       "input (the graph is not topologically sorted?)");
      }
      inputs.push_back(&it->second);
    }
    check_conv_ranks(n, index, inputs);
    std::string inference_error;
    std::vector<onnx::TypeProto> inferred = infer_outputs(n, index, inputs, inference_error);
    std::vector<Value> outputs;
    for (int i = 0; i < n.output_size(); ++i) {
      const std::string& name = n.output(i);
      if (name.empty()) continue;
      auto v = output_value(name, inferred[static_cast<std::size_t>(i)]);
      if (!v && !inference_error.empty()) {
        fail(node_label(n, index), "shape inference failed: " + inference_error);
      }
      if (!v) {
        fail(node_label(n, index),
             "the shape of output '" + name +
                 "' cannot be inferred (unsupported op, a data-dependent shape, or a dynamic "
                 "dimension other than the batch)");
      }
      check_size(node_label(n, index) + " output '" + name + "'", *v);
      outputs.push_back(std::move(*v));
    }
    fold(n, index, inputs, outputs);
    core::NodeAttrs attrs;
    attrs.name = unique(n.name().empty() ? n.op_type() + "_" + std::to_string(index) : n.name());
    attrs.op_type = n.op_type();
    attrs.kind = core::classify_op_type(n.op_type());
    for (const auto& o : outputs) attrs.output_shapes.push_back(o.shape);
    attrs.dtype = outputs.empty() ? core::DType::kFloat32 : outputs.front().dtype;
    attrs.flops = flops_of(n, inputs, outputs);
    attrs.phase = Phase::kForward;
    NodeId id = graph_.add_node(std::move(attrs));
    bool grad = false;
    std::vector<std::pair<NodeId, std::int32_t>> ins;
    for (const Value* v : inputs) {
      if (v == nullptr) continue;
      graph_.add_edge(v->producer, id, core::EdgeAttrs{v->bytes(), false});
      grad = grad || v->trainable || requires_grad_.count(v->producer) != 0;
    }
    if (grad) requires_grad_.insert(id);
    ForwardOp op{id, {}, {}, graph_.node(id).flops};
    for (std::size_t i = 0; i < inputs.size(); ++i) {
      if (inputs[i] != nullptr) op.inputs.push_back(*inputs[i]);
    }
    std::int32_t out_index = 0;
    for (int i = 0; i < n.output_size(); ++i) {
      if (n.output(i).empty()) continue;
      Value v = outputs[static_cast<std::size_t>(out_index)];
      v.producer = id;
      v.output = out_index++;
      v.trainable = false;
      set_value(n.output(i), v);
      op.outputs.push_back(v);
    }
    forward_.push_back(std::move(op));
  }

  static std::int64_t key(const Value& v) {
    return (static_cast<std::int64_t>(v.producer) << 8) | v.output;
  }

  bool needs_grad(const Value& v) const {
    return v.trainable || requires_grad_.count(v.producer) != 0;
  }

  NodeId add_backward_node(std::string name, std::string op_type, core::OpKind kind,
                           std::vector<Shape> shapes, Flops flops, Phase phase) {
    core::NodeAttrs n;
    n.name = unique(std::move(name));
    n.op_type = std::move(op_type);
    n.kind = kind;
    n.output_shapes = std::move(shapes);
    n.flops = flops;
    n.phase = phase;
    return graph_.add_node(std::move(n));
  }

  // Sums the partial gradients of a value (AddN when there are several).
  std::optional<Value> take_grad(const Value& v, const std::string& owner) {
    auto it = grads_.find(key(v));
    if (it == grads_.end()) return std::nullopt;
    std::vector<Value> parts = std::move(it->second);
    grads_.erase(it);
    if (parts.size() == 1) return parts.front();
    Value sum = parts.front();
    GradientSum op = gradient_sum(owner, sum.shape, parts.size());
    sum.producer =
        add_backward_node(std::move(op.name), std::string(op.op_type), core::OpKind::kElementwise,
                          {sum.shape}, op.flops, Phase::kBackward);
    sum.output = 0;
    for (const auto& p : parts) {
      graph_.add_edge(p.producer, sum.producer, core::EdgeAttrs{p.bytes(), false});
    }
    return sum;
  }

  // Generic reverse-mode pass: one gradient op per forward op on a path from a trainable
  // initializer, reading the output gradient, the op's inputs and its output; it produces
  // the gradients of the inputs that need one. Matrix ops cost their forward FLOPs once per
  // produced gradient (dX and dW), everything else its forward FLOPs.
  void add_training(const std::vector<std::string>& graph_outputs) {
    std::vector<Value> outs;
    for (const auto& name : graph_outputs) {
      auto it = values_.find(name);
      if (it != values_.end() && needs_grad(it->second)) outs.push_back(it->second);
    }
    if (outs.empty()) fail("", "--training: no graph output depends on a trainable initializer");
    double loss_elems = 0;
    for (const auto& o : outs) loss_elems += elems(o.shape);
    NodeId loss = add_backward_node("loss/ReduceMean", "ReduceMean", core::OpKind::kReduction,
                                    {Shape{}}, loss_elems, Phase::kForward);
    for (const auto& o : outs) graph_.add_edge(o.producer, loss, core::EdgeAttrs{o.bytes(), false});
    NodeId seed = add_backward_node("gradients/Fill", "Fill", core::OpKind::kInput, {Shape{}}, 0,
                                    Phase::kBackward);
    graph_.add_edge(loss, seed, core::EdgeAttrs{4, false});
    for (const auto& o : outs) {
      NodeId g = add_backward_node("gradients/loss/ReduceMean_grad/Tile", "Tile",
                                   core::OpKind::kDataMovement, {o.shape}, 0, Phase::kBackward);
      graph_.add_edge(seed, g, core::EdgeAttrs{4, false});
      Value gv = o;
      gv.producer = g;
      gv.output = 0;
      grads_[key(o)].push_back(gv);
    }
    for (auto it = forward_.rbegin(); it != forward_.rend(); ++it) backprop(*it);
    add_updates();
  }

  void backprop(const ForwardOp& op) {
    const std::string name = graph_.node(op.node).name;
    std::vector<Value> dys;
    for (const auto& out : op.outputs) {
      if (auto g = take_grad(out, name)) dys.push_back(*g);
    }
    if (dys.empty()) return;  // does not reach a graph output
    std::vector<std::size_t> targets;
    std::vector<Shape> shapes;
    for (std::size_t i = 0; i < op.inputs.size(); ++i) {
      if (needs_grad(op.inputs[i])) {
        targets.push_back(i);
        shapes.push_back(op.inputs[i].shape);
      }
    }
    if (targets.empty()) return;
    const auto& fwd = graph_.node(op.node);
    bool matrix = fwd.kind == core::OpKind::kMatMul || fwd.kind == core::OpKind::kConv ||
                  fwd.kind == core::OpKind::kRecurrent;
    Flops flops = matrix ? op.flops * static_cast<double>(targets.size()) : op.flops;
    std::string type = fwd.op_type + "Grad";
    NodeId g = add_backward_node("gradients/" + name + "_grad/" + type, type, fwd.kind,
                                 std::move(shapes), flops, Phase::kBackward);
    for (const auto& d : dys) graph_.add_edge(d.producer, g, core::EdgeAttrs{d.bytes(), false});
    for (const auto& in : op.inputs) {
      graph_.add_edge(in.producer, g, core::EdgeAttrs{in.bytes(), false});
    }
    if (!op.outputs.empty()) {
      graph_.add_edge(op.node, g, core::EdgeAttrs{op.outputs.front().bytes(), false});
    }
    for (std::size_t k = 0; k < targets.size(); ++k) {
      Value gv = op.inputs[targets[k]];
      gv.producer = g;
      gv.output = static_cast<std::int32_t>(k);
      gv.trainable = false;
      grads_[key(op.inputs[targets[k]])].push_back(gv);
    }
  }

  void add_updates() {
    std::vector<NodeId> updates;
    for (NodeId init : initializers_) {
      const auto& n = graph_.node(init);
      Value v;
      v.producer = init;
      v.shape = n.output_shapes.front();
      v.dtype = n.dtype;
      v.trainable = true;
      std::string name = n.name;
      auto grad = take_grad(v, name);
      if (!grad) continue;
      core::Bytes b = v.bytes();
      const VariableUpdate update = variable_update(name, options_.optimizer, v.shape, b);
      core::NodeAttrs u;
      u.name = unique(update.name);
      u.op_type = std::string(update.op_type);
      u.kind = core::OpKind::kUpdate;
      u.output_shapes = {v.shape};
      u.dtype = v.dtype;
      u.flops = update.flops;
      u.param_bytes = update.param_bytes;
      u.bytes_read = update.bytes_read;
      u.bytes_written = update.bytes_written;
      u.phase = Phase::kUpdate;
      u.colocation_group = n.colocation_group;
      NodeId id = graph_.add_node(std::move(u));
      graph_.add_edge(init, id, core::EdgeAttrs{b, false});
      graph_.add_edge(grad->producer, id, core::EdgeAttrs{grad->bytes(), false});
      updates.push_back(id);
    }
    NodeId train = add_backward_node(std::string(kTrainOpName), std::string(kTrainOpType),
                                     core::OpKind::kControl, {}, 0, Phase::kUpdate);
    for (NodeId u : updates) graph_.add_edge(u, train, core::EdgeAttrs{0, true});
  }

 private:
  std::string source_;
  OnnxImportOptions options_;
  core::Graph graph_;
  std::unordered_map<std::string, Value> types_;                 ///< declared types by value name
  std::unordered_map<std::string, onnx::TypeProto> onnx_types_;  ///< of values_, for inference
  std::unordered_map<std::string, onnx::TypeProto*> type_ptrs_;  ///< into onnx_types_
  std::unordered_map<std::string, int> opsets_;                  ///< domain ("" default) -> version
  onnx::shape_inference::SymbolTableImpl symbols_;
  onnx::shape_inference::ModelLocalFunctionsMap local_functions_;
  std::unique_ptr<onnx::shape_inference::GraphInferenceContext> subgraph_context_;
  std::unordered_map<std::string, Value> values_;  ///< produced values by name
  std::unordered_set<std::string> used_names_;
  std::unordered_set<NodeId> requires_grad_;
  std::vector<ForwardOp> forward_;
  std::vector<NodeId> initializers_;
  std::unordered_map<std::int64_t, std::vector<Value>> grads_;
  std::set<std::string> uncosted_;
  std::int64_t num_parameters_ = 0;
};

}  // namespace

OnnxImportResult import_onnx_bytes(std::string_view serialized, const std::string& source,
                                   const OnnxImportOptions& options) {
  return Importer(source, options).run(serialized);
}

OnnxImportResult import_onnx(const std::filesystem::path& path, const OnnxImportOptions& options) {
  std::string bytes = core::read_text_file(path);
  return import_onnx_bytes(bytes, path.string(), options);
}

}  // namespace gopt::datasets
