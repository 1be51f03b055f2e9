// TrainingGraphBuilder: FLOPs and bytes of single ops by hand, node and edge counts of small
// training graphs by hand, and the structure of the derived backward pass.
#include "datasets/training_graph_builder.h"

#include <gtest/gtest.h>

#include "tests/datasets/graph_checks.h"

namespace gopt::datasets {
namespace {

using testing::check_training_graph;

using core::DType;
using core::Phase;

core::NodeAttrs by_name(const core::Graph& g, const std::string& name) {
  auto id = g.find(name);
  EXPECT_TRUE(id.has_value()) << name;
  return g.node(*id);
}

// x [4,3] -> MatMul(w [3,2]) -> sparse softmax cross-entropy -> mean.
core::Graph tiny_mlp(Optimizer optimizer = Optimizer::kAdam) {
  TrainingGraphBuilder b("tiny", "mlp", optimizer);
  Tensor x = b.input("x", {4, 3});
  Tensor w = b.variable("w", {3, 2});
  Tensor logits = b.matmul(x, w);
  Tensor labels = b.input("labels", {4}, DType::kInt32);
  return std::move(b).finish(b.mean(b.sparse_softmax_cross_entropy(logits, labels)));
}

TEST(TrainingGraphBuilderTest, TinyMlpCountsByHand) {
  core::Graph g = tiny_mlp();
  // Forward 7: x, w, w/read, MatMul, labels, SparseSoftmaxCrossEntropyWithLogits, Mean.
  // Backward 6: Fill; Mean grad Tile + RealDiv; xent grad ExpandDims + Mul; MatMul grad
  // for w only (x needs none). Update 2: w/ApplyAdam, train_op.
  EXPECT_EQ(g.num_nodes(), 15);
  // w->read, x->MatMul, read->MatMul, MatMul->xent, labels->xent, xent->Mean, Mean->Fill,
  // Fill->Tile, Tile->RealDiv, RealDiv->ExpandDims, ExpandDims->Mul, xent:1->Mul,
  // x->MatMul grad, Mul->MatMul grad, w->ApplyAdam, grad->ApplyAdam, ApplyAdam->train_op.
  EXPECT_EQ(g.num_edges(), 17);
  EXPECT_EQ(check_training_graph(g), "");
  const auto& grad = by_name(g, "gradients/MatMul_grad/MatMul");
  EXPECT_EQ(grad.phase, Phase::kBackward);
  EXPECT_EQ(grad.output_shapes.front(), (core::Shape{3, 2}));
  EXPECT_DOUBLE_EQ(grad.flops, 2.0 * 4 * 3 * 2);
  EXPECT_EQ(g.attrs().at("num_parameters"), "6");
}

TEST(TrainingGraphBuilderTest, MatMulFlopsAndBytesByHand) {
  core::Graph g = tiny_mlp();
  const auto& mm = by_name(g, "MatMul");
  EXPECT_DOUBLE_EQ(mm.flops, 2.0 * 4 * 3 * 2);    // one multiply-add per (m, k, n)
  EXPECT_EQ(mm.bytes_read, (4 * 3 + 3 * 2) * 4);  // x and w, float32
  EXPECT_EQ(mm.output_bytes, 4 * 2 * 4);
  EXPECT_EQ(mm.bytes_written, 4 * 2 * 4);
  EXPECT_EQ(mm.phase, Phase::kForward);
}

TEST(TrainingGraphBuilderTest, VariableUpdateAndOptimizerSlots) {
  core::Graph adam = tiny_mlp(Optimizer::kAdam);
  const auto& var = by_name(adam, "w");
  EXPECT_EQ(var.param_bytes, 3 * 2 * 4);
  EXPECT_EQ(var.colocation_group, "w");
  const auto& up = by_name(adam, "w/ApplyAdam");
  EXPECT_EQ(up.phase, Phase::kUpdate);
  EXPECT_EQ(up.colocation_group, "w");
  EXPECT_EQ(up.param_bytes, 2 * 24);  // m and v slots
  EXPECT_EQ(up.bytes_read, 4 * 24);   // variable, m, v, gradient
  EXPECT_EQ(up.bytes_written, 3 * 24);
  EXPECT_EQ(by_name(adam, "w/read").colocation_group, "w");

  core::Graph sgd = tiny_mlp(Optimizer::kGradientDescent);
  const auto& sgd_up = by_name(sgd, "w/ApplyGradientDescent");
  EXPECT_EQ(sgd_up.param_bytes, 0);
  EXPECT_EQ(sgd_up.bytes_read, 2 * 24);
  EXPECT_EQ(sgd.attrs().at("optimizer"), "sgd");
}

TEST(TrainingGraphBuilderTest, ConvAndPoolShapesAndFlopsByHand) {
  TrainingGraphBuilder b("conv", "cnn");
  Tensor x = b.input("x", {2, 8, 8, 3});
  Tensor w = b.variable("w", {3, 3, 3, 4});
  Tensor same = b.conv2d(x, w, 1, 1, true);
  EXPECT_EQ(same.shape, (core::Shape{2, 8, 8, 4}));
  Tensor strided = b.conv2d(x, w, 2, 2, true);
  EXPECT_EQ(strided.shape, (core::Shape{2, 4, 4, 4}));
  Tensor valid = b.conv2d(x, w, 1, 1, false);
  EXPECT_EQ(valid.shape, (core::Shape{2, 6, 6, 4}));
  Tensor pooled = b.max_pool(same, 3, 2, false);
  EXPECT_EQ(pooled.shape, (core::Shape{2, 3, 3, 4}));
  Tensor dilated = b.conv2d(x, w, 1, 1, false, 2);  // effective 5x5 window
  EXPECT_EQ(dilated.shape, (core::Shape{2, 4, 4, 4}));
  Tensor labels = b.input("labels", {2}, DType::kInt32);
  Tensor logits = b.reshape(b.avg_pool(pooled, 3, 1, false), {2, 4});
  core::Graph g = std::move(b).finish(b.mean(b.sparse_softmax_cross_entropy(logits, labels)));
  // 2 * out elements * kh * kw * c_in.
  EXPECT_DOUBLE_EQ(by_name(g, "Conv2D").flops, 2.0 * (2 * 8 * 8 * 4) * (3 * 3 * 3));
  EXPECT_DOUBLE_EQ(by_name(g, "Conv2D_1").flops, 2.0 * (2 * 4 * 4 * 4) * (3 * 3 * 3));
  EXPECT_DOUBLE_EQ(by_name(g, "MaxPool").flops, (2 * 3 * 3 * 4) * 9.0);
  // The input needs no gradient: only the filter gradient of the used convolution.
  EXPECT_TRUE(g.find("gradients/Conv2D_grad/Conv2DBackpropFilter").has_value());
  EXPECT_FALSE(g.find("gradients/Conv2D_grad/Conv2DBackpropInput").has_value());
  // Unused convolutions (strided, dilated) get no gradient ops.
  EXPECT_FALSE(g.find("gradients/Conv2D_1_grad/Conv2DBackpropFilter").has_value());
  EXPECT_EQ(by_name(g, "gradients/Conv2D_grad/Conv2DBackpropFilter").flops,
            by_name(g, "Conv2D").flops);
  EXPECT_EQ(check_training_graph(g), "");
}

TEST(TrainingGraphBuilderTest, SharedWeightsAccumulateWithAddN) {
  // One weight used at three time steps: its gradient is an AddN of three MatMul grads.
  TrainingGraphBuilder b("rnn", "rnn");
  Tensor w = b.variable("w", {5, 5});
  Tensor h = b.input("x", {2, 5});
  for (int t = 0; t < 3; ++t) {
    b.set_scope("t_" + std::to_string(t), t);
    h = b.tanh(b.matmul(h, w));
  }
  b.set_scope("", -1);
  Tensor labels = b.input("labels", {2}, DType::kInt32);
  core::Graph g = std::move(b).finish(b.mean(b.sparse_softmax_cross_entropy(h, labels)));
  const auto& addn = by_name(g, "gradients/w_grad/AddN");
  EXPECT_EQ(addn.op_type, "AddN");
  EXPECT_EQ(
      boost::in_degree(static_cast<std::size_t>(*g.find("gradients/w_grad/AddN")), g.boost_graph()),
      3u);
  EXPECT_EQ(by_name(g, "gradients/t_1/MatMul_grad/MatMul").layer, 1);
  EXPECT_EQ(by_name(g, "gradients/t_2/Tanh_grad/TanhGrad").op_type, "TanhGrad");
  EXPECT_EQ(check_training_graph(g), "");
}

TEST(TrainingGraphBuilderTest, BinaryGradientsFollowTensorFlow) {
  // TF 1.x _MulGrad: per input Mul, Sum, Reshape.
  TrainingGraphBuilder b("mul", "test");
  Tensor a = b.variable("a", {2, 3});
  Tensor c = b.variable("c", {3});
  Tensor y = b.mul(a, c);  // c broadcast over rows
  Tensor labels = b.input("labels", {2}, DType::kInt32);
  core::Graph g = std::move(b).finish(b.mean(b.sparse_softmax_cross_entropy(y, labels)));
  EXPECT_EQ(by_name(g, "gradients/Mul_grad/Sum_1").output_shapes.front(), (core::Shape{3}));
  EXPECT_EQ(by_name(g, "gradients/Mul_grad/Reshape").output_shapes.front(), (core::Shape{2, 3}));
  EXPECT_EQ(check_training_graph(g), "");
}

}  // namespace
}  // namespace gopt::datasets
