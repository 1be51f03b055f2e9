// WaveNet as in ibab/tensorflow-wavenet (wavenet/model.py): one-hot input, a causal
// convolution, stacks of gated dilated causal convolutions with residual and skip 1x1
// convolutions, then ReLU-1x1-ReLU-1x1 and a softmax over the quantisation levels. Time is
// the width axis of NHWC tensors [batch, 1, samples, channels]; causality is a left Pad.
#include <string>
#include <vector>

#include "datasets/workloads.h"

namespace gopt::datasets {
namespace {

// Pads `width - 1` steps (times the dilation) on the left of the time axis and runs a VALID
// convolution, so output step t sees only inputs <= t.
Tensor causal_conv(TrainingGraphBuilder& b, const Tensor& padded, const std::string& name,
                   std::int64_t width, std::int64_t out_channels, int dilation) {
  Tensor w = b.variable(name, {1, width, padded.shape[3], out_channels});
  return b.conv2d(padded, w, 1, 1, false, dilation);
}

Tensor causal_pad(TrainingGraphBuilder& b, const Tensor& x, std::int64_t steps) {
  return b.pad(x, {{0, 0}, {0, 0}, {steps, 0}, {0, 0}});
}

}  // namespace

core::Graph generate_wavenet(const WavenetOptions& o, const std::string& name) {
  TrainingGraphBuilder b(name, "wavenet", o.optimizer);
  for (const auto& [k, v] : std::initializer_list<std::pair<const char*, std::int64_t>>{
           {"stacks", o.stacks},
           {"layers_per_stack", o.layers_per_stack},
           {"residual_channels", o.residual_channels},
           {"dilation_channels", o.dilation_channels},
           {"skip_channels", o.skip_channels},
           {"quantization", o.quantization},
           {"batch", o.batch},
           {"samples", o.samples}}) {
    b.attr(k, std::to_string(v));
  }
  const std::int64_t n = o.batch, t = o.samples;
  b.set_scope("wavenet/input", -1);
  Tensor one_hot = b.input("one_hot", {n, 1, t, o.quantization});
  b.set_scope("wavenet/causal_layer", -1);
  Tensor x = causal_conv(b, causal_pad(b, one_hot, 1), "filter", 2, o.residual_channels, 1);

  std::vector<Tensor> skips;
  std::int32_t layer = 0;
  for (std::int64_t s = 0; s < o.stacks; ++s) {
    int dilation = 1;
    for (std::int64_t l = 0; l < o.layers_per_stack; ++l, dilation *= 2, ++layer) {
      b.set_scope("wavenet/dilated_stack/layer" + std::to_string(layer), layer);
      Tensor padded = causal_pad(b, x, dilation);
      Tensor filter = causal_conv(b, padded, "filter", 2, o.dilation_channels, dilation);
      Tensor gate = causal_conv(b, padded, "gate", 2, o.dilation_channels, dilation);
      Tensor out = b.mul(b.tanh(filter), b.sigmoid(gate));
      Tensor skip = b.variable("skip", {1, 1, o.dilation_channels, o.skip_channels});
      skips.push_back(b.conv2d(out, skip, 1, 1, false));
      // The last layer's residual output would feed nothing (and get no gradient).
      if (layer + 1 < o.stacks * o.layers_per_stack) {
        Tensor dense = b.variable("dense", {1, 1, o.dilation_channels, o.residual_channels});
        x = b.add(b.conv2d(out, dense, 1, 1, false), x);
      }
    }
  }

  b.set_scope("wavenet/postprocessing", -1);
  Tensor total = b.relu(b.add_n(skips));
  Tensor w1 = b.variable("postprocess1", {1, 1, o.skip_channels, o.skip_channels});
  Tensor w2 = b.variable("postprocess2", {1, 1, o.skip_channels, o.quantization});
  Tensor logits = b.conv2d(b.relu(b.conv2d(total, w1, 1, 1, false)), w2, 1, 1, false);
  logits = b.reshape(logits, {n * t, o.quantization});
  Tensor labels = b.input("labels", {n * t}, core::DType::kInt32);
  b.set_scope("loss", -1);
  Tensor loss = b.mean(b.sparse_softmax_cross_entropy(logits, labels));
  return std::move(b).finish(loss);
}

}  // namespace gopt::datasets
