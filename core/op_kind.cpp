#include "core/op_kind.h"

#include <array>
#include <unordered_map>

namespace gopt::core {
namespace {

constexpr std::array<std::string_view, kNumOpKinds> kKindNames = {
    "input",     "variable",      "matmul",  "conv",      "pool",          "elementwise",
    "reduction", "normalization", "softmax", "embedding", "data_movement", "reshape",
    "recurrent", "update",        "control", "other"};

constexpr std::array<std::string_view, 9> kDTypeNames = {
    "float32", "float16", "bfloat16", "float64", "int8", "uint8", "int32", "int64", "bool"};
constexpr std::array<int, 9> kDTypeSizes = {4, 2, 2, 8, 1, 1, 4, 8, 1};

constexpr std::array<std::string_view, 4> kPhaseNames = {"unknown", "forward", "backward",
                                                         "update"};

// Framework op types by kind. TensorFlow 1.x names (as in the GO and HDP papers' graphs)
// and ONNX names. Anything not listed is kOther.
const std::unordered_map<std::string_view, OpKind>& op_type_table() {
  static const std::unordered_map<std::string_view, OpKind> table = [] {
    std::unordered_map<std::string_view, OpKind> t;
    auto add = [&t](OpKind kind, std::initializer_list<std::string_view> names) {
      for (auto name : names) t.emplace(name, kind);
    };
    add(OpKind::kInput, {"Placeholder", "Const", "Constant", "IteratorGetNext", "Input",
                         "RandomUniform", "RandomStandardNormal", "Fill", "ZerosLike", "OnesLike",
                         "ConstantOfShape", "Shape", "Range"});
    add(OpKind::kVariable,
        {"VariableV2", "Variable", "VarHandleOp", "ReadVariableOp", "Initializer"});
    add(OpKind::kMatMul, {"MatMul", "BatchMatMul", "BatchMatMulV2", "Gemm", "Einsum",
                          "MatMulInteger", "QLinearMatMul"});
    add(OpKind::kConv,
        {"Conv2D", "Conv2DBackpropInput", "Conv2DBackpropFilter", "DepthwiseConv2dNative",
         "DepthwiseConv2dNativeBackpropInput", "DepthwiseConv2dNativeBackpropFilter", "Conv",
         "ConvTranspose", "Conv1D", "Conv3D", "Conv3DBackpropInputV2", "Conv3DBackpropFilterV2",
         "QLinearConv", "ConvInteger"});
    add(OpKind::kPool, {"MaxPool", "AvgPool", "MaxPoolGrad", "AvgPoolGrad", "AveragePool",
                        "GlobalAveragePool", "GlobalMaxPool", "LpPool", "MaxPoolV2"});
    add(OpKind::kElementwise, {"Add",        "AddV2",        "AddN",        "Sub",
                               "Mul",        "Div",          "RealDiv",     "Neg",
                               "Abs",        "Exp",          "Log",         "Sqrt",
                               "Rsqrt",      "Square",       "Pow",         "Maximum",
                               "Minimum",    "Max",          "Min",         "Relu",
                               "Relu6",      "Elu",          "Selu",        "LeakyRelu",
                               "Sigmoid",    "Tanh",         "Softplus",    "Softsign",
                               "Gelu",       "Erf",          "BiasAdd",     "ReluGrad",
                               "Relu6Grad",  "EluGrad",      "SigmoidGrad", "TanhGrad",
                               "RsqrtGrad",  "SqrtGrad",     "Cast",        "Floor",
                               "Ceil",       "Round",        "Sign",        "Reciprocal",
                               "Equal",      "NotEqual",     "Less",        "Greater",
                               "LessEqual",  "GreaterEqual", "Select",      "Where",
                               "LogicalAnd", "LogicalOr",    "LogicalNot",  "And",
                               "Or",         "Not",          "Clip",        "ClipByValue",
                               "Dropout",    "PRelu",        "HardSigmoid", "HardSwish",
                               "Mish",       "Sin",          "Cos",         "SquaredDifference",
                               "Mod",        "FloorDiv",     "FloorMod",    "BroadcastTo",
                               "Expand",     "Identity_n",   "DropoutGrad", "GeluGrad"});
    add(OpKind::kReduction, {"Sum",
                             "Mean",
                             "Prod",
                             "ArgMax",
                             "ArgMin",
                             "BiasAddGrad",
                             "ReduceSum",
                             "ReduceMean",
                             "ReduceMax",
                             "ReduceMin",
                             "ReduceProd",
                             "ReduceL2",
                             "ReduceL1",
                             "ReduceSumSquare",
                             "ReduceLogSumExp",
                             "L2Loss",
                             "All",
                             "Any",
                             "TopK",
                             "TopKV2",
                             "CumSum"});
    add(OpKind::kNormalization,
        {"FusedBatchNorm", "FusedBatchNormV2", "FusedBatchNormV3", "FusedBatchNormGrad",
         "FusedBatchNormGradV2", "FusedBatchNormGradV3", "BatchNormalization", "LayerNormalization",
         "LayerNorm", "LayerNormGrad", "InstanceNormalization", "GroupNormalization", "LRN",
         "LRNGrad", "L2Normalize"});
    add(OpKind::kSoftmax, {"Softmax", "LogSoftmax", "SoftmaxCrossEntropyWithLogits",
                           "SparseSoftmaxCrossEntropyWithLogits", "SoftmaxGrad",
                           "SoftmaxCrossEntropyLoss", "NegativeLogLikelihoodLoss"});
    add(OpKind::kEmbedding,
        {"Gather", "GatherV2", "ResourceGather", "GatherNd", "GatherElements", "UnsortedSegmentSum",
         "ScatterAdd", "ScatterND", "ScatterElements", "EmbeddingLookup", "SparseGather"});
    add(OpKind::kDataMovement, {"Concat",
                                "ConcatV2",
                                "Split",
                                "SplitV",
                                "Slice",
                                "StridedSlice",
                                "StridedSliceGrad",
                                "Transpose",
                                "Pad",
                                "PadV2",
                                "MirrorPad",
                                "Tile",
                                "Pack",
                                "Unpack",
                                "Stack",
                                "Unstack",
                                "Reverse",
                                "ReverseV2",
                                "OneHot",
                                "Resize",
                                "ResizeBilinear",
                                "ResizeNearestNeighbor",
                                "Upsample",
                                "DepthToSpace",
                                "SpaceToDepth",
                                "Send",
                                "Recv",
                                "_Send",
                                "_Recv",
                                "Copy",
                                "DynamicStitch"});
    add(OpKind::kReshape, {"Reshape", "Identity", "Squeeze", "Unsqueeze", "ExpandDims", "Flatten",
                           "StopGradient", "Snapshot", "IdentityN", "PreventGradient"});
    add(OpKind::kRecurrent,
        {"LSTM", "GRU", "RNN", "BlockLSTM", "CudnnRNN", "CudnnRNNV3", "LSTMBlockCell"});
    add(OpKind::kUpdate,
        {"ApplyAdam", "ApplyGradientDescent", "ApplyMomentum", "ApplyRMSProp", "ApplyAdagrad",
         "ResourceApplyAdam", "ResourceApplyGradientDescent", "ResourceApplyMomentum", "AssignSub",
         "AssignAdd", "Assign", "AssignVariableOp"});
    add(OpKind::kControl, {"NoOp", "Assert", "ControlTrigger", "Merge", "Switch", "Enter", "Exit",
                           "NextIteration", "LoopCond"});
    return t;
  }();
  return table;
}

template <std::size_t N>
std::vector<std::string> names_of(const std::array<std::string_view, N>& names) {
  return {names.begin(), names.end()};
}

template <std::size_t N>
std::optional<std::size_t> index_of(const std::array<std::string_view, N>& names,
                                    std::string_view name) {
  for (std::size_t i = 0; i < N; ++i) {
    if (names[i] == name) return i;
  }
  return std::nullopt;
}

}  // namespace

std::string_view to_string(OpKind kind) { return kKindNames[static_cast<std::size_t>(kind)]; }

std::optional<OpKind> op_kind_from_string(std::string_view name) {
  if (auto i = index_of(kKindNames, name)) return static_cast<OpKind>(*i);
  return std::nullopt;
}

std::vector<std::string> op_kind_names() { return names_of(kKindNames); }

OpKind classify_op_type(std::string_view op_type) {
  const auto& table = op_type_table();
  auto it = table.find(op_type);
  return it == table.end() ? OpKind::kOther : it->second;
}

std::string_view to_string(DType dtype) { return kDTypeNames[static_cast<std::size_t>(dtype)]; }

std::optional<DType> dtype_from_string(std::string_view name) {
  if (auto i = index_of(kDTypeNames, name)) return static_cast<DType>(*i);
  return std::nullopt;
}

std::vector<std::string> dtype_names() { return names_of(kDTypeNames); }

int dtype_size_bytes(DType dtype) { return kDTypeSizes[static_cast<std::size_t>(dtype)]; }

std::string_view to_string(Phase phase) { return kPhaseNames[static_cast<std::size_t>(phase)]; }

std::optional<Phase> phase_from_string(std::string_view name) {
  if (auto i = index_of(kPhaseNames, name)) return static_cast<Phase>(*i);
  return std::nullopt;
}

std::vector<std::string> phase_names() { return names_of(kPhaseNames); }

}  // namespace gopt::core
