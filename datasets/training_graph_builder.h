// TrainingGraphBuilder: writes TensorFlow-1.x-granularity training-step graphs. Workload
// generators call forward ops (matmul, sigmoid, conv2d, ...) on Tensor handles; the
// builder records each op on a tape, and `finish(loss)` appends the gradient ops TF's
// `tf.gradients` would create for them (MatMul grad = two MatMuls, SigmoidGrad, AddN
// accumulation for tensors with several consumers, ...) and one optimizer update per
// variable, then a `train_op` NoOp that depends on every update.
//
//   TrainingGraphBuilder b("mlp", "mlp");
//   Tensor x = b.input("x", {64, 784});
//   Tensor w = b.variable("fc/kernel", {784, 10});
//   Tensor loss = b.mean(b.sparse_softmax_cross_entropy(b.matmul(x, w), b.input(...)));
//   core::Graph g = std::move(b).finish(loss);
//
// Cost conventions (docs/workloads.md): a multiply-add is 2 FLOPs; pointwise arithmetic 1
// FLOP per output element, transcendental functions (sigmoid, tanh, exp) 4; every edge
// carries the bytes of the tensor it transports; an op reads its input edges' bytes and
// writes its outputs (float32 unless stated).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "core/graph.h"
#include "datasets/training_step.h"

namespace gopt::datasets {

/// A tensor produced by an op of the graph being built: (node, output index) plus its
/// shape and element type. Cheap to copy for the small shapes involved.
struct Tensor {
  core::NodeId node = -1;
  std::int32_t output = 0;
  core::Shape shape;
  core::DType dtype = core::DType::kFloat32;

  [[nodiscard]] std::int64_t elements() const { return core::num_elements(shape); }
  [[nodiscard]] core::Bytes bytes() const;
  [[nodiscard]] bool valid() const { return node >= 0; }
};

/// Builds a forward graph and derives its backward and update ops. Not copyable; every
/// op method throws nothing for valid shapes and asserts (GOPT_ASSERT) on shape mismatch,
/// since shapes come from the generators, not from users.
class TrainingGraphBuilder {
 public:
  TrainingGraphBuilder(std::string graph_name, std::string family,
                       Optimizer optimizer = Optimizer::kAdam);
  TrainingGraphBuilder(const TrainingGraphBuilder&) = delete;
  TrainingGraphBuilder& operator=(const TrainingGraphBuilder&) = delete;

  /// Name prefix ("decoder/layer_3/t_7"), layer and branch of the ops added next; the
  /// gradient ops of an op inherit its layer and branch.
  void set_scope(std::string prefix, std::int32_t layer = -1, std::int32_t branch = -1);
  [[nodiscard]] const std::string& scope() const { return scope_; }
  [[nodiscard]] std::int32_t layer() const { return layer_; }
  void set_branch(std::int32_t branch) { branch_ = branch; }

  /// Graph-level metadata (hyperparameters).
  void attr(std::string key, std::string value);

  // --- Sources -----------------------------------------------------------------------
  /// A training input (IteratorGetNext output in TF); no gradient.
  Tensor input(std::string_view name, core::Shape shape, core::DType dtype = core::DType::kFloat32);
  /// A constant (zero state, masks); no gradient.
  Tensor constant(std::string_view name, core::Shape shape,
                  core::DType dtype = core::DType::kFloat32);
  /// A trainable variable: VariableV2 (param_bytes = its bytes) and its `read` Identity,
  /// both in colocation group `name`; finish() adds its update op to the same group.
  /// Returns the read tensor.
  Tensor variable(std::string_view name, core::Shape shape);
  /// A random tensor of `shape` (RandomUniform); no gradient.
  Tensor random_uniform(std::string_view name, core::Shape shape);

  // --- Dense algebra -----------------------------------------------------------------
  /// [m,k] x [k,n] (with optional transposes), as TF MatMul.
  Tensor matmul(const Tensor& a, const Tensor& b, bool transpose_a = false,
                bool transpose_b = false);
  /// [..., m, k] x [..., k, n] over equal batch dimensions (BatchMatMulV2).
  Tensor batch_matmul(const Tensor& a, const Tensor& b, bool transpose_a = false,
                      bool transpose_b = false);
  /// x + bias over the last dimension.
  Tensor bias_add(const Tensor& x, const Tensor& bias);

  // --- Pointwise ---------------------------------------------------------------------
  /// Binary pointwise op (Add, AddV2, Sub, Mul, RealDiv) with NumPy broadcasting of `b`
  /// (b's shape must be a suffix of a's, or equal).
  Tensor add(const Tensor& a, const Tensor& b) { return binary("AddV2", a, b); }
  Tensor sub(const Tensor& a, const Tensor& b) { return binary("Sub", a, b); }
  Tensor mul(const Tensor& a, const Tensor& b) { return binary("Mul", a, b); }
  /// Sum of same-shaped tensors (AddN).
  Tensor add_n(const std::vector<Tensor>& xs);
  /// x op scalar constant (e.g. forget bias, 1/keep_prob): pointwise, gradient passes
  /// through unchanged for Add and needs a Mul for Mul.
  Tensor add_scalar(const Tensor& x);
  Tensor mul_scalar(const Tensor& x);
  Tensor sigmoid(const Tensor& x) { return unary("Sigmoid", x); }
  Tensor tanh(const Tensor& x) { return unary("Tanh", x); }
  Tensor relu(const Tensor& x) { return unary("Relu", x); }
  /// Inverted dropout as TF 1.x builds it: RandomUniform, GreaterEqual, Cast, Mul, Mul.
  Tensor dropout(const Tensor& x);

  // --- Shape and data movement -------------------------------------------------------
  Tensor concat(const std::vector<Tensor>& xs, int axis);
  std::vector<Tensor> split(const Tensor& x, int axis, int num_splits);
  /// Splits along `axis` into unequal parts (SplitV).
  std::vector<Tensor> split_sizes(const Tensor& x, int axis,
                                  const std::vector<std::int64_t>& sizes);
  /// Unstacks along `axis` (Unpack): the per-time-step inputs of an unrolled RNN.
  std::vector<Tensor> unstack(const Tensor& x, int axis);
  /// Stacks same-shaped tensors along a new `axis` (Pack).
  Tensor stack(const std::vector<Tensor>& xs, int axis);
  Tensor reshape(const Tensor& x, core::Shape shape);
  Tensor transpose(const Tensor& x, const std::vector<int>& perm);
  /// Zero-pads each dimension by (before, after).
  Tensor pad(const Tensor& x, const std::vector<std::pair<std::int64_t, std::int64_t>>& paddings);
  /// A contiguous slice of `shape` (Slice); the gradient pads it back.
  Tensor slice(const Tensor& x, core::Shape shape);
  /// Blocks the gradient (memory of Transformer-XL).
  Tensor stop_gradient(const Tensor& x);

  // --- Reductions, losses, normalisation ---------------------------------------------
  /// Sum over `axis` (removing it).
  Tensor reduce_sum(const Tensor& x, int axis);
  /// Mean over all elements: a scalar.
  Tensor mean(const Tensor& x);
  Tensor softmax(const Tensor& logits);
  /// Per-example loss of logits [n, classes] against int32 labels [n].
  Tensor sparse_softmax_cross_entropy(const Tensor& logits, const Tensor& labels);
  /// Row lookup of int32 `ids` in `table` [vocab, dim] (GatherV2): ids.shape + [dim].
  Tensor gather(const Tensor& table, const Tensor& ids);
  /// Layer normalisation over the last dimension with gamma and beta [dim].
  Tensor layer_norm(const Tensor& x, const Tensor& gamma, const Tensor& beta);

  // --- Convolutions (NHWC) -----------------------------------------------------------
  /// 2-D convolution of x [n,h,w,c] with filter [kh,kw,c,k]; "SAME" padding when
  /// `same_padding`, else "VALID"; dilation applies to both spatial dims.
  Tensor conv2d(const Tensor& x, const Tensor& filter, int stride_h, int stride_w,
                bool same_padding, int dilation = 1);
  /// Depthwise convolution with filter [kh,kw,c,1] (DepthwiseConv2dNative).
  Tensor depthwise_conv2d(const Tensor& x, const Tensor& filter, int stride, bool same_padding);
  /// Training-mode batch normalisation (FusedBatchNormV3) with scale and offset [c].
  Tensor batch_norm(const Tensor& x, const Tensor& scale, const Tensor& offset);
  Tensor max_pool(const Tensor& x, int window, int stride, bool same_padding);
  Tensor avg_pool(const Tensor& x, int window, int stride, bool same_padding);

  /// Appends the gradient of `loss` w.r.t. every variable, one update op per variable and
  /// the `train_op` NoOp; completes and validates the graph. Attributes `num_parameters`
  /// (trainable scalars) and `optimizer` are set on the graph.
  [[nodiscard]] core::Graph finish(const Tensor& loss) &&;

  /// Trainable scalars added so far.
  [[nodiscard]] std::int64_t num_parameters() const { return num_parameters_; }

 private:
  // How the gradient of a recorded forward op is built (training_graph_builder.cpp).
  enum class Rule : std::uint8_t {
    kPassThrough,
    kMatMul,
    kBatchMatMul,
    kBiasAdd,
    kAdd,
    kSub,
    kMul,
    kAddN,
    kMulScalar,
    kSigmoid,
    kTanh,
    kRelu,
    kConcat,
    kSplit,
    kUnstack,
    kStack,
    kReshape,
    kTranspose,
    kPad,
    kSlice,
    kReduceSum,
    kMean,
    kSoftmax,
    kSparseXent,
    kGather,
    kLayerNorm,
    kConv2D,
    kDepthwiseConv2D,
    kBatchNorm,
    kMaxPool,
    kAvgPool
  };
  /// A forward op whose output depends on a variable, kept for the backward pass.
  struct TapeOp {
    Rule rule;
    core::NodeId node;
    std::int32_t layer;
    std::int32_t branch;
    core::Flops flops;
    std::vector<Tensor> inputs;
    std::vector<Tensor> outputs;
  };
  struct VariableInfo {
    core::NodeId var = -1;
    core::NodeId read = -1;
    core::Shape shape;
    std::string name;
    std::int32_t layer = -1;
    std::int32_t branch = -1;
  };

  /// Adds a node named scope/base (made unique), edges from `inputs`, the given outputs.
  core::NodeId emit(std::string_view op_type, std::string_view base,
                    const std::vector<const Tensor*>& inputs, std::vector<core::Shape> outputs,
                    core::Flops flops, core::Phase phase,
                    core::DType dtype = core::DType::kFloat32);
  core::NodeId emit_named(std::string name, std::string_view op_type,
                          const std::vector<const Tensor*>& inputs,
                          std::vector<core::Shape> outputs, core::Flops flops, core::Phase phase,
                          core::DType dtype, std::int32_t layer, std::int32_t branch);
  std::string unique_name(std::string name);
  /// Records a forward op (if it needs a gradient) and returns its outputs.
  std::vector<Tensor> record(Rule rule, core::NodeId node, std::vector<Tensor> inputs,
                             std::vector<core::Shape> out_shapes, core::Flops flops);
  Tensor record1(Rule rule, core::NodeId node, std::vector<Tensor> inputs, core::Shape out_shape,
                 core::Flops flops);
  bool needs_grad(const Tensor& t) const;
  Tensor unary(std::string_view op_type, const Tensor& x);
  Tensor binary(std::string_view op_type, const Tensor& a, const Tensor& b);
  Tensor pool(std::string_view op_type, const Tensor& x, int window, int stride, bool same);

  // Backward pass helpers (training_graph_builder.cpp).
  void backward(const Tensor& loss);
  void add_updates();
  void backprop_op(const TapeOp& op);
  /// A gradient op of `op` named gradients/<op>_grad/<op_type>; returns its outputs.
  std::vector<Tensor> grad_op(const TapeOp& op, std::string_view op_type,
                              const std::vector<const Tensor*>& in, std::vector<core::Shape> shapes,
                              core::Flops flops);
  Tensor grad_op1(const TapeOp& op, std::string_view op_type, const std::vector<const Tensor*>& in,
                  core::Shape shape, core::Flops flops);
  /// The summed gradient of a tensor (an AddN when it has several partials), if any.
  std::optional<Tensor> take_grad(const Tensor& t, const std::string& owner, std::int32_t layer,
                                  std::int32_t branch);
  void add_grad(const Tensor& target, Tensor grad);

  core::GraphBuilder graph_;
  Optimizer optimizer_;
  std::string scope_;
  std::int32_t layer_ = -1;
  std::int32_t branch_ = -1;
  std::unordered_map<std::string, std::int32_t> name_counts_;
  std::vector<char> requires_grad_;  ///< per node: does any output depend on a variable
  std::vector<TapeOp> tape_;
  std::vector<VariableInfo> variables_;
  std::vector<std::string> node_names_;  ///< by node id, for gradient op names
  /// Partial gradients per (node << 8 | output), summed with AddN when read.
  std::unordered_map<std::int64_t, std::vector<Tensor>> grads_;
  std::int64_t num_parameters_ = 0;
};

}  // namespace gopt::datasets
