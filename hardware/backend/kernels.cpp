#include "hardware/backend/kernels.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <numeric>

namespace gopt::hardware::backend {
namespace {

using core::OpKind;
using core::Shape;
using I64 = std::int64_t;

I64 at_least_1(double v) {
  if (!(v >= 1)) return 1;
  return static_cast<I64>(std::llround(std::min(v, 9.0e15)));
}

I64 product(const Shape& s) {
  I64 n = 1;
  for (I64 d : s) n *= std::max<I64>(d, 1);
  return n;
}

std::vector<I64> dims(const Shape& s) {
  std::vector<I64> d;
  d.reserve(s.size());
  for (I64 v : s) d.push_back(std::max<I64>(v, 1));
  if (d.empty()) d.push_back(1);
  return d;
}

std::string shape_text(const std::vector<I64>& s) {
  std::string t = "[";
  for (std::size_t i = 0; i < s.size(); ++i) t += (i ? "x" : "") + std::to_string(s[i]);
  return t + "]";
}

bool has(const std::string& s, const char* part) { return s.find(part) != std::string::npos; }

struct Builder {
  const OpView& op;
  torch::Device device;
  torch::TensorOptions f32 = torch::TensorOptions().dtype(torch::kFloat32);

  [[nodiscard]] const core::NodeAttrs& a() const { return *op.attrs; }
  [[nodiscard]] torch::Tensor rand(const std::vector<I64>& shape) const {
    return torch::rand(shape, f32.device(device));
  }
  [[nodiscard]] torch::Tensor ids(I64 count, I64 bound) const {
    return torch::randint(bound, {count},
                          torch::TensorOptions().dtype(torch::kInt64).device(device));
  }
  [[nodiscard]] int elem_size() const { return std::max(1, core::dtype_size_bytes(a().dtype)); }
  /// Elements the op reads, from its data inputs (or its output when it lists none).
  [[nodiscard]] I64 read_elems(I64 fallback) const {
    double bytes = 0;
    for (auto b : op.input_bytes) bytes += static_cast<double>(std::max<core::Bytes>(b, 0));
    if (bytes <= 0 && a().bytes_read > 0) bytes = static_cast<double>(a().bytes_read);
    return bytes > 0 ? at_least_1(bytes / elem_size()) : fallback;
  }
  [[nodiscard]] I64 largest_input_elems(I64 fallback) const {
    core::Bytes m = 0;
    for (auto b : op.input_bytes) m = std::max(m, b);
    return m > 0 ? at_least_1(static_cast<double>(m) / elem_size()) : fallback;
  }
  [[nodiscard]] I64 num_data_inputs() const {
    return std::max<I64>(1, static_cast<I64>(op.input_bytes.size()));
  }
  /// (N, C, H, W) of a 4-D output, honouring the layout; lower ranks pad with 1s.
  [[nodiscard]] std::array<I64, 4> nchw() const {
    auto d = dims(primary_shape(a()));
    while (d.size() < 4) d.insert(d.begin(), 1);
    if (d.size() > 4) {
      I64 lead = 1;
      for (std::size_t i = 0; i + 3 < d.size(); ++i) lead *= d[i];
      d = {lead, d[d.size() - 3], d[d.size() - 2], d[d.size() - 1]};
    }
    if (op.channels_last) return {d[0], d[3], d[1], d[2]};
    return {d[0], d[1], d[2], d[3]};
  }
};

Kernel matmul_like(const Builder& b, const std::vector<I64>& out, double flops, bool proxy,
                   const std::string& label) {
  Kernel k;
  I64 n = out.back();
  I64 m = out.size() >= 2 ? out[out.size() - 2] : 1;
  I64 batch = 1;
  for (std::size_t i = 0; i + 2 < out.size(); ++i) batch *= out[i];
  I64 inner = at_least_1(flops / (2.0 * static_cast<double>(batch * m * n)));
  k.proxy = proxy;
  if (batch == 1) {
    k.operands = {b.rand({m, inner}), b.rand({inner, n})};
    k.run = [](std::vector<torch::Tensor>& o) { return torch::mm(o[0], o[1]); };
    k.what = label + " mm " + shape_text({m, inner}) + "x" + shape_text({inner, n});
  } else {
    k.operands = {b.rand({batch, m, inner}), b.rand({batch, inner, n})};
    k.run = [](std::vector<torch::Tensor>& o) { return torch::bmm(o[0], o[1]); };
    k.what = label + " bmm " + shape_text({batch, m, inner}) + "x" + shape_text({batch, inner, n});
  }
  return k;
}

Kernel copy_kernel(const Builder& b, I64 elems, bool proxy, const std::string& label) {
  Kernel k;
  k.operands = {b.rand({elems}), b.rand({elems})};
  k.run = [](std::vector<torch::Tensor>& o) { return o[1].copy_(o[0]); };
  k.proxy = proxy;
  k.what = label + " copy " + shape_text({elems});
  return k;
}

Kernel conv_kernel(const Builder& b) {
  const auto& t = b.a().op_type;
  auto out = dims(primary_shape(b.a()));
  double flops = b.a().flops;
  if (has(t, "BackpropFilter")) {
    // The filter gradient is an im2col GEMM over the batch: [kh*kw*cin, P] x [P, cout].
    I64 cout = out.back();
    I64 rows = std::max<I64>(1, product(out) / cout);
    return matmul_like(b, {rows, cout}, flops, true, "conv filter gradient as");
  }
  const auto [n, c, h, w] = b.nchw();
  double out_elems = static_cast<double>(n * c * h * w);
  double per_output = std::max(1.0, flops / (2.0 * out_elems));  // kh * kw * cin (or kh*kw)
  Kernel k;
  if (has(t, "Depthwise")) {
    I64 kk = at_least_1(std::sqrt(per_output));
    k.operands = {b.rand({n, c, h + kk - 1, w + kk - 1}), b.rand({c, 1, kk, kk})};
    k.run = [groups = I64{c}](std::vector<torch::Tensor>& o) {
      return torch::conv2d(o[0], o[1], torch::Tensor(), torch::IntArrayRef{1},
                           torch::IntArrayRef{0}, torch::IntArrayRef{1}, groups);
    };
    k.what = "depthwise conv2d " + std::to_string(kk) + "x" + std::to_string(kk) + " " +
             shape_text({n, c, h, w});
    return k;
  }
  // Input channels from the activation input's bytes (same spatial size assumed), then the
  // square kernel that makes 2 * out * k * k * cin equal the op's FLOPs.
  I64 act = b.largest_input_elems(n * h * w);
  I64 cin = std::clamp<I64>(act / std::max<I64>(1, n * h * w), 1, at_least_1(per_output));
  I64 kk = at_least_1(std::sqrt(per_output / static_cast<double>(cin)));
  cin = at_least_1(per_output / static_cast<double>(kk * kk));
  k.operands = {b.rand({n, cin, h + kk - 1, w + kk - 1}), b.rand({c, cin, kk, kk})};
  k.run = [](std::vector<torch::Tensor>& o) { return torch::conv2d(o[0], o[1]); };
  k.what = "conv2d " + std::to_string(kk) + "x" + std::to_string(kk) + " cin " +
           std::to_string(cin) + " -> " + shape_text({n, c, h, w});
  return k;
}

Kernel pool_kernel(const Builder& b) {
  auto [n, c, h, w] = b.nchw();
  double window = std::max(1.0, b.a().flops / static_cast<double>(n * c * h * w));
  I64 kk = at_least_1(std::sqrt(window));
  bool avg = has(b.a().op_type, "Avg");
  Kernel k;
  k.operands = {b.rand({n, c, h + kk - 1, w + kk - 1})};
  if (avg) {
    k.run = [kk](std::vector<torch::Tensor>& o) { return torch::avg_pool2d(o[0], {kk, kk}, 1); };
  } else {
    k.run = [kk](std::vector<torch::Tensor>& o) { return torch::max_pool2d(o[0], {kk, kk}, 1); };
  }
  k.proxy = has(b.a().op_type, "Grad");
  k.what = std::string(avg ? "avg" : "max") + "_pool2d " + std::to_string(kk) + "x" +
           std::to_string(kk) + " -> " + shape_text({n, c, h, w});
  return k;
}

Kernel elementwise_kernel(const Builder& b) {
  const auto& t = b.a().op_type;
  auto out = dims(primary_shape(b.a()));
  I64 elems = product(out);
  Kernel k;
  k.what = t + " " + shape_text(out);
  auto unary = [&](std::function<torch::Tensor(torch::Tensor&)> f) {
    k.operands = {b.rand(out)};
    k.run = [f](std::vector<torch::Tensor>& o) { return f(o[0]); };
  };
  auto binary = [&](std::function<torch::Tensor(torch::Tensor&, torch::Tensor&)> f) {
    // A second input smaller than the output broadcasts over the leading dimensions.
    I64 second =
        std::min(elems, b.num_data_inputs() >= 2
                            ? at_least_1(static_cast<double>(b.op.input_bytes[1]) / b.elem_size())
                            : elems);
    std::vector<I64> sshape = out;
    if (second < elems && elems % second == 0 && second == out.back()) sshape = {out.back()};
    k.operands = {b.rand(out), b.rand(sshape)};
    k.run = [f](std::vector<torch::Tensor>& o) { return f(o[0], o[1]); };
  };
  if (t == "Sigmoid") {
    unary([](torch::Tensor& x) { return torch::sigmoid(x); });
  } else if (t == "Tanh") {
    unary([](torch::Tensor& x) { return torch::tanh(x); });
  } else if (t == "Relu") {
    unary([](torch::Tensor& x) { return torch::relu(x); });
  } else if (t == "Exp") {
    unary([](torch::Tensor& x) { return torch::exp(x); });
  } else if (t == "Log") {
    unary([](torch::Tensor& x) { return torch::log(x); });
  } else if (t == "Sqrt") {
    unary([](torch::Tensor& x) { return torch::sqrt(x); });
  } else if (t == "Rsqrt") {
    unary([](torch::Tensor& x) { return torch::rsqrt(x); });
  } else if (t == "Square") {
    unary([](torch::Tensor& x) { return torch::square(x); });
  } else if (t == "Neg") {
    unary([](torch::Tensor& x) { return torch::neg(x); });
  } else if (t == "Erf") {
    unary([](torch::Tensor& x) { return torch::erf(x); });
  } else if (t == "Cast") {
    unary([](torch::Tensor& x) { return x.to(torch::kFloat64).to(torch::kFloat32); });
    k.proxy = true;  // two conversions: the graph's dtypes are not tracked per input
  } else if (t == "RandomUniform" || t == "RandomStandardNormal") {
    unary([](torch::Tensor& x) { return x.uniform_(); });
  } else if (t == "SigmoidGrad") {
    binary([](torch::Tensor& y, torch::Tensor& dy) { return torch::sigmoid_backward(dy, y); });
  } else if (t == "TanhGrad") {
    binary([](torch::Tensor& y, torch::Tensor& dy) { return torch::tanh_backward(dy, y); });
  } else if (t == "ReluGrad") {
    binary([](torch::Tensor& dy, torch::Tensor& x) { return torch::threshold_backward(dy, x, 0); });
  } else if (t == "Mul") {
    binary([](torch::Tensor& x, torch::Tensor& y) { return torch::mul(x, y); });
  } else if (t == "Sub") {
    binary([](torch::Tensor& x, torch::Tensor& y) { return torch::sub(x, y); });
  } else if (t == "RealDiv" || t == "Div") {
    binary([](torch::Tensor& x, torch::Tensor& y) { return torch::div(x, y); });
  } else if (t == "Maximum" || t == "Max") {
    binary([](torch::Tensor& x, torch::Tensor& y) { return torch::maximum(x, y); });
  } else if (t == "Minimum" || t == "Min") {
    binary([](torch::Tensor& x, torch::Tensor& y) { return torch::minimum(x, y); });
  } else if (t == "GreaterEqual" || t == "Greater" || t == "Less" || t == "Equal") {
    binary([](torch::Tensor& x, torch::Tensor& y) { return torch::ge(x, y); });
  } else if (t == "Pow") {
    binary([](torch::Tensor& x, torch::Tensor& y) { return torch::pow(x, y); });
  } else if (t == "SquaredDifference") {
    binary([](torch::Tensor& x, torch::Tensor& y) { return torch::square(x - y); });
  } else if (t == "AddN" || t == "Sum") {
    // AddN of n inputs: n - 1 additions into one output.
    I64 n = std::max<I64>(2, b.num_data_inputs());
    for (I64 i = 0; i < n; ++i) k.operands.push_back(b.rand(out));
    k.run = [](std::vector<torch::Tensor>& o) {
      torch::Tensor acc = torch::add(o[0], o[1]);
      for (std::size_t i = 2; i < o.size(); ++i) acc.add_(o[i]);
      return acc;
    };
    k.what = t + " of " + std::to_string(n) + " " + shape_text(out);
  } else if (t == "Add" || t == "AddV2" || t == "BiasAdd") {
    binary([](torch::Tensor& x, torch::Tensor& y) { return torch::add(x, y); });
  } else if (t == "Where" || t == "Select" || t == "SelectV2") {
    k.operands = {b.rand(out) > 0.5, b.rand(out), b.rand(out)};
    k.run = [](std::vector<torch::Tensor>& o) { return torch::where(o[0], o[1], o[2]); };
  } else {
    // An elementwise op without its own kernel: an addition over the same elements.
    binary([](torch::Tensor& x, torch::Tensor& y) { return torch::add(x, y); });
    k.proxy = true;
  }
  return k;
}

Kernel reduction_kernel(const Builder& b) {
  auto out = dims(primary_shape(b.a()));
  I64 out_elems = product(out);
  I64 in_elems = std::max(out_elems, b.largest_input_elems(out_elems));
  I64 r = std::max<I64>(1, in_elems / out_elems);
  const auto& t = b.a().op_type;
  Kernel k;
  if (t == "BiasAddGrad") {  // sums the rows of [r, channels]
    k.operands = {b.rand({r, out_elems})};
    k.run = [](std::vector<torch::Tensor>& o) { return o[0].sum(0); };
  } else if (t == "Max" || t == "ReduceMax") {
    k.operands = {b.rand({out_elems, r})};
    k.run = [](std::vector<torch::Tensor>& o) { return std::get<0>(o[0].max(1)); };
  } else if (t == "Mean" || t == "ReduceMean" || t == "GlobalAveragePool") {
    k.operands = {b.rand({out_elems, r})};
    k.run = [](std::vector<torch::Tensor>& o) { return o[0].mean(1); };
  } else {
    k.operands = {b.rand({out_elems, r})};
    k.run = [](std::vector<torch::Tensor>& o) { return o[0].sum(1); };
  }
  k.what = t + " " + shape_text({r, out_elems}) + " -> " + shape_text({out_elems});
  return k;
}

Kernel normalization_kernel(const Builder& b) {
  const auto& t = b.a().op_type;
  auto out = dims(primary_shape(b.a()));
  I64 elems = product(out);
  bool layer = has(t, "LayerNorm") || has(t, "LayerNormalization");
  I64 c = layer || b.op.channels_last || out.size() < 2 ? out.back() : out[1];
  I64 rows = std::max<I64>(1, elems / c);
  Kernel k;
  double eps = 1e-3;
  bool grad = has(t, "Grad");
  auto x = b.rand({rows, c});
  auto w = b.rand({c});
  auto bias = b.rand({c});
  if (layer) {
    auto [y, mean, rstd] = torch::native_layer_norm(x, {c}, w, bias, eps);
    if (grad) {
      k.operands = {b.rand({rows, c}), x, mean, rstd, w, bias};
      k.run = [c](std::vector<torch::Tensor>& o) {
        return std::get<0>(torch::native_layer_norm_backward(o[0], o[1], {c}, o[2], o[3], o[4],
                                                             o[5], {true, true, true}));
      };
    } else {
      k.operands = {x, w, bias};
      k.run = [c, eps](std::vector<torch::Tensor>& o) {
        return torch::layer_norm(o[0], {c}, o[1], o[2], eps);
      };
    }
  } else {
    auto rm = torch::zeros({c}, b.f32.device(b.device));
    auto rv = torch::ones({c}, b.f32.device(b.device));
    if (grad) {
      auto [y, save_mean, save_invstd] =
          torch::native_batch_norm(x, w, bias, rm, rv, true, 0.1, eps);
      k.operands = {b.rand({rows, c}), x, w, rm, rv, save_mean, save_invstd};
      k.run = [eps](std::vector<torch::Tensor>& o) {
        return std::get<0>(torch::native_batch_norm_backward(o[0], o[1], o[2], o[3], o[4], o[5],
                                                             o[6], true, eps, {true, true, true}));
      };
    } else {
      k.operands = {x, w, bias, rm, rv};
      k.run = [eps](std::vector<torch::Tensor>& o) {
        return torch::batch_norm(o[0], o[1], o[2], o[3], o[4], true, 0.1, eps, false);
      };
    }
  }
  k.what = std::string(layer ? "layer_norm" : "batch_norm") + (grad ? " backward " : " ") +
           shape_text({rows, c});
  return k;
}

Kernel softmax_kernel(const Builder& b) {
  const auto& t = b.a().op_type;
  // The logits: the largest output (cross-entropy ops list the loss and the gradient).
  Shape best = primary_shape(b.a());
  for (const auto& s : b.a().output_shapes) {
    if (product(s) > product(best)) best = s;
  }
  auto d = dims(best);
  I64 classes = d.back();
  I64 rows = std::max<I64>(1, product(d) / classes);
  Kernel k;
  if (has(t, "CrossEntropy")) {
    k.operands = {b.rand({rows, classes}), b.ids(rows, classes)};
    k.run = [](std::vector<torch::Tensor>& o) {
      torch::Tensor log_probs = torch::log_softmax(o[0], 1);
      torch::nll_loss(log_probs, o[1]);
      return log_probs;  // [rows, classes], like the op's gradient output
    };
    k.what = "log_softmax + nll_loss " + shape_text({rows, classes});
  } else {
    k.operands = {b.rand({rows, classes})};
    if (has(t, "Log")) {
      k.run = [](std::vector<torch::Tensor>& o) { return torch::log_softmax(o[0], 1); };
    } else {
      k.run = [](std::vector<torch::Tensor>& o) { return torch::softmax(o[0], 1); };
    }
    k.proxy = has(t, "Grad");
    k.what = "softmax " + shape_text({rows, classes});
  }
  return k;
}

Kernel embedding_kernel(const Builder& b) {
  const auto& t = b.a().op_type;
  auto out = dims(primary_shape(b.a()));
  I64 width = out.back();
  I64 rows = std::max<I64>(1, product(out) / width);
  Kernel k;
  if (has(t, "Segment") || has(t, "Scatter")) {
    // Gradient of a gather: scatter-add `n` rows into a zeroed [rows, width] table.
    I64 n = std::max<I64>(1, b.largest_input_elems(rows * width) / width);
    k.operands = {b.rand({rows, width}), b.rand({n, width}), b.ids(n, rows)};
    k.run = [](std::vector<torch::Tensor>& o) { return o[0].zero_().index_add_(0, o[2], o[1]); };
    k.what = "index_add " + shape_text({n, width}) + " -> " + shape_text({rows, width});
  } else {
    I64 table = std::clamp<I64>(b.largest_input_elems(rows * width) / width, rows, I64{1} << 22);
    k.operands = {b.rand({table, width}), b.ids(rows, table)};
    k.run = [](std::vector<torch::Tensor>& o) { return torch::index_select(o[0], 0, o[1]); };
    k.what = "index_select " + shape_text({table, width}) + " -> " + shape_text({rows, width});
  }
  return k;
}

Kernel data_movement_kernel(const Builder& b) {
  const auto& t = b.a().op_type;
  auto out = dims(primary_shape(b.a()));
  I64 elems = 0;
  for (const auto& s : b.a().output_shapes) elems += product(s);
  elems = std::max<I64>(elems, 1);
  Kernel k;
  if (t == "ConcatV2" || t == "Concat" || t == "Pack" || t == "Stack") {
    I64 n = b.num_data_inputs();
    I64 piece = std::max<I64>(1, elems / n);
    for (I64 i = 0; i < n; ++i) {
      k.operands.push_back(b.rand({i + 1 < n ? piece : std::max<I64>(1, elems - piece * (n - 1))}));
    }
    k.run = [](std::vector<torch::Tensor>& o) { return torch::cat(o, 0); };
    k.what = "cat of " + std::to_string(n) + " -> " + shape_text({elems});
  } else if (t == "Transpose") {
    auto d = out;
    std::reverse(d.begin(), d.end());
    k.operands = {b.rand(d)};
    k.run = [](std::vector<torch::Tensor>& o) {
      std::vector<I64> perm(static_cast<std::size_t>(o[0].dim()));
      std::iota(perm.rbegin(), perm.rend(), 0);
      return o[0].permute(perm).contiguous();
    };
    k.what = "transpose " + shape_text(d);
  } else if (t == "Slice" || t == "StridedSlice" || t == "Gather") {
    I64 in = std::max(elems, b.largest_input_elems(elems));
    k.operands = {b.rand({in})};
    k.run = [elems](std::vector<torch::Tensor>& o) { return o[0].narrow(0, 0, elems).clone(); };
    k.what = "slice " + shape_text({in}) + " -> " + shape_text({elems});
  } else if (t == "Pad") {
    I64 in = std::min(elems, b.largest_input_elems(elems));
    k.operands = {b.rand({in})};
    k.run = [pad = elems - in](std::vector<torch::Tensor>& o) {
      return torch::constant_pad_nd(o[0], {pad, 0}, 0);
    };
    k.what = "pad " + shape_text({in}) + " -> " + shape_text({elems});
  } else {
    // Split, Unpack, Tile, ...: one copy of the bytes the op writes.
    bool known = t == "Split" || t == "SplitV" || t == "Unpack" || t == "Unstack" || t == "Tile" ||
                 t == "Copy";
    return copy_kernel(b, elems, !known, t);
  }
  return k;
}

Kernel update_kernel(const Builder& b) {
  const auto& t = b.a().op_type;
  auto out = dims(primary_shape(b.a()));
  I64 elems = product(out);
  Kernel k;
  if (has(t, "Adam")) {
    k.operands = {b.rand({elems}), b.rand({elems}), b.rand({elems}), b.rand({elems})};
    k.run = [](std::vector<torch::Tensor>& o) {
      // param, m, v, grad: Adam's arithmetic (10 FLOPs per parameter), in place.
      o[1].mul_(0.9).add_(o[3], 0.1);
      o[2].mul_(0.999).addcmul_(o[3], o[3], 0.001);
      return o[0].addcdiv_(o[1], o[2].sqrt().add_(1e-8), -1e-3);
    };
    k.what = "adam " + shape_text({elems});
  } else {
    k.operands = {b.rand({elems}), b.rand({elems})};
    k.run = [](std::vector<torch::Tensor>& o) { return o[0].add_(o[1], -1e-3); };
    k.proxy = !has(t, "GradientDescent");
    k.what = "sgd " + shape_text({elems});
  }
  return k;
}

}  // namespace

core::Shape primary_shape(const core::NodeAttrs& attrs) {
  if (!attrs.output_shapes.empty() && !attrs.output_shapes.front().empty()) {
    return attrs.output_shapes.front();
  }
  core::Bytes bytes = attrs.bytes_written > 0 ? attrs.bytes_written : attrs.output_bytes;
  int size = std::max(1, core::dtype_size_bytes(attrs.dtype));
  return {std::max<I64>(1, bytes / size)};
}

namespace {
Kernel make_kernel_unshaped(const OpView& op, const torch::Device& device);
}  // namespace

Kernel make_kernel(const OpView& op, const torch::Device& device) {
  Kernel k = make_kernel_unshaped(op, device);
  if (k.no_work || !k.run) return k;
  // The output takes the op's shape (the largest output for a softmax, whose ops list the
  // loss before the gradient) whenever the element counts agree: a view, no copy.
  Shape shape = primary_shape(*op.attrs);
  if (op.attrs->kind == OpKind::kSoftmax) {
    for (const auto& s : op.attrs->output_shapes) {
      if (product(s) > product(shape)) shape = s;
    }
  }
  auto target = dims(shape);
  I64 elems = product(shape);
  k.run = [inner = std::move(k.run), target, elems](std::vector<torch::Tensor>& o) {
    torch::Tensor out = inner(o);
    if (out.defined() && out.numel() == elems) return out.reshape(target);
    return out;
  };
  return k;
}

namespace {

Kernel make_kernel_unshaped(const OpView& op, const torch::Device& device) {
  Builder b{op, device};
  const core::NodeAttrs& a = *op.attrs;
  switch (a.kind) {
    case OpKind::kInput:
    case OpKind::kVariable: {
      Kernel k;
      k.operands = {b.rand(dims(primary_shape(a)))};
      k.run = [](std::vector<torch::Tensor>& o) { return o[0]; };
      k.no_work = true;
      k.what = "resident " + shape_text(dims(primary_shape(a)));
      return k;
    }
    case OpKind::kControl: {
      Kernel k;
      k.run = [](std::vector<torch::Tensor>&) { return torch::Tensor(); };
      k.no_work = true;
      k.what = "no-op";
      return k;
    }
    case OpKind::kReshape: {
      Kernel k;
      auto shape = dims(primary_shape(a));
      k.operands = {b.rand({product(shape)})};
      k.run = [shape](std::vector<torch::Tensor>& o) { return o[0].view(shape); };
      k.what = "view " + shape_text(shape);
      return k;
    }
    case OpKind::kMatMul:
      return matmul_like(b, dims(primary_shape(a)), a.flops, false, a.op_type);
    case OpKind::kConv:
      return conv_kernel(b);
    case OpKind::kPool:
      return pool_kernel(b);
    case OpKind::kElementwise:
      return elementwise_kernel(b);
    case OpKind::kReduction:
      return reduction_kernel(b);
    case OpKind::kNormalization:
      return normalization_kernel(b);
    case OpKind::kSoftmax:
      return softmax_kernel(b);
    case OpKind::kEmbedding:
      return embedding_kernel(b);
    case OpKind::kDataMovement:
      return data_movement_kernel(b);
    case OpKind::kRecurrent:
      // A whole fused RNN layer: a matrix product with the layer's FLOPs.
      return matmul_like(b, dims(primary_shape(a)), a.flops, true, a.op_type + " as");
    case OpKind::kUpdate:
      return update_kernel(b);
    case OpKind::kOther:
      break;
  }
  I64 elems = std::max<I64>(1, product(dims(primary_shape(a))));
  return copy_kernel(b, elems, true, a.op_type);
}

}  // namespace

}  // namespace gopt::hardware::backend
