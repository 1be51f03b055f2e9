// RNNLM and GNMT: LSTM stacks unrolled over time at TF 1.x BasicLSTMCell granularity.
#include <string>
#include <vector>

#include "datasets/workloads.h"

namespace gopt::datasets {
namespace {

using core::Shape;

struct LstmState {
  Tensor c;
  Tensor h;
};

struct LstmWeights {
  Tensor kernel;  ///< [input + hidden, 4 * hidden]
  Tensor bias;    ///< [4 * hidden]
};

LstmWeights lstm_weights(TrainingGraphBuilder& b, std::int64_t input, std::int64_t hidden) {
  return {b.variable("kernel", {input + hidden, 4 * hidden}), b.variable("bias", {4 * hidden})};
}

// One step of tf.nn.rnn_cell.BasicLSTMCell: concat, MatMul, BiasAdd, Split into i, j, f, o,
// new_c = c * sigmoid(f + forget_bias) + sigmoid(i) * tanh(j), new_h = tanh(new_c) * sigmoid(o).
LstmState lstm_step(TrainingGraphBuilder& b, const Tensor& x, const LstmState& prev,
                    const LstmWeights& w) {
  Tensor xh = b.concat({x, prev.h}, 1);
  Tensor gates = b.bias_add(b.matmul(xh, w.kernel), w.bias);
  auto ijfo = b.split(gates, 1, 4);
  // One statement per op: argument evaluation order is unspecified, op names must not be.
  Tensor forget = b.sigmoid(b.add_scalar(ijfo[2]));
  Tensor kept = b.mul(prev.c, forget);
  Tensor input_gate = b.sigmoid(ijfo[0]);
  Tensor candidate = b.tanh(ijfo[1]);
  Tensor c = b.add(kept, b.mul(input_gate, candidate));
  Tensor squashed = b.tanh(c);
  Tensor h = b.mul(squashed, b.sigmoid(ijfo[3]));
  return {c, h};
}

std::string step_scope(const std::string& prefix, std::int64_t t) {
  return prefix + "/t_" + std::to_string(t);
}

// Runs one LSTM layer over `inputs` (one [batch, width] tensor per step). Names:
// <prefix>/kernel, <prefix>/t_<step>/...
std::vector<Tensor> lstm_layer(TrainingGraphBuilder& b, const std::string& prefix,
                               std::int32_t layer, const std::vector<Tensor>& inputs,
                               std::int64_t hidden, bool dropout, bool reverse = false) {
  std::int64_t batch = inputs.front().shape[0];
  b.set_scope(prefix, layer);
  LstmWeights w = lstm_weights(b, inputs.front().shape[1], hidden);
  Tensor zeros = b.constant("zero_state", {batch, hidden});
  LstmState state{zeros, zeros};
  std::vector<Tensor> outputs(inputs.size());
  for (std::size_t i = 0; i < inputs.size(); ++i) {
    std::size_t t = reverse ? inputs.size() - 1 - i : i;
    b.set_scope(step_scope(prefix, static_cast<std::int64_t>(t)), layer);
    Tensor x = dropout ? b.dropout(inputs[t]) : inputs[t];
    state = lstm_step(b, x, state, w);
    outputs[t] = state.h;
  }
  return outputs;
}

// Softmax cross-entropy of per-step outputs against labels: stacked into [steps * batch,
// hidden], one projection MatMul and one loss, as TF 1.x seq2seq / PTB models do.
Tensor softmax_loss(TrainingGraphBuilder& b, const std::vector<Tensor>& outputs,
                    std::int64_t vocab) {
  std::int64_t steps = static_cast<std::int64_t>(outputs.size());
  std::int64_t batch = outputs.front().shape[0];
  std::int64_t hidden = outputs.front().shape[1];
  b.set_scope("softmax", -1);
  Tensor stacked = b.concat(outputs, 0);
  Tensor w = b.variable("softmax_w", {hidden, vocab});
  Tensor bias = b.variable("softmax_b", {vocab});
  Tensor logits = b.bias_add(b.matmul(stacked, w), bias);
  Tensor labels = b.input("labels", {steps * batch}, core::DType::kInt32);
  b.set_scope("loss", -1);
  return b.mean(b.sparse_softmax_cross_entropy(logits, labels));
}

// Embedding lookup of a [batch, steps] id matrix, unstacked into per-step [batch, dim].
std::vector<Tensor> embed(TrainingGraphBuilder& b, const std::string& scope, std::int64_t vocab,
                          std::int64_t dim, std::int64_t batch, std::int64_t steps) {
  b.set_scope(scope, -1);
  Tensor ids = b.input("ids", {batch, steps}, core::DType::kInt32);
  Tensor table = b.variable("embedding", {vocab, dim});
  Tensor emb = b.gather(table, ids);  // [batch, steps, dim]
  return b.unstack(emb, 1);
}

void describe(TrainingGraphBuilder& b,
              const std::vector<std::pair<const char*, std::int64_t>>& kv) {
  for (const auto& [k, v] : kv) b.attr(k, std::to_string(v));
}

}  // namespace

core::Graph generate_rnnlm(const RnnlmOptions& o, const std::string& name) {
  TrainingGraphBuilder b(name, "rnnlm", o.optimizer);
  describe(b, {{"layers", o.layers},
               {"hidden", o.hidden},
               {"vocab", o.vocab},
               {"batch", o.batch},
               {"seq_len", o.seq_len}});
  std::vector<Tensor> x = embed(b, "embedding", o.vocab, o.hidden, o.batch, o.seq_len);
  for (std::int64_t l = 0; l < o.layers; ++l) {
    x = lstm_layer(b, "lstm_" + std::to_string(l), static_cast<std::int32_t>(l), x, o.hidden,
                   false);
  }
  Tensor loss = softmax_loss(b, x, o.vocab);
  return std::move(b).finish(loss);
}

namespace {

// Normed-Bahdanau attention of one decoder step: query projection, additive score against
// the precomputed keys, softmax over source positions, context = alignments x memory.
Tensor attention_step(TrainingGraphBuilder& b, const Tensor& query, const Tensor& keys,
                      const Tensor& memory, const Tensor& query_w, const Tensor& v) {
  std::int64_t batch = query.shape[0];
  std::int64_t hidden = query.shape[1];
  std::int64_t src = keys.shape[1];
  Tensor q = b.reshape(b.matmul(query, query_w), {batch, 1, hidden});
  Tensor energy = b.tanh(b.add(keys, q));
  Tensor scores = b.reduce_sum(b.mul(energy, v), 2);  // [batch, src]
  Tensor align = b.reshape(b.softmax(scores), {batch, 1, src});
  Tensor context = b.batch_matmul(align, memory);  // [batch, 1, hidden]
  return b.reshape(context, {batch, hidden});
}

}  // namespace

core::Graph generate_gnmt(const GnmtOptions& o, const std::string& name) {
  TrainingGraphBuilder b(name, "gnmt", o.optimizer);
  describe(b, {{"layers", o.layers},
               {"hidden", o.hidden},
               {"vocab", o.vocab},
               {"batch", o.batch},
               {"src_len", o.src_len},
               {"tgt_len", o.tgt_len},
               {"dropout", o.dropout}});
  const bool drop = o.dropout != 0;
  const std::int64_t h = o.hidden;

  // Encoder: bidirectional bottom layer (layer 0), then unidirectional layers with
  // residual connections from the third layer (index 2) on.
  std::vector<Tensor> src = embed(b, "encoder/embedding", o.vocab, h, o.batch, o.src_len);
  auto fw = lstm_layer(b, "encoder/bi_fw", 0, src, h, drop);
  auto bw = lstm_layer(b, "encoder/bi_bw", 0, src, h, drop, /*reverse=*/true);
  std::vector<Tensor> x(src.size());
  for (std::size_t t = 0; t < src.size(); ++t) {
    b.set_scope(step_scope("encoder/bi_concat", static_cast<std::int64_t>(t)), 0);
    x[t] = b.concat({fw[t], bw[t]}, 1);
  }
  for (std::int64_t l = 1; l < o.layers; ++l) {
    std::string prefix = "encoder/layer_" + std::to_string(l);
    auto y = lstm_layer(b, prefix, static_cast<std::int32_t>(l), x, h, drop);
    if (l >= 2) {
      for (std::size_t t = 0; t < y.size(); ++t) {
        b.set_scope(step_scope(prefix + "/residual", static_cast<std::int64_t>(t)),
                    static_cast<std::int32_t>(l));
        y[t] = b.add(y[t], x[t]);
      }
    }
    x = std::move(y);
  }

  // Attention memory and keys, computed once from the encoder outputs.
  const std::int32_t top = static_cast<std::int32_t>(o.layers - 1);
  b.set_scope("attention", top);
  Tensor memory = b.stack(x, 1);  // [batch, src, hidden]
  Tensor memory_w = b.variable("memory_layer/kernel", {h, h});
  Tensor keys = b.reshape(b.matmul(b.reshape(memory, {o.batch * o.src_len, h}), memory_w),
                          {o.batch, o.src_len, h});
  Tensor query_w = b.variable("query_layer/kernel", {h, h});
  Tensor attention_v = b.variable("attention_v", {h});

  // Decoder: layer 0 reads [embedding; previous context] and queries the attention; every
  // other layer reads [output below; context]. Residual from the third layer on.
  std::vector<Tensor> tgt = embed(b, "decoder/embedding", o.vocab, h, o.batch, o.tgt_len);
  std::vector<LstmWeights> weights;
  std::vector<LstmState> states;
  for (std::int64_t l = 0; l < o.layers; ++l) {
    b.set_scope("decoder/layer_" + std::to_string(l), static_cast<std::int32_t>(l));
    weights.push_back(lstm_weights(b, 2 * h, h));
    Tensor zeros = b.constant("zero_state", {o.batch, h});
    states.push_back({zeros, zeros});
  }
  b.set_scope("decoder/attention", 0);
  Tensor context = b.constant("initial_context", {o.batch, h});
  std::vector<Tensor> outputs;
  outputs.reserve(static_cast<std::size_t>(o.tgt_len));
  for (std::int64_t t = 0; t < o.tgt_len; ++t) {
    Tensor below;
    for (std::int64_t l = 0; l < o.layers; ++l) {
      auto li = static_cast<std::size_t>(l);
      std::string prefix = "decoder/layer_" + std::to_string(l);
      b.set_scope(step_scope(prefix, t), static_cast<std::int32_t>(l));
      Tensor in = l == 0 ? tgt[static_cast<std::size_t>(t)] : below;
      if (drop) in = b.dropout(in);
      Tensor cell_in = b.concat({in, context}, 1);
      // The cell's own concat with h follows inside lstm_step.
      states[li] = lstm_step(b, cell_in, states[li], weights[li]);
      Tensor out = states[li].h;
      if (l >= 2) out = b.add(out, below);
      if (l == 0) {
        b.set_scope(step_scope("decoder/attention", t), 0);
        context = attention_step(b, out, keys, memory, query_w, attention_v);
      }
      below = out;
    }
    outputs.push_back(below);
  }
  Tensor loss = softmax_loss(b, outputs, o.vocab);
  return std::move(b).finish(loss);
}

}  // namespace gopt::datasets
