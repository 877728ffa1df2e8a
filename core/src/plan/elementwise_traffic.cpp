#include "gpumem/plan/elementwise_traffic.hpp"

namespace gpumem {

namespace {

// Bytes per element of one norm over activations of `bytes` each. transformers' RMSNorm (Llama's
// and its copies, models/llama/modeling_llama.py LlamaRMSNorm) runs five kernels in fp32: the
// upcast (when the input is 16-bit), pow(2), mean, the product with rsqrt, the downcast, then the
// product with its weight: 36 bytes an element from 16 bits, 28 from fp32. LayerNorm is one
// kernel (torch.nn.functional.layer_norm): its input read, its output written.
double norm_bytes(norm_kind kind, double bytes) {
  if (kind == norm_kind::layer_norm) return 2.0 * bytes;
  const double casts = bytes < 4.0 ? (bytes + 4.0) + (4.0 + bytes) : 0.0;
  return casts + 8.0 + 4.0 + 8.0 + 2.0 * bytes;
}

// Bytes per element of the MLP's activation: a gated MLP's act(gate) and its product with up
// (two kernels: one read and one write, then two reads and a write); the tanh GELU that
// transformers writes out in Python (gelu_new, gelu_fast; BLOOM's bloom_gelu) runs about eight
// elementwise kernels (activations.py NewGELUActivation: pow, three products, two sums, tanh);
// any other activation is one kernel.
double activation_bytes(const model_spec& spec, double bytes) {
  if (spec.gated_mlp) return 5.0 * bytes;
  const std::string& act = spec.activation;
  if (act == "gelu_new" || act == "gelu_fast" || act == "bloom_gelu") return 16.0 * bytes;
  return 2.0 * bytes;
}

// Rotary position embeddings (no learned position table; BLOOM's ALiBi, T5's and BERT's
// positions excepted): q * cos + rotate_half(q) * sin for queries and keys, five kernels
// (models/llama/modeling_llama.py apply_rotary_pos_emb, rotate_half's negation and cat).
bool rotary(const model_spec& spec, bool learned_positions) {
  return !learned_positions && !spec.alibi && !spec.encoder_decoder && spec.causal;
}

// The width of the MLP a token runs through in this block: the dense MLP, or its top-k experts
// and any shared expert.
double mlp_width(const model_spec& spec, const layer_spec& layer) {
  if (layer.moe) {
    return static_cast<double>(spec.moe.experts_run() * spec.moe.expert_intermediate +
                               spec.moe.shared_intermediate);
  }
  return static_cast<double>(layer.mlp_intermediate > 0 ? layer.mlp_intermediate
                                                        : spec.intermediate_size);
}

}  // namespace

double block_traffic_per_token(const model_spec& spec, const activation_dtypes& dtypes,
                               bool learned_positions) {
  const double a = dtypes.activation;
  const double r = dtypes.residual;
  const double h = static_cast<double>(spec.hidden_size);
  const double q = static_cast<double>(spec.num_heads * spec.head_dim);
  const double kv = static_cast<double>(spec.num_kv_heads * spec.head_dim);
  const double out =
      static_cast<double>(spec.num_heads * (spec.v_head_dim > 0 ? spec.v_head_dim : spec.head_dim));
  const bool rope = rotary(spec, learned_positions);
  double norms = 0;
  if (spec.pre_norms) norms += spec.parallel_block && !spec.parallel_mlp_norm ? 1.0 : 2.0;
  if (spec.post_norms) norms += 2.0;
  // The block's fixed kernels, per token: its norms; two residual adds (two reads and a write
  // each); the attention output's copy back to (tokens, heads x dim) (transpose().contiguous()
  // before o_proj); dropout on both branches (the input read, the output and its mask written);
  // under autocast each projection's fp32 input cast to 16 bits (four or five projections read
  // the normed stream).
  double per_block = norms * norm_bytes(spec.norm, r) * h + 2.0 * 3.0 * r * h + 2.0 * a * out;
  if (spec.qk_norm) per_block += norm_bytes(norm_kind::rms_norm, a) * (q + kv);
  if (rope) per_block += 10.0 * a * (q + kv);
  if (spec.hidden_dropout > 0) per_block += 2.0 * (2.0 * r + 1.0) * h;
  if (dtypes.casts()) per_block += (spec.gated_mlp ? 5.0 : 3.0) * (r + a) * h;
  double bytes = 0;
  for (const auto& layer : spec.layers)
    bytes += per_block + activation_bytes(spec, a) * mlp_width(spec, layer);
  return bytes;
}

double loss_traffic_per_token(const model_spec& spec, const activation_dtypes& dtypes) {
  const double a = dtypes.activation;
  const double casts = a < 4.0 ? (a + 4.0) + (4.0 + a) : 0.0;
  // log_softmax reads and writes fp32 logits; its backward reads the gradient and the output and
  // writes the logits' gradient.
  return static_cast<double>(spec.vocab_size) * (casts + 8.0 + 12.0);
}

}  // namespace gpumem
