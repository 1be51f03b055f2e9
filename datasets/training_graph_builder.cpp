#include "datasets/training_graph_builder.h"

#include <algorithm>
#include <utility>

#include "core/errors.h"
#include "datasets/flop_conventions.h"

namespace gopt::datasets {
namespace {

using core::Flops;
using core::NodeId;
using core::Phase;
using core::Shape;

double elems(const Shape& s) { return static_cast<double>(core::num_elements(s)); }

std::int64_t key_of(const Tensor& t) {
  return (static_cast<std::int64_t>(t.node) << 8) | static_cast<std::int64_t>(t.output);
}

std::int64_t window_out(std::int64_t in, std::int64_t k, std::int64_t stride, bool same,
                        std::int64_t dilation = 1) {
  if (same) return (in + stride - 1) / stride;
  std::int64_t eff = (k - 1) * dilation + 1;
  GOPT_ASSERT(in >= eff, "VALID window larger than its input");
  return (in - eff) / stride + 1;
}

}  // namespace

core::Bytes Tensor::bytes() const { return elements() * core::dtype_size_bytes(dtype); }

TrainingGraphBuilder::TrainingGraphBuilder(std::string graph_name, std::string family,
                                           Optimizer optimizer)
    : graph_(std::move(graph_name)), optimizer_(optimizer) {
  graph_.family(std::move(family));
  name_counts_.reserve(1 << 16);
  grads_.reserve(1 << 16);
}

void TrainingGraphBuilder::set_scope(std::string prefix, std::int32_t layer, std::int32_t branch) {
  scope_ = std::move(prefix);
  layer_ = layer;
  branch_ = branch;
}

void TrainingGraphBuilder::attr(std::string key, std::string value) {
  graph_.attr(std::move(key), std::move(value));
}

std::string TrainingGraphBuilder::unique_name(std::string name) {
  auto [it, inserted] = name_counts_.try_emplace(name, 0);
  if (inserted) return name;
  std::int32_t& count = it->second;  // references survive rehashing
  for (;;) {
    std::string candidate = name + "_" + std::to_string(++count);
    if (name_counts_.try_emplace(candidate, 0).second) return candidate;
  }
}

NodeId TrainingGraphBuilder::emit_named(std::string name, std::string_view op_type,
                                        const std::vector<const Tensor*>& inputs,
                                        std::vector<Shape> outputs, Flops flops, Phase phase,
                                        core::DType dtype, std::int32_t layer,
                                        std::int32_t branch) {
  name = unique_name(std::move(name));
  auto ref = graph_.add(name, std::string(op_type));
  for (auto& s : outputs) ref.output(std::move(s));
  ref.dtype(dtype).flops(flops).phase(phase).layer(layer).branch(branch);
  NodeId id = ref.id();
  bool grad = false;
  for (const Tensor* t : inputs) {
    GOPT_ASSERT(t->valid(), "input tensor of '" + name + "' was never produced");
    graph_.connect(t->node, id, t->bytes());
    grad = grad || requires_grad_[static_cast<std::size_t>(t->node)] != 0;
  }
  requires_grad_.push_back(phase == Phase::kForward && grad ? 1 : 0);
  node_names_.push_back(std::move(name));
  return id;
}

NodeId TrainingGraphBuilder::emit(std::string_view op_type, std::string_view base,
                                  const std::vector<const Tensor*>& inputs,
                                  std::vector<Shape> outputs, Flops flops, Phase phase,
                                  core::DType dtype) {
  std::string name;
  name.reserve(scope_.size() + base.size() + 1);
  if (!scope_.empty()) {
    name += scope_;
    name += '/';
  }
  name += base;
  return emit_named(std::move(name), op_type, inputs, std::move(outputs), flops, phase, dtype,
                    layer_, branch_);
}

bool TrainingGraphBuilder::needs_grad(const Tensor& t) const {
  return requires_grad_[static_cast<std::size_t>(t.node)] != 0;
}

std::vector<Tensor> TrainingGraphBuilder::record(Rule rule, NodeId node, std::vector<Tensor> inputs,
                                                 std::vector<Shape> out_shapes, Flops flops) {
  std::vector<Tensor> outputs;
  outputs.reserve(out_shapes.size());
  for (std::size_t i = 0; i < out_shapes.size(); ++i) {
    outputs.push_back(Tensor{node, static_cast<std::int32_t>(i), std::move(out_shapes[i])});
  }
  if (requires_grad_[static_cast<std::size_t>(node)] != 0) {
    tape_.push_back(TapeOp{rule, node, layer_, branch_, flops, std::move(inputs), outputs});
  }
  return outputs;
}

Tensor TrainingGraphBuilder::record1(Rule rule, NodeId node, std::vector<Tensor> inputs,
                                     Shape out_shape, Flops flops) {
  return record(rule, node, std::move(inputs), {std::move(out_shape)}, flops).front();
}

// --- Sources ------------------------------------------------------------------------------

Tensor TrainingGraphBuilder::input(std::string_view name, Shape shape, core::DType dtype) {
  NodeId id = emit("IteratorGetNext", name, {}, {shape}, 0, Phase::kForward, dtype);
  return Tensor{id, 0, std::move(shape), dtype};
}

Tensor TrainingGraphBuilder::constant(std::string_view name, Shape shape, core::DType dtype) {
  NodeId id = emit("Const", name, {}, {shape}, 0, Phase::kForward, dtype);
  return Tensor{id, 0, std::move(shape), dtype};
}

Tensor TrainingGraphBuilder::random_uniform(std::string_view name, Shape shape) {
  NodeId id = emit("RandomUniform", name, {}, {shape}, elems(shape), Phase::kForward);
  return Tensor{id, 0, std::move(shape)};
}

Tensor TrainingGraphBuilder::variable(std::string_view name, Shape shape) {
  std::string full = scope_.empty() ? std::string(name) : scope_ + "/" + std::string(name);
  Tensor tmp{-1, 0, shape};
  NodeId var = emit_named(full, "VariableV2", {}, {shape}, 0, Phase::kForward,
                          core::DType::kFloat32, layer_, branch_);
  const std::string var_name = node_names_[static_cast<std::size_t>(var)];  // copy: vector grows
  graph_.node(var).param_bytes(tmp.bytes()).colocation(var_name);
  Tensor var_t{var, 0, shape};
  NodeId read = emit_named(var_name + "/read", "Identity", {&var_t}, {shape}, 0, Phase::kForward,
                           core::DType::kFloat32, layer_, branch_);
  graph_.node(read).colocation(var_name);
  requires_grad_[static_cast<std::size_t>(read)] = 1;
  num_parameters_ += tmp.elements();
  variables_.push_back(VariableInfo{var, read, shape, var_name, layer_, branch_});
  return Tensor{read, 0, std::move(shape)};
}

// --- Dense algebra --------------------------------------------------------------------------

Tensor TrainingGraphBuilder::matmul(const Tensor& a, const Tensor& b, bool transpose_a,
                                    bool transpose_b) {
  GOPT_ASSERT(a.shape.size() == 2 && b.shape.size() == 2, "matmul needs rank-2 operands");
  std::int64_t m = transpose_a ? a.shape[1] : a.shape[0];
  std::int64_t k = transpose_a ? a.shape[0] : a.shape[1];
  std::int64_t kb = transpose_b ? b.shape[1] : b.shape[0];
  std::int64_t n = transpose_b ? b.shape[0] : b.shape[1];
  GOPT_ASSERT(k == kb, "matmul inner dimensions differ");
  Flops f = 2.0 * static_cast<double>(m) * static_cast<double>(k) * static_cast<double>(n);
  NodeId id = emit("MatMul", "MatMul", {&a, &b}, {{m, n}}, f, Phase::kForward);
  return record1(Rule::kMatMul, id, {a, b}, {m, n}, f);
}

Tensor TrainingGraphBuilder::batch_matmul(const Tensor& a, const Tensor& b, bool transpose_a,
                                          bool transpose_b) {
  std::size_t r = a.shape.size();
  GOPT_ASSERT(r >= 3 && b.shape.size() == r, "batch_matmul needs equal ranks >= 3");
  std::int64_t m = transpose_a ? a.shape[r - 1] : a.shape[r - 2];
  std::int64_t k = transpose_a ? a.shape[r - 2] : a.shape[r - 1];
  std::int64_t kb = transpose_b ? b.shape[r - 1] : b.shape[r - 2];
  std::int64_t n = transpose_b ? b.shape[r - 2] : b.shape[r - 1];
  GOPT_ASSERT(k == kb, "batch_matmul inner dimensions differ");
  Shape out(a.shape.begin(), a.shape.end() - 2);
  double batch = elems(out);
  out.push_back(m);
  out.push_back(n);
  Flops f = 2.0 * batch * static_cast<double>(m) * static_cast<double>(k) * static_cast<double>(n);
  NodeId id = emit("BatchMatMulV2", "MatMul", {&a, &b}, {out}, f, Phase::kForward);
  return record1(Rule::kBatchMatMul, id, {a, b}, out, f);
}

Tensor TrainingGraphBuilder::bias_add(const Tensor& x, const Tensor& bias) {
  GOPT_ASSERT(bias.shape.size() == 1 && bias.shape[0] == x.shape.back(), "bias size mismatch");
  Flops f = elems(x.shape);
  NodeId id = emit("BiasAdd", "BiasAdd", {&x, &bias}, {x.shape}, f, Phase::kForward);
  return record1(Rule::kBiasAdd, id, {x, bias}, x.shape, f);
}

// --- Pointwise --------------------------------------------------------------------------------

Tensor TrainingGraphBuilder::binary(std::string_view op_type, const Tensor& a, const Tensor& b) {
  GOPT_ASSERT(b.shape.size() <= a.shape.size(), "broadcast operand must be the second one");
  for (std::size_t i = 0; i < b.shape.size(); ++i) {
    auto da = a.shape[a.shape.size() - b.shape.size() + i];
    GOPT_ASSERT(b.shape[i] == da || b.shape[i] == 1, "shapes do not broadcast");
  }
  Flops f = elems(a.shape) * kPointwiseFlops;
  Rule rule = op_type == "Mul" ? Rule::kMul : op_type == "Sub" ? Rule::kSub : Rule::kAdd;
  std::string_view base = op_type == "AddV2" ? std::string_view("add") : op_type;
  NodeId id = emit(op_type, base, {&a, &b}, {a.shape}, f, Phase::kForward, a.dtype);
  return record1(rule, id, {a, b}, a.shape, f);
}

Tensor TrainingGraphBuilder::add_n(const std::vector<Tensor>& xs) {
  GOPT_ASSERT(!xs.empty(), "add_n of nothing");
  std::vector<const Tensor*> in;
  for (const auto& x : xs) in.push_back(&x);
  Flops f = elems(xs.front().shape) * static_cast<double>(xs.size() - 1);
  NodeId id = emit("AddN", "AddN", in, {xs.front().shape}, f, Phase::kForward);
  return record1(Rule::kAddN, id, xs, xs.front().shape, f);
}

Tensor TrainingGraphBuilder::add_scalar(const Tensor& x) {
  Flops f = elems(x.shape);
  NodeId id = emit("AddV2", "add", {&x}, {x.shape}, f, Phase::kForward);
  return record1(Rule::kAdd, id, {x}, x.shape, f);
}

Tensor TrainingGraphBuilder::mul_scalar(const Tensor& x) {
  Flops f = elems(x.shape);
  NodeId id = emit("Mul", "mul", {&x}, {x.shape}, f, Phase::kForward);
  return record1(Rule::kMulScalar, id, {x}, x.shape, f);
}

Tensor TrainingGraphBuilder::unary(std::string_view op_type, const Tensor& x) {
  bool transcendental = op_type != "Relu";
  Flops f = elems(x.shape) * (transcendental ? kTranscendentalFlops : kPointwiseFlops);
  Rule rule = op_type == "Sigmoid" ? Rule::kSigmoid : op_type == "Tanh" ? Rule::kTanh : Rule::kRelu;
  NodeId id = emit(op_type, op_type, {&x}, {x.shape}, f, Phase::kForward);
  return record1(rule, id, {x}, x.shape, f);
}

Tensor TrainingGraphBuilder::dropout(const Tensor& x) {
  Tensor r = random_uniform("dropout/random_uniform", x.shape);
  NodeId ge = emit("GreaterEqual", "dropout/GreaterEqual", {&r}, {x.shape}, elems(x.shape),
                   Phase::kForward, core::DType::kBool);
  Tensor mask_bool{ge, 0, x.shape, core::DType::kBool};
  NodeId cast =
      emit("Cast", "dropout/Cast", {&mask_bool}, {x.shape}, elems(x.shape), Phase::kForward);
  Tensor mask{cast, 0, x.shape};
  Tensor scaled = mul_scalar(x);
  return mul(scaled, mask);
}

// --- Shape and data movement ----------------------------------------------------------------

Tensor TrainingGraphBuilder::concat(const std::vector<Tensor>& xs, int axis) {
  GOPT_ASSERT(!xs.empty(), "concat of nothing");
  Shape out = xs.front().shape;
  auto ax = static_cast<std::size_t>(axis);
  out[ax] = 0;
  std::vector<const Tensor*> in;
  for (const auto& x : xs) {
    GOPT_ASSERT(x.shape.size() == out.size(), "concat rank mismatch");
    out[ax] += x.shape[ax];
    in.push_back(&x);
  }
  NodeId id = emit("ConcatV2", "concat", in, {out}, 0, Phase::kForward);
  return record1(Rule::kConcat, id, xs, out, 0);
}

std::vector<Tensor> TrainingGraphBuilder::split(const Tensor& x, int axis, int num_splits) {
  auto ax = static_cast<std::size_t>(axis);
  GOPT_ASSERT(x.shape[ax] % num_splits == 0, "split does not divide the axis");
  std::vector<std::int64_t> sizes(static_cast<std::size_t>(num_splits), x.shape[ax] / num_splits);
  return split_sizes(x, axis, sizes);
}

std::vector<Tensor> TrainingGraphBuilder::split_sizes(const Tensor& x, int axis,
                                                      const std::vector<std::int64_t>& sizes) {
  auto ax = static_cast<std::size_t>(axis);
  std::vector<Shape> outs;
  std::int64_t total = 0;
  bool equal = true;
  for (auto s : sizes) {
    Shape o = x.shape;
    o[ax] = s;
    outs.push_back(std::move(o));
    total += s;
    equal = equal && s == sizes.front();
  }
  GOPT_ASSERT(total == x.shape[ax], "split sizes do not add up");
  NodeId id = emit(equal ? "Split" : "SplitV", "split", {&x}, outs, 0, Phase::kForward);
  return record(Rule::kSplit, id, {x}, std::move(outs), 0);
}

std::vector<Tensor> TrainingGraphBuilder::unstack(const Tensor& x, int axis) {
  auto ax = static_cast<std::size_t>(axis);
  Shape o = x.shape;
  o.erase(o.begin() + axis);
  std::vector<Shape> outs(static_cast<std::size_t>(x.shape[ax]), o);
  NodeId id = emit("Unpack", "unstack", {&x}, outs, 0, Phase::kForward, x.dtype);
  auto result = record(Rule::kUnstack, id, {x}, std::move(outs), 0);
  for (auto& t : result) t.dtype = x.dtype;
  return result;
}

Tensor TrainingGraphBuilder::stack(const std::vector<Tensor>& xs, int axis) {
  Shape out = xs.front().shape;
  out.insert(out.begin() + axis, static_cast<std::int64_t>(xs.size()));
  std::vector<const Tensor*> in;
  for (const auto& x : xs) in.push_back(&x);
  NodeId id = emit("Pack", "stack", in, {out}, 0, Phase::kForward);
  return record1(Rule::kStack, id, xs, out, 0);
}

Tensor TrainingGraphBuilder::reshape(const Tensor& x, Shape shape) {
  GOPT_ASSERT(core::num_elements(shape) == x.elements(), "reshape changes the element count");
  NodeId id = emit("Reshape", "Reshape", {&x}, {shape}, 0, Phase::kForward, x.dtype);
  Tensor t = record1(Rule::kReshape, id, {x}, std::move(shape), 0);
  t.dtype = x.dtype;
  return t;
}

Tensor TrainingGraphBuilder::transpose(const Tensor& x, const std::vector<int>& perm) {
  Shape out;
  for (int p : perm) out.push_back(x.shape[static_cast<std::size_t>(p)]);
  NodeId id = emit("Transpose", "transpose", {&x}, {out}, 0, Phase::kForward);
  return record1(Rule::kTranspose, id, {x}, out, 0);
}

Tensor TrainingGraphBuilder::pad(const Tensor& x,
                                 const std::vector<std::pair<std::int64_t, std::int64_t>>& p) {
  Shape out = x.shape;
  for (std::size_t i = 0; i < p.size(); ++i) out[i] += p[i].first + p[i].second;
  NodeId id = emit("Pad", "Pad", {&x}, {out}, 0, Phase::kForward);
  return record1(Rule::kPad, id, {x}, out, 0);
}

Tensor TrainingGraphBuilder::slice(const Tensor& x, Shape shape) {
  NodeId id = emit("Slice", "Slice", {&x}, {shape}, 0, Phase::kForward);
  return record1(Rule::kSlice, id, {x}, std::move(shape), 0);
}

Tensor TrainingGraphBuilder::stop_gradient(const Tensor& x) {
  NodeId id = emit("StopGradient", "StopGradient", {&x}, {x.shape}, 0, Phase::kForward);
  requires_grad_[static_cast<std::size_t>(id)] = 0;
  return Tensor{id, 0, x.shape};
}

// --- Reductions, losses, normalisation --------------------------------------------------------

Tensor TrainingGraphBuilder::reduce_sum(const Tensor& x, int axis) {
  Shape out = x.shape;
  out.erase(out.begin() + axis);
  Flops f = elems(x.shape);
  NodeId id = emit("Sum", "Sum", {&x}, {out}, f, Phase::kForward);
  return record1(Rule::kReduceSum, id, {x}, out, f);
}

Tensor TrainingGraphBuilder::mean(const Tensor& x) {
  Flops f = elems(x.shape);
  NodeId id = emit("Mean", "Mean", {&x}, {Shape{}}, f, Phase::kForward);
  return record1(Rule::kMean, id, {x}, Shape{}, f);
}

Tensor TrainingGraphBuilder::softmax(const Tensor& logits) {
  Flops f = elems(logits.shape) * kSoftmaxFlops;
  NodeId id = emit("Softmax", "Softmax", {&logits}, {logits.shape}, f, Phase::kForward);
  return record1(Rule::kSoftmax, id, {logits}, logits.shape, f);
}

Tensor TrainingGraphBuilder::sparse_softmax_cross_entropy(const Tensor& logits,
                                                          const Tensor& labels) {
  GOPT_ASSERT(
      logits.shape.size() == 2 && labels.shape.size() == 1 && labels.shape[0] == logits.shape[0],
      "cross entropy needs logits [n, classes] and labels [n]");
  Flops f = elems(logits.shape) * kSoftmaxFlops;
  // Outputs: the per-example loss and the backprop (softmax - onehot) used by the gradient.
  NodeId id = emit("SparseSoftmaxCrossEntropyWithLogits", "SparseSoftmaxCrossEntropyWithLogits",
                   {&logits, &labels}, {Shape{logits.shape[0]}, logits.shape}, f, Phase::kForward);
  return record(Rule::kSparseXent, id, {logits, labels}, {Shape{logits.shape[0]}, logits.shape}, f)
      .front();
}

Tensor TrainingGraphBuilder::gather(const Tensor& table, const Tensor& ids) {
  GOPT_ASSERT(table.shape.size() == 2, "gather needs a [vocab, dim] table");
  Shape out = ids.shape;
  out.push_back(table.shape[1]);
  NodeId id = emit("GatherV2", "embedding_lookup", {&table, &ids}, {out}, 0, Phase::kForward);
  // Reads the gathered rows and the ids, not the whole table.
  Tensor t = record1(Rule::kGather, id, {table, ids}, out, 0);
  graph_.node(id).bytes_read(t.bytes() + ids.bytes());
  return t;
}

Tensor TrainingGraphBuilder::layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta) {
  Flops f = elems(x.shape) * kNormFlops;
  NodeId id = emit("LayerNorm", "LayerNorm", {&x, &gamma, &beta}, {x.shape}, f, Phase::kForward);
  return record1(Rule::kLayerNorm, id, {x, gamma, beta}, x.shape, f);
}

// --- Convolutions -------------------------------------------------------------------------------

Tensor TrainingGraphBuilder::conv2d(const Tensor& x, const Tensor& filter, int stride_h,
                                    int stride_w, bool same_padding, int dilation) {
  GOPT_ASSERT(x.shape.size() == 4 && filter.shape.size() == 4 && filter.shape[2] == x.shape[3],
              "conv2d needs x [n,h,w,c] and filter [kh,kw,c,k]");
  Shape out{x.shape[0], window_out(x.shape[1], filter.shape[0], stride_h, same_padding, dilation),
            window_out(x.shape[2], filter.shape[1], stride_w, same_padding, dilation),
            filter.shape[3]};
  Flops f = 2.0 * elems(out) * static_cast<double>(filter.shape[0] * filter.shape[1] * x.shape[3]);
  NodeId id = emit("Conv2D", "Conv2D", {&x, &filter}, {out}, f, Phase::kForward);
  return record1(Rule::kConv2D, id, {x, filter}, out, f);
}

Tensor TrainingGraphBuilder::depthwise_conv2d(const Tensor& x, const Tensor& filter, int stride,
                                              bool same_padding) {
  GOPT_ASSERT(x.shape.size() == 4 && filter.shape.size() == 4 && filter.shape[2] == x.shape[3],
              "depthwise conv needs x [n,h,w,c] and filter [kh,kw,c,1]");
  Shape out{x.shape[0], window_out(x.shape[1], filter.shape[0], stride, same_padding),
            window_out(x.shape[2], filter.shape[1], stride, same_padding),
            x.shape[3] * filter.shape[3]};
  Flops f = 2.0 * elems(out) * static_cast<double>(filter.shape[0] * filter.shape[1]);
  NodeId id = emit("DepthwiseConv2dNative", "depthwise", {&x, &filter}, {out}, f, Phase::kForward);
  return record1(Rule::kDepthwiseConv2D, id, {x, filter}, out, f);
}

Tensor TrainingGraphBuilder::batch_norm(const Tensor& x, const Tensor& scale,
                                        const Tensor& offset) {
  Shape c{x.shape.back()};
  Flops f = elems(x.shape) * kNormFlops;
  NodeId id = emit("FusedBatchNormV3", "FusedBatchNormV3", {&x, &scale, &offset}, {x.shape, c, c},
                   f, Phase::kForward);
  return record(Rule::kBatchNorm, id, {x, scale, offset}, {x.shape, c, c}, f).front();
}

Tensor TrainingGraphBuilder::pool(std::string_view op_type, const Tensor& x, int window, int stride,
                                  bool same) {
  Shape out{x.shape[0], window_out(x.shape[1], window, stride, same),
            window_out(x.shape[2], window, stride, same), x.shape[3]};
  Flops f = elems(out) * static_cast<double>(window * window);
  NodeId id = emit(op_type, op_type, {&x}, {out}, f, Phase::kForward);
  return record1(op_type == "MaxPool" ? Rule::kMaxPool : Rule::kAvgPool, id, {x}, out, f);
}

Tensor TrainingGraphBuilder::max_pool(const Tensor& x, int window, int stride, bool same_padding) {
  return pool("MaxPool", x, window, stride, same_padding);
}

Tensor TrainingGraphBuilder::avg_pool(const Tensor& x, int window, int stride, bool same_padding) {
  return pool("AvgPool", x, window, stride, same_padding);
}

// --- Backward pass
// --------------------------------------------------------------------------------

std::vector<Tensor> TrainingGraphBuilder::grad_op(const TapeOp& op, std::string_view op_type,
                                                  const std::vector<const Tensor*>& in,
                                                  std::vector<Shape> shapes, Flops flops) {
  const std::string& fwd = node_names_[static_cast<std::size_t>(op.node)];
  std::string name;
  name.reserve(fwd.size() + op_type.size() + 17);
  name += "gradients/";
  name += fwd;
  name += "_grad/";
  name += op_type;
  std::vector<Shape> copy = shapes;
  NodeId id = emit_named(std::move(name), op_type, in, std::move(copy), flops, Phase::kBackward,
                         core::DType::kFloat32, op.layer, op.branch);
  std::vector<Tensor> out;
  for (std::size_t i = 0; i < shapes.size(); ++i) {
    out.push_back(Tensor{id, static_cast<std::int32_t>(i), std::move(shapes[i])});
  }
  return out;
}

Tensor TrainingGraphBuilder::grad_op1(const TapeOp& op, std::string_view op_type,
                                      const std::vector<const Tensor*>& in, Shape shape,
                                      Flops flops) {
  return grad_op(op, op_type, in, {std::move(shape)}, flops).front();
}

void TrainingGraphBuilder::add_grad(const Tensor& target, Tensor grad) {
  if (!needs_grad(target)) return;
  grads_[key_of(target)].push_back(std::move(grad));
}

std::optional<Tensor> TrainingGraphBuilder::take_grad(const Tensor& t, const std::string& owner,
                                                      std::int32_t layer, std::int32_t branch) {
  auto it = grads_.find(key_of(t));
  if (it == grads_.end() || it->second.empty()) return std::nullopt;
  std::vector<Tensor> parts = std::move(it->second);
  grads_.erase(it);
  if (parts.size() == 1) return parts.front();
  std::vector<const Tensor*> in;
  for (const auto& p : parts) in.push_back(&p);
  Shape s = parts.front().shape;
  GradientSum sum = gradient_sum(owner, s, parts.size());
  NodeId id = emit_named(std::move(sum.name), sum.op_type, in, {s}, sum.flops, Phase::kBackward,
                         core::DType::kFloat32, layer, branch);
  return Tensor{id, 0, std::move(s)};
}

void TrainingGraphBuilder::backprop_op(const TapeOp& op) {
  const std::string& name = node_names_[static_cast<std::size_t>(op.node)];
  std::vector<std::optional<Tensor>> dys;
  dys.reserve(op.outputs.size());
  bool any = false;
  for (const auto& out : op.outputs) {
    dys.push_back(take_grad(out, name, op.layer, op.branch));
    any = any || dys.back().has_value();
  }
  if (!any) return;  // does not contribute to the loss
  const auto& in = op.inputs;
  auto need = [&](std::size_t i) { return needs_grad(in[i]); };
  const Tensor* dy = dys.front() ? &*dys.front() : nullptr;
  switch (op.rule) {
    case Rule::kPassThrough:
      add_grad(in[0], *dy);
      break;
    case Rule::kMatMul:
    case Rule::kBatchMatMul: {
      std::string_view type = op.rule == Rule::kMatMul ? "MatMul" : "BatchMatMulV2";
      if (need(0)) add_grad(in[0], grad_op1(op, type, {dy, &in[1]}, in[0].shape, op.flops));
      if (need(1)) add_grad(in[1], grad_op1(op, type, {&in[0], dy}, in[1].shape, op.flops));
      break;
    }
    case Rule::kBiasAdd:
      add_grad(in[0], *dy);
      if (need(1)) add_grad(in[1], grad_op1(op, "BiasAddGrad", {dy}, in[1].shape, op.flops));
      break;
    case Rule::kAdd:
    case Rule::kSub:
    case Rule::kMul:
    case Rule::kMulScalar:
      // TF 1.x's _AddGrad/_SubGrad/_MulGrad: per input, the pointwise gradient, then Sum over
      // the broadcast axes and Reshape back to the input's shape (emitted even when nothing
      // is broadcast, as TF does before Grappler).
      for (std::size_t i = 0; i < in.size(); ++i) {
        if (!need(i)) continue;
        Tensor g = *dy;
        if (op.rule == Rule::kMul || op.rule == Rule::kMulScalar) {
          std::vector<const Tensor*> args{dy};
          if (in.size() == 2) args.push_back(&in[1 - i]);
          g = grad_op1(op, "Mul", args, dy->shape, elems(dy->shape));
        } else if (op.rule == Rule::kSub && i == 1) {
          g = grad_op1(op, "Neg", {dy}, dy->shape, elems(dy->shape));
        }
        Tensor summed = grad_op1(op, "Sum", {&g}, in[i].shape, elems(g.shape));
        add_grad(in[i], grad_op1(op, "Reshape", {&summed}, in[i].shape, 0));
      }
      break;
    case Rule::kAddN:
      for (const auto& x : in) add_grad(x, *dy);
      break;
    case Rule::kSigmoid:
      add_grad(in[0],
               grad_op1(op, "SigmoidGrad", {&op.outputs[0], dy}, dy->shape, 3 * elems(dy->shape)));
      break;
    case Rule::kTanh:
      add_grad(in[0],
               grad_op1(op, "TanhGrad", {&op.outputs[0], dy}, dy->shape, 3 * elems(dy->shape)));
      break;
    case Rule::kRelu:
      add_grad(in[0], grad_op1(op, "ReluGrad", {dy, &op.outputs[0]}, dy->shape, op.flops));
      break;
    case Rule::kConcat:
      for (std::size_t i = 0; i < in.size(); ++i) {
        if (need(i)) add_grad(in[i], grad_op1(op, "Slice", {dy}, in[i].shape, 0));
      }
      break;
    case Rule::kSplit:
    case Rule::kUnstack: {
      std::vector<Tensor> parts;
      for (std::size_t i = 0; i < dys.size(); ++i) {
        if (dys[i]) {
          parts.push_back(*dys[i]);
        } else {
          parts.push_back(grad_op1(op, "ZerosLike", {&op.outputs[i]}, op.outputs[i].shape, 0));
        }
      }
      std::vector<const Tensor*> ptrs;
      for (const auto& p : parts) ptrs.push_back(&p);
      add_grad(in[0],
               grad_op1(op, op.rule == Rule::kSplit ? "ConcatV2" : "Pack", ptrs, in[0].shape, 0));
      break;
    }
    case Rule::kStack: {
      std::vector<Shape> shapes;
      for (const auto& x : in) shapes.push_back(x.shape);
      auto parts = grad_op(op, "Unpack", {dy}, std::move(shapes), 0);
      for (std::size_t i = 0; i < in.size(); ++i) add_grad(in[i], parts[i]);
      break;
    }
    case Rule::kReshape:
      add_grad(in[0], grad_op1(op, "Reshape", {dy}, in[0].shape, 0));
      break;
    case Rule::kTranspose:
      add_grad(in[0], grad_op1(op, "Transpose", {dy}, in[0].shape, 0));
      break;
    case Rule::kPad:
      add_grad(in[0], grad_op1(op, "Slice", {dy}, in[0].shape, 0));
      break;
    case Rule::kSlice:
      add_grad(in[0], grad_op1(op, "Pad", {dy}, in[0].shape, 0));
      break;
    case Rule::kReduceSum:
      add_grad(in[0], grad_op1(op, "Tile", {dy}, in[0].shape, 0));
      break;
    case Rule::kMean: {
      Tensor tiled = grad_op1(op, "Tile", {dy}, in[0].shape, 0);
      add_grad(in[0], grad_op1(op, "RealDiv", {&tiled}, in[0].shape, elems(in[0].shape)));
      break;
    }
    case Rule::kSoftmax:
      add_grad(in[0],
               grad_op1(op, "SoftmaxGrad", {dy, &op.outputs[0]}, in[0].shape, op.flops * 0.8));
      break;
    case Rule::kSparseXent: {
      Tensor expanded = grad_op1(op, "ExpandDims", {dy}, {dy->shape[0], 1}, 0);
      add_grad(in[0],
               grad_op1(op, "Mul", {&expanded, &op.outputs[1]}, in[0].shape, elems(in[0].shape)));
      break;
    }
    case Rule::kGather:
      if (need(0)) {
        add_grad(in[0],
                 grad_op1(op, "UnsortedSegmentSum", {dy, &in[1]}, in[0].shape, elems(dy->shape)));
      }
      break;
    case Rule::kLayerNorm: {
      auto g = grad_op(op, "LayerNormGrad", {dy, &in[0], &in[1]},
                       {in[0].shape, in[1].shape, in[2].shape}, op.flops);
      for (std::size_t i = 0; i < 3; ++i) add_grad(in[i], g[i]);
      break;
    }
    case Rule::kConv2D:
    case Rule::kDepthwiseConv2D: {
      bool depthwise = op.rule == Rule::kDepthwiseConv2D;
      if (need(0)) {
        add_grad(
            in[0],
            grad_op1(op, depthwise ? "DepthwiseConv2dNativeBackpropInput" : "Conv2DBackpropInput",
                     {&in[1], dy}, in[0].shape, op.flops));
      }
      if (need(1)) {
        add_grad(
            in[1],
            grad_op1(op, depthwise ? "DepthwiseConv2dNativeBackpropFilter" : "Conv2DBackpropFilter",
                     {&in[0], dy}, in[1].shape, op.flops));
      }
      break;
    }
    case Rule::kBatchNorm: {
      auto g =
          grad_op(op, "FusedBatchNormGradV3", {dy, &in[0], &in[1], &op.outputs[1], &op.outputs[2]},
                  {in[0].shape, in[1].shape, in[2].shape}, op.flops);
      for (std::size_t i = 0; i < 3; ++i) add_grad(in[i], g[i]);
      break;
    }
    case Rule::kMaxPool:
      add_grad(in[0],
               grad_op1(op, "MaxPoolGrad", {&in[0], &op.outputs[0], dy}, in[0].shape, op.flops));
      break;
    case Rule::kAvgPool:
      add_grad(in[0], grad_op1(op, "AvgPoolGrad", {dy}, in[0].shape, op.flops));
      break;
  }
}

void TrainingGraphBuilder::backward(const Tensor& loss) {
  // TF seeds tf.gradients with Fill(Shape(loss), 1): the seed depends on the loss, so every
  // gradient op has a path from the forward ops it differentiates.
  NodeId seed = emit_named("gradients/Fill", "Fill", {&loss}, {loss.shape}, 0, Phase::kBackward,
                           core::DType::kFloat32, -1, -1);
  add_grad(loss, Tensor{seed, 0, loss.shape});
  for (auto it = tape_.rbegin(); it != tape_.rend(); ++it) backprop_op(*it);
}

void TrainingGraphBuilder::add_updates() {
  std::vector<NodeId> updates;
  updates.reserve(variables_.size());
  for (const auto& v : variables_) {
    Tensor read{v.read, 0, v.shape};
    std::optional<Tensor> grad = take_grad(read, v.name, v.layer, v.branch);
    if (!grad) continue;  // not used by the loss: TF would not update it either
    Tensor var{v.var, 0, v.shape};
    const VariableUpdate u = variable_update(v.name, optimizer_, v.shape, var.bytes());
    NodeId up = emit_named(u.name, u.op_type, {&var, &*grad}, {v.shape}, u.flops, Phase::kUpdate,
                           core::DType::kFloat32, v.layer, v.branch);
    graph_.node(up)
        .colocation(v.name)
        .param_bytes(u.param_bytes)
        .bytes_read(u.bytes_read)
        .bytes_written(u.bytes_written);
    updates.push_back(up);
  }
  NodeId train = emit_named(std::string(kTrainOpName), kTrainOpType, {}, {}, 0, Phase::kUpdate,
                            core::DType::kFloat32, -1, -1);
  for (NodeId u : updates) graph_.control(u, train);
}

core::Graph TrainingGraphBuilder::finish(const Tensor& loss) && {
  backward(loss);
  add_updates();
  graph_.attr("num_parameters", std::to_string(num_parameters_));
  graph_.attr("optimizer", std::string(optimizer_name(optimizer_)));
  return std::move(graph_).build();
}

}  // namespace gopt::datasets
