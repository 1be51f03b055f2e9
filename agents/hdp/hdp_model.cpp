#include "agents/hdp/hdp_model.h"

namespace gopt::agents::hdp {

GrouperImpl::GrouperImpl(const GrouperOptions& options_) : options(options_) { reset(); }

void GrouperImpl::reset() {
  hidden_ = register_module("hidden", torch::nn::Linear(options.in_features, options.hidden));
  out_ = register_module("out", torch::nn::Linear(options.hidden, options.groups));
}

torch::Tensor GrouperImpl::forward(const torch::Tensor& features) {
  return out_->forward(torch::relu(hidden_->forward(features)));
}

PlacerImpl::PlacerImpl(const PlacerOptions& options_) : options(options_) { reset(); }

void PlacerImpl::reset() {
  const auto hidden = options.hidden;
  encoder_ = register_module(
      "encoder",
      torch::nn::LSTM(torch::nn::LSTMOptions(options.in_features, hidden / 2).bidirectional(true)));
  decoder_ =
      register_module("decoder", torch::nn::LSTMCell(options.device_embedding + hidden, hidden));
  device_embedding_ = register_module(
      "device_embedding", torch::nn::Embedding(options.devices + 1, options.device_embedding));
  attn_encoded_ = register_module("attn_encoded", torch::nn::Linear(hidden, hidden));
  attn_decoder_ = register_module("attn_decoder", torch::nn::Linear(hidden, hidden));
  attn_v_ =
      register_module("attn_v", torch::nn::Linear(torch::nn::LinearOptions(hidden, 1).bias(false)));
  out_ = register_module("out", torch::nn::Linear(2 * hidden, options.devices));
}

torch::Tensor PlacerImpl::attend(const torch::Tensor& encoded_proj, const torch::Tensor& encoded,
                                 const torch::Tensor& h) {
  // score[g, k] = v . tanh(W_e enc[g, k] + W_d h[k]); context[k] = sum_g softmax_g(score) enc.
  auto scores = attn_v_->forward(torch::tanh(encoded_proj + attn_decoder_->forward(h).unsqueeze(0)))
                    .squeeze(2);                   // [G, K]
  auto weights = torch::softmax(scores, 0);        // over groups
  return (weights.unsqueeze(2) * encoded).sum(0);  // [K, hidden]
}

}  // namespace gopt::agents::hdp
