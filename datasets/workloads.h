// The workload generators behind the suite: one options struct per model family (the
// defaults, in exactly one place, follow the original models; see docs/workloads.md for
// their sources) and one function that writes the training-step graph. The registry
// (workload_registry.h) maps `--set key=value` onto these fields.
//
//   core::Graph g = generate_gnmt(GnmtOptions().with_layers(4), "gnmt_4");
#pragma once

#include <cstdint>
#include <string>

#include "core/graph.h"
#include "core/options.h"
#include "datasets/training_graph_builder.h"

namespace gopt::datasets {

/// RNN language model (Jozefowicz et al. 2016, as placed by HDP): embedding, a stack of
/// LSTM layers unrolled over `seq_len` steps, a full softmax over the vocabulary.
struct RnnlmOptions {
  GOPT_OPTION(std::int64_t, layers, 2)     ///< LSTM layers
  GOPT_OPTION(std::int64_t, hidden, 2048)  ///< LSTM units per layer (= embedding width)
  GOPT_OPTION(std::int64_t, vocab, 40000)  ///< vocabulary (softmax classes)
  GOPT_OPTION(std::int64_t, batch, 64)     ///< sequences per step
  GOPT_OPTION(std::int64_t, seq_len, 40)   ///< unrolled time steps
  GOPT_OPTION(Optimizer, optimizer, Optimizer::kAdam)
};

/// GNMT (Wu et al. 2016): `layers` encoder LSTM layers (the first bidirectional) and
/// `layers` decoder layers with normed-Bahdanau attention fed to every decoder layer,
/// residual connections from the third layer on, dropout on layer inputs.
struct GnmtOptions {
  GOPT_OPTION(std::int64_t, layers, 8)     ///< encoder layers = decoder layers
  GOPT_OPTION(std::int64_t, hidden, 1024)  ///< LSTM units (= embedding width)
  GOPT_OPTION(std::int64_t, vocab, 32000)  ///< shared source/target wordpiece vocabulary
  GOPT_OPTION(std::int64_t, batch, 128)    ///< sentence pairs per step
  GOPT_OPTION(std::int64_t, src_len, 50)   ///< encoder time steps
  GOPT_OPTION(std::int64_t, tgt_len, 50)   ///< decoder time steps
  GOPT_OPTION(std::int64_t, dropout, 1)    ///< 1: dropout on LSTM inputs, 0: none
  GOPT_OPTION(Optimizer, optimizer, Optimizer::kAdam)
};

/// Transformer-XL (Dai et al. 2019) language model: per layer, relative-position multi-head
/// attention over [memory; segment] and a position-wise feed-forward block.
struct TransformerXlOptions {
  GOPT_OPTION(std::int64_t, layers, 4)
  GOPT_OPTION(std::int64_t, d_model, 512)   ///< model width
  GOPT_OPTION(std::int64_t, heads, 8)       ///< attention heads
  GOPT_OPTION(std::int64_t, d_head, 64)     ///< width per head
  GOPT_OPTION(std::int64_t, d_inner, 2048)  ///< feed-forward width
  GOPT_OPTION(std::int64_t, seg_len, 128)   ///< tokens per segment (tgt_len)
  GOPT_OPTION(std::int64_t, mem_len, 128)   ///< cached tokens from the previous segment
  GOPT_OPTION(std::int64_t, batch, 16)
  GOPT_OPTION(std::int64_t, vocab, 32000)
  GOPT_OPTION(Optimizer, optimizer, Optimizer::kAdam)
};

/// Inception-v3 (Szegedy et al. 2016) as in TF-slim: stem, Mixed_5b..7c, logits.
struct InceptionV3Options {
  GOPT_OPTION(std::int64_t, batch, 32)
  GOPT_OPTION(std::int64_t, image, 299)  ///< input height = width, pixels
  GOPT_OPTION(std::int64_t, classes, 1001)
  GOPT_OPTION(Optimizer, optimizer, Optimizer::kAdam)
};

/// AmoebaNet-A (Real et al. 2019), cells as in tensorflow/tpu's amoeba_net model_specs:
/// three stacks of `cells` normal cells separated by reduction cells; filters double at
/// each reduction.
struct AmoebaNetOptions {
  GOPT_OPTION(std::int64_t, batch, 16)
  GOPT_OPTION(std::int64_t, image, 331)
  GOPT_OPTION(std::int64_t, cells, 6)      ///< normal cells per stack (N)
  GOPT_OPTION(std::int64_t, filters, 190)  ///< filters of the first stack (F)
  GOPT_OPTION(std::int64_t, classes, 1001)
  GOPT_OPTION(Optimizer, optimizer, Optimizer::kAdam)
};

/// WaveNet (van den Oord et al. 2016) as in ibab/tensorflow-wavenet: `stacks` stacks of
/// dilated causal convolutions (dilations 1, 2, ..., 2^(layers_per_stack-1)) with gated
/// activations, residual and skip 1x1 convolutions, softmax over quantised samples.
struct WavenetOptions {
  GOPT_OPTION(std::int64_t, stacks, 2)
  GOPT_OPTION(std::int64_t, layers_per_stack, 10)
  GOPT_OPTION(std::int64_t, residual_channels, 32)
  GOPT_OPTION(std::int64_t, dilation_channels, 32)
  GOPT_OPTION(std::int64_t, skip_channels, 512)
  GOPT_OPTION(std::int64_t, quantization, 256)  ///< mu-law levels (softmax classes)
  GOPT_OPTION(std::int64_t, batch, 1)
  GOPT_OPTION(std::int64_t, samples, 100000)  ///< audio samples per example
  GOPT_OPTION(Optimizer, optimizer, Optimizer::kAdam)
};

#undef GOPT_OPTION

[[nodiscard]] core::Graph generate_rnnlm(const RnnlmOptions& options, const std::string& name);
[[nodiscard]] core::Graph generate_gnmt(const GnmtOptions& options, const std::string& name);
[[nodiscard]] core::Graph generate_transformer_xl(const TransformerXlOptions& options,
                                                  const std::string& name);
[[nodiscard]] core::Graph generate_inception_v3(const InceptionV3Options& options,
                                                const std::string& name);
[[nodiscard]] core::Graph generate_amoebanet(const AmoebaNetOptions& options,
                                             const std::string& name);
[[nodiscard]] core::Graph generate_wavenet(const WavenetOptions& options, const std::string& name);

}  // namespace gopt::datasets
