// Transformer-XL at the op granularity of the authors' TF 1.x code (kimiyoung/transformer-xl,
// tf/model.py): relative multi-head attention with rel_shift, feed-forward, layer norm.
#include <cmath>
#include <string>

#include "datasets/workloads.h"

namespace gopt::datasets {

core::Graph generate_transformer_xl(const TransformerXlOptions& o, const std::string& name) {
  TrainingGraphBuilder b(name, "transformer_xl", o.optimizer);
  for (const auto& [k, v] :
       std::initializer_list<std::pair<const char*, std::int64_t>>{{"layers", o.layers},
                                                                   {"d_model", o.d_model},
                                                                   {"heads", o.heads},
                                                                   {"d_head", o.d_head},
                                                                   {"d_inner", o.d_inner},
                                                                   {"seg_len", o.seg_len},
                                                                   {"mem_len", o.mem_len},
                                                                   {"batch", o.batch},
                                                                   {"vocab", o.vocab}}) {
    b.attr(k, std::to_string(v));
  }
  const std::int64_t B = o.batch, T = o.seg_len, M = o.mem_len, K = o.mem_len + o.seg_len;
  const std::int64_t D = o.d_model, H = o.heads, Dh = o.d_head;

  b.set_scope("transformer/adaptive_embed", -1);
  Tensor ids = b.input("ids", {B, T}, core::DType::kInt32);
  Tensor table = b.variable("lookup_table", {o.vocab, D});
  Tensor h = b.mul_scalar(b.gather(table, ids));  // [B, T, D], scaled by sqrt(d_model)
  b.set_scope("transformer", -1);
  Tensor pos_emb = b.constant("pos_emb", {K, D});
  Tensor attn_mask = b.constant("attn_mask", {T, K});

  for (std::int64_t l = 0; l < o.layers; ++l) {
    const auto layer = static_cast<std::int32_t>(l);
    const std::string prefix = "transformer/layer_" + std::to_string(l);
    b.set_scope(prefix + "/rel_attn", layer);
    Tensor mem = b.input("mems", {B, M, D});              // the previous segment's hidden states
    Tensor cat = b.concat({b.stop_gradient(mem), h}, 1);  // [B, K, D]
    Tensor wq = b.variable("q/kernel", {D, H * Dh});
    Tensor wk = b.variable("k/kernel", {D, H * Dh});
    Tensor wv = b.variable("v/kernel", {D, H * Dh});
    Tensor wr = b.variable("r/kernel", {D, H * Dh});
    Tensor wo = b.variable("o/kernel", {H * Dh, D});
    Tensor r_w_bias = b.variable("r_w_bias", {H, Dh});
    Tensor r_r_bias = b.variable("r_r_bias", {H, Dh});

    Tensor cat_flat = b.reshape(cat, {B * K, D});
    Tensor q = b.reshape(b.matmul(b.reshape(h, {B * T, D}), wq), {B, T, H, Dh});
    Tensor k = b.transpose(b.reshape(b.matmul(cat_flat, wk), {B, K, H, Dh}), {0, 2, 1, 3});
    Tensor v = b.transpose(b.reshape(b.matmul(cat_flat, wv), {B, K, H, Dh}), {0, 2, 1, 3});
    Tensor r = b.transpose(b.reshape(b.matmul(pos_emb, wr), {K, H, Dh}), {1, 0, 2});  // [H,K,Dh]

    // Content term AC and position term BD (with the relative shift), as einsums in TF.
    Tensor rw_q = b.transpose(b.add(q, r_w_bias), {0, 2, 1, 3});                  // [B, H, T, Dh]
    Tensor ac = b.batch_matmul(rw_q, k, false, true);                             // [B, H, T, K]
    Tensor rr_q = b.transpose(b.add(q, r_r_bias), {2, 0, 1, 3});                  // [H, B, T, Dh]
    Tensor bd = b.batch_matmul(b.reshape(rr_q, {H, B * T, Dh}), r, false, true);  // [H,BT,K]
    bd = b.transpose(b.reshape(bd, {H, B, T, K}), {1, 0, 2, 3});                  // [B, H, T, K]
    bd = b.pad(bd, {{0, 0}, {0, 0}, {0, 0}, {1, 0}});
    bd = b.reshape(b.slice(b.reshape(bd, {B, H, K + 1, T}), {B, H, K, T}), {B, H, T, K});

    Tensor score = b.mul_scalar(b.add(ac, bd));
    Tensor prob = b.softmax(b.sub(score, attn_mask));
    Tensor attn = b.batch_matmul(prob, v);  // [B, H, T, Dh]
    attn = b.reshape(b.transpose(attn, {0, 2, 1, 3}), {B * T, H * Dh});
    Tensor attn_out = b.matmul(attn, wo);
    Tensor ln_g = b.variable("LayerNorm/gamma", {D});
    Tensor ln_b = b.variable("LayerNorm/beta", {D});
    Tensor x = b.layer_norm(b.add(attn_out, b.reshape(h, {B * T, D})), ln_g, ln_b);

    b.set_scope(prefix + "/ff", layer);
    Tensor w1 = b.variable("layer_1/kernel", {D, o.d_inner});
    Tensor b1 = b.variable("layer_1/bias", {o.d_inner});
    Tensor w2 = b.variable("layer_2/kernel", {o.d_inner, D});
    Tensor b2 = b.variable("layer_2/bias", {D});
    Tensor ff = b.relu(b.bias_add(b.matmul(x, w1), b1));
    ff = b.bias_add(b.matmul(ff, w2), b2);
    Tensor ff_g = b.variable("LayerNorm/gamma", {D});
    Tensor ff_b = b.variable("LayerNorm/beta", {D});
    Tensor y = b.layer_norm(b.add(ff, x), ff_g, ff_b);
    h = b.reshape(y, {B, T, D});
  }

  b.set_scope("transformer/softmax", -1);
  Tensor w = b.variable("weight", {D, o.vocab});
  Tensor bias = b.variable("bias", {o.vocab});
  Tensor logits = b.bias_add(b.matmul(b.reshape(h, {B * T, D}), w), bias);
  Tensor labels = b.input("labels", {B * T}, core::DType::kInt32);
  b.set_scope("loss", -1);
  Tensor loss = b.mean(b.sparse_softmax_cross_entropy(logits, labels));
  return std::move(b).finish(loss);
}

}  // namespace gopt::datasets
