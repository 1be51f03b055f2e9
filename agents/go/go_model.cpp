#include "agents/go/go_model.h"

#include <cmath>

#include "agents/go/segment_attention.h"
#include "core/op_kind.h"

namespace gopt::agents::go {

std::vector<GoTask> enabled_tasks(const GoPolicyOptions& options) {
  std::vector<GoTask> tasks;
  if (options.place) tasks.push_back(GoTask::kPlacement);
  if (options.schedule) tasks.push_back(GoTask::kScheduling);
  if (options.fuse) tasks.push_back(GoTask::kFusion);
  return tasks;
}

std::int64_t task_width(const GoPolicyOptions& options, GoTask task) {
  switch (task) {
    case GoTask::kPlacement:
      return options.max_devices;
    case GoTask::kScheduling:
      return options.priority_levels;
    case GoTask::kFusion:
      return options.fusion_levels;
  }
  return 0;
}

const torch::Tensor& PolicyOutput::of(GoTask task) const {
  switch (task) {
    case GoTask::kPlacement:
      return logits;
    case GoTask::kScheduling:
      return priority_logits;
    case GoTask::kFusion:
      return fusion_logits;
  }
  return logits;
}

namespace {

torch::Tensor pool(const torch::Tensor& x) {
  return torch::cat({x.mean(0), std::get<0>(x.max(0))}, 0);
}

}  // namespace

SageLayerImpl::SageLayerImpl(std::int64_t hidden)
    : self_(register_module("self", torch::nn::Linear(hidden, hidden))),
      pred_(register_module(
          "pred", torch::nn::Linear(torch::nn::LinearOptions(hidden, hidden).bias(false)))),
      succ_(register_module(
          "succ", torch::nn::Linear(torch::nn::LinearOptions(hidden, hidden).bias(false)))),
      norm_(register_module("norm", torch::nn::LayerNorm(torch::nn::LayerNormOptions({hidden})))) {}

torch::Tensor SageLayerImpl::forward(const torch::Tensor& h, const GraphTensors& g) {
  // Mean over predecessors: sum h[src] into dst, then scale by 1 / in-degree.
  auto from_pred = torch::zeros_like(h).index_add_(0, g.edge_dst, h.index_select(0, g.edge_src));
  auto from_succ = torch::zeros_like(h).index_add_(0, g.edge_src, h.index_select(0, g.edge_dst));
  auto update =
      torch::relu(self_(h) + pred_(from_pred * g.inv_in_deg) + succ_(from_succ * g.inv_out_deg));
  return norm_(h + update);
}

GraphSageEncoderImpl::GraphSageEncoderImpl(const GoPolicyOptions& options)
    : kind_(
          register_module("kind", torch::nn::Embedding(core::kNumOpKinds, options.kind_embedding))),
      input_(register_module(
          "input", torch::nn::Linear(options.kind_embedding + kNumericFeatures, options.hidden))),
      layers_(register_module("layers", torch::nn::ModuleList())) {
  for (std::int64_t i = 0; i < options.sage_layers; ++i) {
    layers_->push_back(SageLayer(options.hidden));
  }
}

torch::Tensor GraphSageEncoderImpl::forward(const GraphTensors& g) {
  auto h = torch::relu(input_(torch::cat({kind_(g.kinds), g.numeric}, 1)));
  for (const auto& layer : *layers_) h = layer->as<SageLayer>()->forward(h, g);
  return h;
}

SegmentAttentionLayerImpl::SegmentAttentionLayerImpl(std::int64_t hidden, std::int64_t heads,
                                                     std::int64_t segment)
    : hidden_(hidden), heads_(heads), segment_(segment) {
  TORCH_CHECK(hidden % heads == 0, "GO policy: hidden (", hidden, ") must be a multiple of heads (",
              heads, ")");
  TORCH_CHECK(segment >= 1, "GO policy: segment_length must be positive");
  q_ = register_module("q", torch::nn::Linear(hidden, hidden));
  k_ = register_module("k", torch::nn::Linear(hidden, hidden));
  v_ = register_module("v", torch::nn::Linear(hidden, hidden));
  o_ = register_module("o", torch::nn::Linear(hidden, hidden));
  ff1_ = register_module("ff1", torch::nn::Linear(hidden, 2 * hidden));
  ff2_ = register_module("ff2", torch::nn::Linear(2 * hidden, hidden));
  norm1_ = register_module("norm1", torch::nn::LayerNorm(torch::nn::LayerNormOptions({hidden})));
  norm2_ = register_module("norm2", torch::nn::LayerNorm(torch::nn::LayerNormOptions({hidden})));
  // Query i of a segment and key j of [memory, segment]: offset (j - L) - i in
  // [-2L + 1, L - 1], stored at offset + 2L - 1 (segment_attention.h).
  rel_bias_ = register_parameter("rel_bias", torch::zeros({heads, 3 * segment}));
}

torch::Tensor SegmentAttentionLayerImpl::forward(const torch::Tensor& x) {
  const auto n = x.size(0);
  const auto l = segment_;
  const auto s = (n + l - 1) / l;
  const auto pad = s * l - n;
  const auto dh = hidden_ / heads_;
  auto seg = torch::constant_pad_nd(x, {0, 0, 0, pad}).view({s, l, hidden_});
  // Keys and values are projected once per node; a segment's memory is the previous
  // segment's projections, detached inside segment_attention (no gradient reaches the
  // memory's nodes nor, through it, the projections), so the projection cost is N, not 2N.
  auto q = q_(seg) * (1.0 / std::sqrt(static_cast<double>(dh)));
  auto attended = segment_attention(q, k_(seg), v_(seg), rel_bias_, heads_, n);
  auto y = norm1_(seg + o_(attended));
  y = norm2_(y + ff2_(torch::relu(ff1_(y))));
  return y.reshape({s * l, hidden_}).slice(0, 0, n);
}

GoPolicyImpl::GoPolicyImpl(const GoPolicyOptions& options_)
    : options(options_),
      encoder_(register_module("encoder", GraphSageEncoder(options_))),
      attention_(register_module("attention", torch::nn::ModuleList())),
      modulation_(register_module(
          "modulation",
          torch::nn::Linear(2 * options_.hidden, 2 * options_.hidden * options_.attention_layers))),
      previous_device_(register_module(
          "previous_device", torch::nn::Embedding(options_.max_devices, options_.hidden))),
      placement_(
          register_module("placement", torch::nn::Linear(options_.hidden, options_.max_devices))),
      task_attention_(register_module("task_attention", torch::nn::ModuleList())),
      decision_embedding_(register_module("decision_embedding", torch::nn::ModuleList())),
      value_hidden_(
          register_module("value_hidden", torch::nn::Linear(2 * options_.hidden, options_.hidden))),
      value_out_(register_module("value_out", torch::nn::Linear(options_.hidden, 1))) {
  for (std::int64_t i = 0; i < options.attention_layers; ++i) {
    attention_->push_back(
        SegmentAttentionLayer(options.hidden, options.heads, options.segment_length));
  }
  if (options.unit_gate) {
    unit_gate_ = register_module("unit_gate", torch::nn::Linear(options.hidden, 1));
  }
  const auto tasks = enabled_tasks(options);
  TORCH_CHECK(!tasks.empty(), "GO policy: no task to decide (place, schedule and fuse all off)");
  TORCH_CHECK(options.task_layers || (tasks.size() == 1 && tasks[0] == GoTask::kPlacement),
              "GO policy: scheduling and fusion need task_layers (the multi-task network)");
  TORCH_CHECK(options.priority_levels >= 2, "GO policy: priority_levels must be at least 2");
  TORCH_CHECK(options.fusion_levels >= 2, "GO policy: fusion_levels must be at least 2");
  if (options.schedule) {
    priority_ =
        register_module("priority", torch::nn::Linear(options.hidden, options.priority_levels));
  }
  if (options.fuse) {
    fusion_ = register_module("fusion", torch::nn::Linear(options.hidden, options.fusion_levels));
  }
  if (options.task_layers) {
    for (std::size_t i = 0; i < tasks.size(); ++i) {
      task_attention_->push_back(
          SegmentAttentionLayer(options.hidden, options.heads, options.segment_length));
      if (i + 1 < tasks.size()) {
        decision_embedding_->push_back(torch::nn::Linear(
            torch::nn::LinearOptions(task_width(options, tasks[i]), options.hidden).bias(false)));
      }
    }
  }
}

void GoPolicyImpl::reset_heads() {
  torch::NoGradGuard no_grad;
  // Identity modulation at first; training moves it. The placement head keeps a random
  // initialisation, scaled up: devices are interchangeable, so a uniform first policy
  // sits on a saddle where every placement and its device-permuted mirror score alike
  // and the expected policy gradient is zero; near it PPO drifts back to uniform
  // (balance pulls there at first order, co-location pays only at second order). A
  // sharper random start breaks the symmetry and lets PPO improve a coherent placement.
  modulation_->weight.zero_();
  modulation_->bias.zero_();
  placement_->weight.mul_(options.head_init_scale);
  if (!unit_gate_.is_empty()) {
    unit_gate_->weight.zero_();  // every op half its unit's, half its own at first
    unit_gate_->bias.zero_();
  }
}

namespace {

// `logits` plus the optional `prior` of the same shape.
torch::Tensor with_prior(torch::Tensor logits, const torch::Tensor& prior, const char* task) {
  if (!prior.defined()) return logits;
  TORCH_CHECK(prior.sizes() == logits.sizes(), "GO policy: a ", task, " prior of ", prior.sizes(),
              " for logits of ", logits.sizes());
  return logits + prior;
}

}  // namespace

void GoPolicyImpl::zero_head(GoTask task) {
  torch::NoGradGuard no_grad;
  torch::nn::Linear head = task == GoTask::kPlacement    ? placement_
                           : task == GoTask::kScheduling ? priority_
                                                         : fusion_;
  TORCH_CHECK(!head.is_empty(), "GO policy: zero_head of a task the policy does not decide");
  head->weight.zero_();
  if (head->bias.defined()) head->bias.zero_();
}

torch::Tensor GoPolicyImpl::placement_logits(const torch::Tensor& x, const torch::Tensor& masked,
                                             const GraphTensors& g, PolicyOutput& out) {
  auto logits = with_prior(placement_(x), g.placement_prior, "placement");
  if (options.unit_decisions) {
    // The mean over each unit's ops, given back to every op of the unit.
    logits = unit_means(logits, g).index_select(0, g.unit);
  } else if (options.unit_blend < 1.0) {
    const auto means = unit_means(logits, g).index_select(0, g.unit);
    logits = means + options.unit_blend * (logits - means);
  } else if (options.unit_gate) {
    // log(g p_unit + (1 - g) p_own), from log-softmaxes of the masked logits, so that the
    // masked devices keep no probability in either part.
    const auto unit = torch::log_softmax(
        unit_means(logits, g).index_select(0, g.unit).masked_fill(masked, kMaskedLogit), 1);
    const auto own = torch::log_softmax(logits.masked_fill(masked, kMaskedLogit), 1);
    const auto gate = unit_gate_(x);  // [N, 1]
    out.unit_gate = torch::sigmoid(gate.detach()).squeeze(1);
    logits = torch::logsumexp(
        torch::stack({torch::log_sigmoid(gate) + unit, torch::log_sigmoid(-gate) + own}), 0);
  }
  return logits.masked_fill(masked, kMaskedLogit);
}

torch::Tensor GoPolicyImpl::forward_tasks(const torch::Tensor& shared, const torch::Tensor& masked,
                                          const GraphTensors& g, PolicyOutput& out) {
  // Each task's layer reads the previous task's output (residual chain) plus an embedding of
  // the previous task's decision distribution, detached: a later task sees what the earlier
  // ones decide, and each head is trained by its own objective only.
  const auto tasks = enabled_tasks(options);
  torch::Tensor x = shared;
  torch::Tensor previous;  // the previous task's decision distribution
  for (std::size_t i = 0; i < tasks.size(); ++i) {
    torch::Tensor input = x;
    if (previous.defined()) {
      input = input + decision_embedding_[i - 1]->as<torch::nn::Linear>()->forward(previous);
    }
    x = input + task_attention_[i]->as<SegmentAttentionLayer>()->forward(input);
    torch::Tensor logits;
    switch (tasks[i]) {
      case GoTask::kPlacement:
        logits = out.logits = placement_logits(x, masked, g, out);
        break;
      case GoTask::kScheduling:
        logits = out.priority_logits = with_prior(priority_(x), g.priority_prior, "priority");
        break;
      case GoTask::kFusion:
        logits = out.fusion_logits = with_prior(fusion_(x), g.fusion_prior, "fusion");
        break;
    }
    previous = torch::softmax(logits, 1).detach();
  }
  return x;
}

torch::Tensor GoPolicyImpl::attend(torch::Tensor x, const torch::Tensor& graph_embedding) {
  const auto h = options.hidden;
  torch::Tensor film;
  if (options.modulation) film = modulation_(graph_embedding).view({-1, 2, h});
  std::int64_t i = 0;
  for (const auto& layer : *attention_) {
    if (options.modulation) {
      auto gate = 2.0 * torch::sigmoid(film[i][0]);
      x = x * gate + film[i][1];
    }
    x = layer->as<SegmentAttentionLayer>()->forward(x);
    ++i;
  }
  return x;
}

torch::Device GoPolicyImpl::device() const { return parameters().front().device(); }

PolicyOutput GoPolicyImpl::forward(const GraphTensors& g, std::int64_t devices) {
  TORCH_CHECK(devices >= 1 && devices <= options.max_devices, "GO policy: a cluster of ", devices,
              " devices does not fit a policy of at most ", options.max_devices,
              " devices (option max_devices)");
  const torch::Device where = device();
  if (where.is_cpu()) return forward_on(g, devices);
  // On a GPU: the graph's tensors go there once (GraphTensors::on), the outputs come back.
  // The copies are differentiable, so PPO's sampling and objective stay on the CPU as
  // they are and its gradients flow back into the network on the GPU.
  PolicyOutput out = forward_on(g.on(where), devices);
  for (torch::Tensor* t : {&out.logits, &out.priority_logits, &out.fusion_logits, &out.unit_gate,
                           &out.value, &out.embeddings}) {
    if (t->defined()) *t = t->to(torch::kCPU);
  }
  return out;
}

PolicyOutput GoPolicyImpl::forward_on(const GraphTensors& g, std::int64_t devices) {
  PolicyOutput out;
  out.embeddings = encoder_(g);
  auto graph_embedding = pool(out.embeddings);
  auto masked = torch::arange(options.max_devices,
                              torch::TensorOptions(torch::kLong).device(g.kinds.device()))
                    .ge(devices);
  torch::Tensor x;
  for (std::int64_t pass = 0; pass < options.refine_passes; ++pass) {
    auto input = out.embeddings;
    if (pass > 0 && out.logits.defined()) {
      input = input + previous_device_(out.logits.argmax(1).detach());
    }
    x = attend(input, graph_embedding);
    if (options.task_layers) {
      x = forward_tasks(x, masked, g, out);
    } else {
      out.logits = placement_logits(x, masked, g, out);
    }
  }
  // The value head reads detached features: its regression never pulls on the policy.
  out.value = value_out_(torch::relu(value_hidden_(pool(x).detach()))).squeeze();
  return out;
}

}  // namespace gopt::agents::go
