// ONNX import of models exported at test time by PyTorch's default exporter
// (tests/datasets/export_torch_models.py, Debian's python3-torch and python3-torchvision):
// Transformer encoder and decoder, multi-head attention, GRU, LSTM, a small Vision
// Transformer, ResNet-18 and MobileNetV2, all with a dynamic batch and without their weight files.
// Their Reshape, Slice and Expand arguments come from Shape -> Gather -> Concat chains that the
// importer folds; the figures below are computed by hand from the model sizes. Each test is skipped
// with a message when torch, torchvision or onnx is missing.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "core/graph.h"
#include "datasets/onnx_importer.h"
#include "tests/datasets/graph_checks.h"
#include "tests/support/files.h"
#include "tests/support/run_command.h"

namespace gopt::datasets {
namespace {

// Sizes of tests/datasets/export_torch_models.py (D_MODEL, HEADS, ...).
constexpr double kModel = 64;    // E, d_model
constexpr double kHeads = 4;     // H
constexpr double kFfn = 128;     // F, dim_feedforward
constexpr double kSrcLen = 10;   // S, encoder / key length
constexpr double kTgtLen = 6;    // T, decoder / query length
constexpr double kRnnIn = 32;    // I
constexpr double kHidden = 48;   // hidden units per direction
constexpr double kSteps = 20;    // time steps
constexpr double kPatches = 16;  // ViT: (32 / 8)^2 patches of 8 x 8 pixels
constexpr double kClasses = 10;  // ViT classes
// The batch given to the importer; the models were traced with batch 2, so shapes that
// are right here came through the folded Shape chains.
constexpr std::int64_t kBatch = 3;
constexpr double kB = kBatch;

struct Exported {
  std::string path;  ///< the .onnx file
  std::string skip;  ///< why the test is skipped (torch missing), else empty
  std::string error;
};

Exported export_torch_model(const std::string& model) {
  const std::string python = "/usr/bin/python3";  // Debian's interpreter, with python3-torch
  std::string dir = gopt::testing::make_temp_dir("gopt_torch_" + model);
  auto run = gopt::testing::run_command(python + " " + GOPT_SOURCE_DIR +
                                        "/tests/datasets/export_torch_models.py " + dir +
                                        " --models " + model);
  Exported e;
  if (run.exit_code == 3 || run.exit_code == 127) {
    e.skip = "python3-torch, python3-torchvision or python3-onnx is not installed for " + python +
             " (scripts/setup.sh installs them): " + run.err;
  } else if (run.exit_code != 0) {
    e.error = "export_torch_models.py " + model + " failed: " + run.err;
  }
  e.path = dir + "/" + model + ".onnx";
  return e;
}

#define GOPT_IMPORT_TORCH_MODEL(result, model)                             \
  Exported exported_##result = export_torch_model(model);                  \
  if (!exported_##result.skip.empty()) {                                   \
    GTEST_SKIP() << exported_##result.skip;                                \
  }                                                                        \
  ASSERT_TRUE(exported_##result.error.empty()) << exported_##result.error; \
  OnnxImportResult result =                                                \
      import_onnx(exported_##result.path, OnnxImportOptions().with_batch(kBatch))

int count_ops(const core::Graph& g, const std::string& op_type) {
  int n = 0;
  for (core::NodeId v = 0; v < g.num_nodes(); ++v) n += g.node(v).op_type == op_type ? 1 : 0;
  return n;
}

double flops_of(const core::Graph& g, const std::vector<std::string>& op_types) {
  double f = 0;
  for (core::NodeId v = 0; v < g.num_nodes(); ++v) {
    for (const auto& t : op_types) f += g.node(v).op_type == t ? g.node(v).flops : 0;
  }
  return f;
}

double total_flops(const core::Graph& g) {
  double f = 0;
  for (core::NodeId v = 0; v < g.num_nodes(); ++v) f += g.node(v).flops;
  return f;
}

// The first output shapes of every op of a type, in graph order.
std::vector<core::Shape> shapes_of(const core::Graph& g, const std::string& op_type) {
  std::vector<core::Shape> s;
  for (core::NodeId v = 0; v < g.num_nodes(); ++v) {
    if (g.node(v).op_type == op_type) s.push_back(g.node(v).output_shapes.front());
  }
  return s;
}

// FLOPs of a multi-head self-attention block over n tokens (a multiply-add is 2 FLOPs):
// the packed QKV projection 2nE*3E, scores QK^T and the weighted sum of V 2*B*H*n*n*(E/H)
// each, and the output projection 2nE*E plus its bias nE (a Gemm with C).
double self_attention_flops(double tokens_per_sequence) {
  double n = kB * tokens_per_sequence;
  return 2 * n * kModel * 3 * kModel + 2 * (2 * n * tokens_per_sequence * kModel) +
         2 * n * kModel * kModel + n * kModel;
}

// Cross-attention of t queries over s keys: Q projection 2tE*E, K and V projections
// 2sE*E each, scores and weighted sum 2*B*t*s*E each, output projection 2tE*E + tE.
double cross_attention_flops(double t, double s) {
  return 2 * kB * t * kModel * kModel + 2 * (2 * kB * s * kModel * kModel) +
         2 * (2 * kB * t * s * kModel) + 2 * kB * t * kModel * kModel + kB * t * kModel;
}

// Feed-forward block: two matrix products 2nEF each (their biases are separate Adds).
double ffn_flops(double tokens_per_sequence) {
  return 2 * (2 * kB * tokens_per_sequence * kModel * kFfn);
}

TEST(OnnxTorchModelsTest, TransformerEncoderTwoLayers) {
  GOPT_IMPORT_TORCH_MODEL(r, "transformer_encoder");
  const auto& g = r.graph;
  // Per layer: QKV projection, QK^T, AV, two FFN MatMuls; the output projection a Gemm.
  EXPECT_EQ(count_ops(g, "MatMul"), 2 * 5);
  EXPECT_EQ(count_ops(g, "Gemm"), 2 * 1);
  EXPECT_EQ(count_ops(g, "Softmax"), 2);
  EXPECT_EQ(count_ops(g, "Slice"), 2 * 3);  // Q, K, V out of the packed projection
  EXPECT_DOUBLE_EQ(flops_of(g, {"MatMul", "Gemm"}),
                   2 * (self_attention_flops(kSrcLen) + ffn_flops(kSrcLen)));
  // Attention scores per (batch x head): [B*H, S, S], the batch from --batch.
  for (const auto& s : shapes_of(g, "Softmax")) {
    EXPECT_EQ(s, (core::Shape{kBatch * 4, 10, 10}));
  }
  for (const auto& s : shapes_of(g, "Slice")) EXPECT_EQ(s, (core::Shape{10, kBatch, 64}));
  // The rest (LayerNorm arithmetic, biases, softmax, ReLU) is a few percent.
  double matrix = flops_of(g, {"MatMul", "Gemm"});
  EXPECT_GT(total_flops(g), matrix);
  EXPECT_LT(total_flops(g), 1.1 * matrix);
  EXPECT_EQ(
      g.attrs().at("num_parameters"),
      std::to_string(2 * (3 * 64 * 64 + 3 * 64 + 64 * 64 + 64 + 2 * 64 * 128 + 128 + 64 + 4 * 64)));
  auto t = import_onnx(exported_r.path, OnnxImportOptions().with_batch(kBatch).with_training(true));
  EXPECT_EQ(testing::check_training_graph(t.graph), "");
}

TEST(OnnxTorchModelsTest, TransformerDecoderLayerWithCausalMask) {
  GOPT_IMPORT_TORCH_MODEL(r, "transformer_decoder");
  const auto& g = r.graph;
  // Self-attention: QKV projection, QK^T, AV and the output projection (a Gemm);
  // cross-attention: Q and packed KV projections, QK^T, AV, output projection; FFN: 2.
  EXPECT_EQ(count_ops(g, "MatMul") + count_ops(g, "Gemm"), 4 + 5 + 2);
  EXPECT_EQ(count_ops(g, "Softmax"), 2);
  // The cross-attention projections: KV packed as one 2E-wide product.
  double cross = cross_attention_flops(kTgtLen, kSrcLen);
  EXPECT_DOUBLE_EQ(flops_of(g, {"MatMul", "Gemm"}),
                   self_attention_flops(kTgtLen) + cross + ffn_flops(kTgtLen));
  auto softmax = shapes_of(g, "Softmax");
  ASSERT_EQ(softmax.size(), 2u);
  EXPECT_EQ(softmax[0], (core::Shape{kBatch * 4, 6, 6}));   // self-attention, masked
  EXPECT_EQ(softmax[1], (core::Shape{kBatch * 4, 6, 10}));  // over the memory
}

TEST(OnnxTorchModelsTest, MultiheadAttentionCrossAttention) {
  GOPT_IMPORT_TORCH_MODEL(r, "multihead_attention");
  const auto& g = r.graph;
  EXPECT_EQ(count_ops(g, "MatMul"), 5);  // Q, K, V projections, QK^T, AV
  EXPECT_EQ(count_ops(g, "Gemm"), 1);    // output projection
  EXPECT_DOUBLE_EQ(flops_of(g, {"MatMul", "Gemm"}), cross_attention_flops(kTgtLen, kSrcLen));
  EXPECT_DOUBLE_EQ(flops_of(g, {"Softmax"}), 5 * kB * kHeads * kTgtLen * kSrcLen);
  // The averaged attention weights: [B, H, T, S] summed over the heads.
  EXPECT_EQ(shapes_of(g, "ReduceSum"), (std::vector<core::Shape>{{kBatch, 6, 10}}));
}

// ONNX GRU/LSTM FLOPs (docs/onnx-import.md): 2 x steps x batch x (elements of W + R) for
// the input and recurrent products, plus 10 per gate unit per step and batch element.
double rnn_flops(double directions, double gates, double input) {
  double w = directions * gates * kHidden * input;
  double r = directions * gates * kHidden * kHidden;
  return 2 * kSteps * kB * (w + r) + 10 * kSteps * kB * directions * gates * kHidden;
}

TEST(OnnxTorchModelsTest, GruTwoLayers) {
  GOPT_IMPORT_TORCH_MODEL(r, "gru");
  const auto& g = r.graph;
  EXPECT_EQ(count_ops(g, "GRU"), 2);
  EXPECT_DOUBLE_EQ(flops_of(g, {"GRU"}), rnn_flops(1, 3, kRnnIn) + rnn_flops(1, 3, kHidden));
  // The initial state is ConstantOfShape([layers, batch, hidden]) of a folded Shape chain.
  EXPECT_EQ(shapes_of(g, "ConstantOfShape"), (std::vector<core::Shape>{{2, kBatch, 48}}));
  for (const auto& s : shapes_of(g, "GRU")) EXPECT_EQ(s, (core::Shape{20, 1, kBatch, 48}));
}

TEST(OnnxTorchModelsTest, BidirectionalLstm) {
  GOPT_IMPORT_TORCH_MODEL(r, "lstm");
  const auto& g = r.graph;
  EXPECT_EQ(count_ops(g, "LSTM"), 1);
  EXPECT_DOUBLE_EQ(flops_of(g, {"LSTM"}), rnn_flops(2, 4, kRnnIn));
  EXPECT_EQ(shapes_of(g, "LSTM"), (std::vector<core::Shape>{{20, 2, kBatch, 48}}));
  // Both directions concatenated: [steps, batch, 2 x hidden] before the last Transpose.
  EXPECT_EQ(shapes_of(g, "Reshape"), (std::vector<core::Shape>{{20, kBatch, 96}}));
}

TEST(OnnxTorchModelsTest, TorchvisionVisionTransformer) {
  GOPT_IMPORT_TORCH_MODEL(r, "vit");
  const auto& g = r.graph;
  // The class token expanded to the batch (Expand of a folded Concat of Shape values) and
  // prepended to the patches: S = 16 + 1 tokens.
  EXPECT_EQ(shapes_of(g, "Expand"), (std::vector<core::Shape>{{kBatch, 1, 64}}));
  double tokens = kPatches + 1;
  // Patch embedding: an 8 x 8 stride-8 convolution 3 -> E with bias, per patch.
  double patches = (2 * 3 * 8 * 8 + 1) * kModel * kPatches * kB;
  double head = 2 * kB * kModel * kClasses + kB * kClasses;  // classifier Gemm with bias
  EXPECT_DOUBLE_EQ(flops_of(g, {"Conv", "MatMul", "Gemm"}),
                   patches + 2 * (self_attention_flops(tokens) + ffn_flops(tokens)) + head);
  for (const auto& s : shapes_of(g, "Softmax")) {
    EXPECT_EQ(s, (core::Shape{kBatch * 4, 17, 17}));
  }
}

// ResNet-18 (BatchNorm folded into the convolutions by the exporter, so each has a bias):
// a k x k convolution producing c_out x hw x hw costs (2 c_in k^2 + 1) c_out hw^2 FLOPs.
double resnet18_conv_and_fc_flops() {
  auto conv = [](double cin, double cout, double k, double hw) {
    return (2 * cin * k * k + 1) * cout * hw * hw;
  };
  double f = conv(3, 64, 7, 112);
  f += 4 * conv(64, 64, 3, 56);  // stage 1: two blocks of two 3x3 convolutions
  double cin = 64;
  double hw = 56;
  for (double c : {128.0, 256.0, 512.0}) {  // stages 2-4: stride 2 and a 1x1 shortcut
    hw /= 2;
    f += conv(cin, c, 3, hw) + 3 * conv(c, c, 3, hw) + conv(cin, c, 1, hw);
    cin = c;
  }
  return kB * (f + 2 * 512 * 1000 + 1000);  // + the classifier Gemm with its bias
}

TEST(OnnxTorchModelsTest, TorchvisionResNet18) {
  GOPT_IMPORT_TORCH_MODEL(r, "resnet18");
  const auto& g = r.graph;
  EXPECT_EQ(count_ops(g, "Conv"), 1 + 16 + 3);  // stem, 8 blocks x 2, 3 shortcuts
  EXPECT_EQ(count_ops(g, "Gemm"), 1);
  EXPECT_EQ(count_ops(g, "Add"), 8);
  EXPECT_DOUBLE_EQ(flops_of(g, {"Conv", "Gemm"}), resnet18_conv_and_fc_flops());
  // torchvision's published 1.81 G multiply-adds per image.
  EXPECT_NEAR(total_flops(g) / kB, 2 * 1.81e9, 0.02 * 2 * 1.81e9);
  // torchvision's 11,689,512 less one per BatchNorm channel (64 + 256 + 640 + 1280 + 2560):
  // the exporter folds each BatchNorm's scale and shift into its convolution's bias.
  EXPECT_EQ(g.attrs().at("num_parameters"), std::to_string(11689512 - 4800));
}

TEST(OnnxTorchModelsTest, TorchvisionMobileNetV2) {
  GOPT_IMPORT_TORCH_MODEL(r, "mobilenet_v2");
  const auto& g = r.graph;
  // Stem, 17 inverted residual blocks (the first without expansion: 2 convolutions, the
  // other 16: 3), and the final 1x1 convolution.
  EXPECT_EQ(count_ops(g, "Conv"), 1 + 2 + 16 * 3 + 1);
  EXPECT_EQ(count_ops(g, "Gemm"), 1);
  EXPECT_EQ(count_ops(g, "Add"), 10);  // residual connections (stride 1, same width)
  // torchvision's published 0.30 G multiply-adds per image.
  EXPECT_NEAR(total_flops(g) / kB, 2 * 0.30e9, 0.05 * 2 * 0.30e9);
  // torchvision's 3,504,872 less one per BatchNorm channel (17,056: stem 32, the blocks'
  // expansion, depthwise and projection widths, the final 1280), folded into the biases.
  EXPECT_EQ(g.attrs().at("num_parameters"), std::to_string(3504872 - 17056));
}

}  // namespace
}  // namespace gopt::datasets
