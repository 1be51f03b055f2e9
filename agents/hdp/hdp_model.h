// The two networks of Hierarchical Device Placement (Mirhoseini et al., "A Hierarchical
// Model for Device Placement", ICLR 2018), in LibTorch:
// - the Grouper, a feed-forward network from per-op features to a softmax over groups;
// - the Placer, a sequence-to-sequence network over group embeddings: a bidirectional LSTM
//   encoder and an LSTM decoder with content-based (Bahdanau) attention that emits one
//   device per group.
#pragma once

#include <torch/torch.h>

#include <cstdint>

#include "core/options.h"

namespace gopt::agents::hdp {

/// Options of the Grouper; defaults from the HDP paper (hidden size 64).
struct GrouperOptions {
  GrouperOptions(std::int64_t features, std::int64_t group_count)
      : in_features(features), groups(group_count) {}
  GOPT_OPTION(std::int64_t, in_features, 0)
  GOPT_OPTION(std::int64_t, groups, 0)
  GOPT_OPTION(std::int64_t, hidden, 64)
};

/// op features [N, in_features] -> group logits [N, groups].
class GrouperImpl : public torch::nn::Module {
 public:
  explicit GrouperImpl(const GrouperOptions& options);
  void reset();
  torch::Tensor forward(const torch::Tensor& features);

  GrouperOptions options;

 private:
  torch::nn::Linear hidden_{nullptr};
  torch::nn::Linear out_{nullptr};
};
TORCH_MODULE(Grouper);

/// Options of the Placer.
struct PlacerOptions {
  PlacerOptions(std::int64_t features, std::int64_t device_count)
      : in_features(features), devices(device_count) {}
  GOPT_OPTION(std::int64_t, in_features, 0)  ///< size of one group embedding
  GOPT_OPTION(std::int64_t, devices, 0)
  GOPT_OPTION(std::int64_t, hidden, 128)  ///< decoder LSTM size (encoder: half per direction)
  GOPT_OPTION(std::int64_t, device_embedding, 32)  ///< embedding of the previous decision
  /// Logits become tanh_constant x tanh(logits) when > 0 (grappler's tanh_constant).
  GOPT_OPTION(double, tanh_constant, 0)
};

/// What one decoding pass produces, for a batch of K group sequences.
struct PlacerOutput {
  torch::Tensor devices;   ///< [K, G] int64: the device chosen for each group
  torch::Tensor log_prob;  ///< [K]: sum over groups of log p(chosen device)
};

class PlacerImpl : public torch::nn::Module {
 public:
  explicit PlacerImpl(const PlacerOptions& options);
  void reset();

  /// Decodes a device per group. `groups` is [G, K, in_features] (sequence first).
  /// `choose(step_logits [K, D])` returns the chosen devices [K] (int64): sampling or argmax.
  template <typename Choose>
  PlacerOutput forward(const torch::Tensor& groups, Choose&& choose);

  PlacerOptions options;

 private:
  torch::Tensor attend(const torch::Tensor& encoded_proj, const torch::Tensor& encoded,
                       const torch::Tensor& h);

  torch::nn::LSTM encoder_{nullptr};
  torch::nn::LSTMCell decoder_{nullptr};
  torch::nn::Embedding device_embedding_{nullptr};
  torch::nn::Linear attn_encoded_{nullptr};
  torch::nn::Linear attn_decoder_{nullptr};
  torch::nn::Linear attn_v_{nullptr};
  torch::nn::Linear out_{nullptr};
};
TORCH_MODULE(Placer);

template <typename Choose>
PlacerOutput PlacerImpl::forward(const torch::Tensor& groups, Choose&& choose) {
  const auto num_groups = groups.size(0);
  const auto batch = groups.size(1);
  auto encoded = std::get<0>(encoder_->forward(groups));  // [G, K, hidden]
  auto encoded_proj = attn_encoded_->forward(encoded);    // [G, K, hidden]
  auto h = torch::zeros({batch, options.hidden});
  auto c = torch::zeros({batch, options.hidden});
  // Decoding starts from a reserved "no device yet" embedding (index = devices).
  auto previous = torch::full({batch}, options.devices, torch::kLong);
  std::vector<torch::Tensor> chosen;
  std::vector<torch::Tensor> log_probs;
  chosen.reserve(static_cast<std::size_t>(num_groups));
  log_probs.reserve(static_cast<std::size_t>(num_groups));
  for (std::int64_t g = 0; g < num_groups; ++g) {
    auto input = torch::cat({device_embedding_->forward(previous), encoded[g]}, 1);
    std::tie(h, c) = decoder_->forward(input, std::make_tuple(h, c));
    auto context = attend(encoded_proj, encoded, h);
    auto logits = out_->forward(torch::cat({h, context}, 1));  // [K, D]
    if (options.tanh_constant > 0) logits = options.tanh_constant * torch::tanh(logits);
    auto devices = choose(logits);  // [K]
    log_probs.push_back(torch::log_softmax(logits, 1).gather(1, devices.unsqueeze(1)).squeeze(1));
    chosen.push_back(devices);
    previous = devices;
  }
  return {torch::stack(chosen, 1), torch::stack(log_probs, 1).sum(1)};
}

}  // namespace gopt::agents::hdp
