// Inception-v3 and AmoebaNet-A: multi-branch convolutional cells. Every convolution is
// Conv2D + FusedBatchNorm (+ Relu), as TF-slim builds them; ops carry the cell (layer) and
// the branch within the cell.
#include <array>
#include <string>
#include <vector>

#include "datasets/workloads.h"

namespace gopt::datasets {
namespace {

std::int64_t channels(const Tensor& x) { return x.shape.back(); }

// Scope helper: remembers the block prefix, layer and branch so that ops are named
// <block>/Branch_<b>/<conv name>/Conv2D.
class Cell {
 public:
  Cell(TrainingGraphBuilder& b, std::string prefix, std::int32_t layer)
      : b_(b), prefix_(std::move(prefix)), layer_(layer) {}

  void branch(std::int32_t branch) { branch_ = branch; }

  /// slim.conv2d with batch norm (scale=False) and ReLU.
  Tensor conv(const Tensor& x, const std::string& name, std::int64_t kh, std::int64_t kw,
              std::int64_t filters, int stride = 1, bool same = true, bool relu = true) {
    scope(name);
    Tensor w = b_.variable("weights", {kh, kw, channels(x), filters});
    Tensor beta = b_.variable("BatchNorm/beta", {filters});
    Tensor gamma = b_.constant("BatchNorm/gamma", {filters});
    Tensor y = b_.batch_norm(b_.conv2d(x, w, stride, stride, same), gamma, beta);
    return relu ? b_.relu(y) : y;
  }

  /// Depthwise-separable convolution (depthwise KxK then pointwise 1x1) with batch norm.
  Tensor separable(const Tensor& x, const std::string& name, std::int64_t k, std::int64_t filters,
                   int stride) {
    scope(name);
    Tensor dw = b_.variable("depthwise_weights", {k, k, channels(x), 1});
    Tensor pw = b_.variable("pointwise_weights", {1, 1, channels(x), filters});
    Tensor beta = b_.variable("BatchNorm/beta", {filters});
    Tensor gamma = b_.constant("BatchNorm/gamma", {filters});
    Tensor y = b_.conv2d(b_.depthwise_conv2d(b_.relu(x), dw, stride, true), pw, 1, 1, true);
    return b_.batch_norm(y, gamma, beta);
  }

  Tensor max_pool(const Tensor& x, const std::string& name, int k, int stride, bool same) {
    scope(name);
    return b_.max_pool(x, k, stride, same);
  }
  Tensor avg_pool(const Tensor& x, const std::string& name, int k, int stride, bool same) {
    scope(name);
    return b_.avg_pool(x, k, stride, same);
  }
  Tensor concat(const std::vector<Tensor>& xs, const std::string& name = "concat") {
    branch_ = -1;
    scope(name);
    return b_.concat(xs, 3);
  }
  Tensor add(const Tensor& a, const Tensor& c, const std::string& name) {
    scope(name);
    return b_.add(a, c);
  }
  Tensor relu(const Tensor& x, const std::string& name) {
    scope(name);
    return b_.relu(x);
  }

 private:
  void scope(const std::string& name) {
    std::string s = prefix_;
    if (branch_ >= 0) s += "/Branch_" + std::to_string(branch_);
    b_.set_scope(s + "/" + name, layer_, branch_);
  }

  TrainingGraphBuilder& b_;
  std::string prefix_;
  std::int32_t layer_;
  std::int32_t branch_ = -1;
};

Tensor classifier(TrainingGraphBuilder& b, const std::string& prefix, Tensor x,
                  std::int64_t classes, std::int64_t batch) {
  b.set_scope(prefix + "/Logits", -1);
  x = b.avg_pool(x, static_cast<int>(x.shape[1]), 1, false);  // global average pool
  x = b.reshape(b.dropout(x), {batch, channels(x)});
  Tensor w = b.variable("weights", {channels(x), classes});
  Tensor bias = b.variable("biases", {classes});
  Tensor logits = b.bias_add(b.matmul(x, w), bias);
  Tensor labels = b.input("labels", {batch}, core::DType::kInt32);
  b.set_scope("loss", -1);
  return b.mean(b.sparse_softmax_cross_entropy(logits, labels));
}

// --- Inception-v3 ---------------------------------------------------------------------------

// Mixed_5b/c/d: 1x1 | 1x1-5x5 | 1x1-3x3-3x3 | avgpool-1x1.
Tensor inception_a(Cell c, const Tensor& x, std::int64_t pool_filters) {
  c.branch(0);
  Tensor b0 = c.conv(x, "Conv2d_0a_1x1", 1, 1, 64);
  c.branch(1);
  Tensor b1 = c.conv(c.conv(x, "Conv2d_0a_1x1", 1, 1, 48), "Conv2d_0b_5x5", 5, 5, 64);
  c.branch(2);
  Tensor b2 = c.conv(x, "Conv2d_0a_1x1", 1, 1, 64);
  b2 = c.conv(c.conv(b2, "Conv2d_0b_3x3", 3, 3, 96), "Conv2d_0c_3x3", 3, 3, 96);
  c.branch(3);
  Tensor b3 =
      c.conv(c.avg_pool(x, "AvgPool_0a_3x3", 3, 1, true), "Conv2d_0b_1x1", 1, 1, pool_filters);
  return c.concat({b0, b1, b2, b3});
}

// Mixed_6b..e: 1x1 | 1x1-1x7-7x1 | 1x1-7x1-1x7-7x1-1x7 | avgpool-1x1 (n = 128/160/192).
Tensor inception_c(Cell c, const Tensor& x, std::int64_t n) {
  c.branch(0);
  Tensor b0 = c.conv(x, "Conv2d_0a_1x1", 1, 1, 192);
  c.branch(1);
  Tensor b1 = c.conv(x, "Conv2d_0a_1x1", 1, 1, n);
  b1 = c.conv(c.conv(b1, "Conv2d_0b_1x7", 1, 7, n), "Conv2d_0c_7x1", 7, 1, 192);
  c.branch(2);
  Tensor b2 = c.conv(x, "Conv2d_0a_1x1", 1, 1, n);
  b2 = c.conv(c.conv(b2, "Conv2d_0b_7x1", 7, 1, n), "Conv2d_0c_1x7", 1, 7, n);
  b2 = c.conv(c.conv(b2, "Conv2d_0d_7x1", 7, 1, n), "Conv2d_0e_1x7", 1, 7, 192);
  c.branch(3);
  Tensor b3 = c.conv(c.avg_pool(x, "AvgPool_0a_3x3", 3, 1, true), "Conv2d_0b_1x1", 1, 1, 192);
  return c.concat({b0, b1, b2, b3});
}

// Mixed_7b/c: 1x1 | 1x1-(1x3, 3x1) | 1x1-3x3-(1x3, 3x1) | avgpool-1x1.
Tensor inception_e(Cell c, const Tensor& x) {
  c.branch(0);
  Tensor b0 = c.conv(x, "Conv2d_0a_1x1", 1, 1, 320);
  c.branch(1);
  Tensor b1 = c.conv(x, "Conv2d_0a_1x1", 1, 1, 384);
  b1 = c.concat({c.conv(b1, "Conv2d_0b_1x3", 1, 3, 384), c.conv(b1, "Conv2d_0c_3x1", 3, 1, 384)},
                "Branch_1/concat");
  c.branch(2);
  Tensor b2 = c.conv(c.conv(x, "Conv2d_0a_1x1", 1, 1, 448), "Conv2d_0b_3x3", 3, 3, 384);
  c.branch(2);
  Tensor b2a = c.conv(b2, "Conv2d_0c_1x3", 1, 3, 384);
  c.branch(2);
  Tensor b2b = c.conv(b2, "Conv2d_0d_3x1", 3, 1, 384);
  b2 = c.concat({b2a, b2b}, "Branch_2/concat");
  c.branch(3);
  Tensor b3 = c.conv(c.avg_pool(x, "AvgPool_0a_3x3", 3, 1, true), "Conv2d_0b_1x1", 1, 1, 192);
  return c.concat({b0, b1, b2, b3});
}

}  // namespace

core::Graph generate_inception_v3(const InceptionV3Options& o, const std::string& name) {
  TrainingGraphBuilder b(name, "inception", o.optimizer);
  b.attr("batch", std::to_string(o.batch));
  b.attr("image", std::to_string(o.image));
  b.attr("classes", std::to_string(o.classes));
  b.set_scope("input", -1);
  Tensor x = b.input("images", {o.batch, o.image, o.image, 3});
  std::int32_t layer = 0;
  auto cell = [&](const std::string& block) { return Cell(b, "InceptionV3/" + block, layer++); };
  {
    Cell stem(b, "InceptionV3", layer++);
    x = stem.conv(x, "Conv2d_1a_3x3", 3, 3, 32, 2, false);
    x = stem.conv(x, "Conv2d_2a_3x3", 3, 3, 32, 1, false);
    x = stem.conv(x, "Conv2d_2b_3x3", 3, 3, 64, 1, true);
    x = stem.max_pool(x, "MaxPool_3a_3x3", 3, 2, false);
    x = stem.conv(x, "Conv2d_3b_1x1", 1, 1, 80, 1, false);
    x = stem.conv(x, "Conv2d_4a_3x3", 3, 3, 192, 1, false);
    x = stem.max_pool(x, "MaxPool_5a_3x3", 3, 2, false);
  }
  x = inception_a(cell("Mixed_5b"), x, 32);
  x = inception_a(cell("Mixed_5c"), x, 64);
  x = inception_a(cell("Mixed_5d"), x, 64);
  {  // Mixed_6a: reduction to 17x17.
    Cell c = cell("Mixed_6a");
    c.branch(0);
    Tensor b0 = c.conv(x, "Conv2d_1a_1x1", 3, 3, 384, 2, false);
    c.branch(1);
    Tensor b1 = c.conv(c.conv(x, "Conv2d_0a_1x1", 1, 1, 64), "Conv2d_0b_3x3", 3, 3, 96);
    b1 = c.conv(b1, "Conv2d_1a_1x1", 3, 3, 96, 2, false);
    c.branch(2);
    Tensor b2 = c.max_pool(x, "MaxPool_1a_3x3", 3, 2, false);
    x = c.concat({b0, b1, b2});
  }
  x = inception_c(cell("Mixed_6b"), x, 128);
  x = inception_c(cell("Mixed_6c"), x, 160);
  x = inception_c(cell("Mixed_6d"), x, 160);
  x = inception_c(cell("Mixed_6e"), x, 192);
  {  // Mixed_7a: reduction to 8x8.
    Cell c = cell("Mixed_7a");
    c.branch(0);
    Tensor b0 = c.conv(c.conv(x, "Conv2d_0a_1x1", 1, 1, 192), "Conv2d_1a_3x3", 3, 3, 320, 2, false);
    c.branch(1);
    Tensor b1 = c.conv(x, "Conv2d_0a_1x1", 1, 1, 192);
    b1 = c.conv(c.conv(b1, "Conv2d_0b_1x7", 1, 7, 192), "Conv2d_0c_7x1", 7, 1, 192);
    b1 = c.conv(b1, "Conv2d_1a_3x3", 3, 3, 192, 2, false);
    c.branch(2);
    Tensor b2 = c.max_pool(x, "MaxPool_1a_3x3", 3, 2, false);
    x = c.concat({b0, b1, b2});
  }
  x = inception_e(cell("Mixed_7b"), x);
  x = inception_e(cell("Mixed_7c"), x);
  Tensor loss = classifier(b, "InceptionV3", x, o.classes, o.batch);
  return std::move(b).finish(loss);
}

// --- AmoebaNet-A ----------------------------------------------------------------------------

namespace {

// tensorflow/tpu models/official/amoeba_net/model_specs.py, AmoebaNet-A.
constexpr std::array<const char*, 10> kNormalOps = {
    "avg_pool_3x3", "max_pool_3x3",    "separable_3x3_2", "none",         "none",
    "avg_pool_3x3", "separable_3x3_2", "separable_5x5_2", "avg_pool_3x3", "separable_3x3_2"};
constexpr std::array<int, 10> kNormalInputs = {0, 0, 1, 1, 0, 1, 0, 2, 5, 0};
constexpr std::array<const char*, 10> kReductionOps = {
    "separable_3x3_2", "avg_pool_3x3",    "max_pool_3x3", "separable_7x7_2", "max_pool_3x3",
    "max_pool_3x3",    "separable_3x3_2", "1x7_7x1",      "avg_pool_3x3",    "separable_7x7_2"};
constexpr std::array<int, 10> kReductionInputs = {1, 0, 0, 2, 1, 0, 4, 0, 1, 0};

Tensor amoeba_op(Cell& c, const std::string& op, const Tensor& x, std::int64_t filters, int stride,
                 const std::string& name) {
  if (op == "none") return x;
  if (op == "avg_pool_3x3") return c.avg_pool(x, name + "/avg_pool", 3, stride, true);
  if (op == "max_pool_3x3") return c.max_pool(x, name + "/max_pool", 3, stride, true);
  if (op == "1x7_7x1") {
    Tensor y = c.conv(c.relu(x, name + "/relu"), name + "/1x7", 1, 7, filters, 1, true, false);
    y = c.conv(c.relu(y, name + "/relu_1"), name + "/7x1", 7, 1, filters, 1, true, false);
    if (stride > 1) y = c.max_pool(y, name + "/stride", 1, stride, true);
    return y;
  }
  // separable_KxK_2: two (ReLU, separable conv, batch norm); the first one strides.
  std::int64_t k = op[10] - '0';
  Tensor y = c.separable(x, name + "/separable_1", k, filters, stride);
  return c.separable(y, name + "/separable_2", k, filters, 1);
}

// One NASNet-style cell: both inputs are brought to `filters` channels (and the older one
// to the same resolution), five pairwise combinations are summed, the unused states
// concatenated.
Tensor amoeba_cell(TrainingGraphBuilder& b, const std::string& prefix, std::int32_t layer,
                   const Tensor& prev, const Tensor& prevprev, std::int64_t filters,
                   bool reduction) {
  Cell c(b, prefix, layer);
  std::vector<Tensor> h;
  if (prevprev.shape[1] != prev.shape[1]) {
    // Factorized reduction: two strided 1x1 paths, concatenated.
    Tensor r = c.relu(prevprev, "prev_1/relu");
    Tensor p1 = c.conv(c.avg_pool(r, "prev_1/path1_pool", 1, 2, false), "prev_1/path1_conv", 1, 1,
                       filters / 2, 1, true, false);
    Tensor p2 = c.conv(c.avg_pool(r, "prev_1/path2_pool", 1, 2, false), "prev_1/path2_conv", 1, 1,
                       filters - filters / 2, 1, true, false);
    h.push_back(c.concat({p1, p2}, "prev_1/concat"));
  } else {
    h.push_back(
        c.conv(c.relu(prevprev, "prev_1/relu"), "prev_1/1x1", 1, 1, filters, 1, true, false));
  }
  h.push_back(
      c.conv(c.relu(prev, "beginning/relu"), "beginning/1x1", 1, 1, filters, 1, true, false));
  const auto& ops = reduction ? kReductionOps : kNormalOps;
  const auto& inputs = reduction ? kReductionInputs : kNormalInputs;
  std::vector<bool> used(7, false);
  for (int comb = 0; comb < 5; ++comb) {
    c.branch(comb);
    std::array<Tensor, 2> parts;
    for (int side = 0; side < 2; ++side) {
      int i = comb * 2 + side;
      auto src = static_cast<std::size_t>(inputs[static_cast<std::size_t>(i)]);
      used[src] = true;
      int stride = reduction && src < 2 ? 2 : 1;
      parts[static_cast<std::size_t>(side)] =
          amoeba_op(c, ops[static_cast<std::size_t>(i)], h[src], filters, stride,
                    "comb_iter_" + std::to_string(comb) + (side == 0 ? "/left" : "/right"));
    }
    h.push_back(c.add(parts[0], parts[1], "comb_iter_" + std::to_string(comb) + "/combine"));
  }
  std::vector<Tensor> out;
  for (std::size_t i = 2; i < h.size(); ++i) {
    if (!used[i]) out.push_back(h[i]);
  }
  return c.concat(out, "cell_output/concat");
}

}  // namespace

core::Graph generate_amoebanet(const AmoebaNetOptions& o, const std::string& name) {
  TrainingGraphBuilder b(name, "amoebanet", o.optimizer);
  b.attr("batch", std::to_string(o.batch));
  b.attr("image", std::to_string(o.image));
  b.attr("cells", std::to_string(o.cells));
  b.attr("filters", std::to_string(o.filters));
  b.attr("classes", std::to_string(o.classes));
  b.set_scope("input", -1);
  Tensor images = b.input("images", {o.batch, o.image, o.image, 3});
  std::int32_t layer = 0;
  Cell stem(b, "stem", layer++);
  Tensor x = stem.conv(images, "conv0", 3, 3, 96, 2, false, false);  // 32 x stem multiplier 3
  // Two stem reduction cells with F/4 and F/2 filters, then three stacks of N normal cells
  // separated by two reduction cells; filters double at each reduction.
  Tensor prevprev = x;
  Tensor prev = x;
  std::int64_t filters = o.filters / 4;
  int cell_index = 0;
  auto add_cell = [&](bool reduction) {
    std::string prefix = (reduction ? "reduction_cell_" : "cell_") + std::to_string(cell_index++);
    Tensor next = amoeba_cell(b, prefix, layer++, prev, prevprev, filters, reduction);
    prevprev = prev;
    prev = next;
  };
  add_cell(true);
  filters *= 2;
  add_cell(true);
  filters = o.filters;
  for (int stack = 0; stack < 3; ++stack) {
    if (stack > 0) {
      filters *= 2;
      add_cell(true);
    }
    for (std::int64_t i = 0; i < o.cells; ++i) add_cell(false);
  }
  b.set_scope("final", -1);
  Tensor loss = classifier(b, "final", b.relu(prev), o.classes, o.batch);
  return std::move(b).finish(loss);
}

}  // namespace gopt::datasets
