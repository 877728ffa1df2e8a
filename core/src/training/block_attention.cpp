// The attention part of a transformer block (block_builder.hpp): the norm before it and the
// projections that norm feeds, the head norms, latent attention's projections, the attention
// kernel and what it keeps, LLaMA-Adapter's prompt attention, the output projection and
// cross-attention.

#include <algorithm>
#include <cstdint>
#include <utility>

#include "training/block_activations.hpp"
#include "training/block_builder.hpp"

namespace gpumem {

// 1. The norm before attention; its output feeds the q/k/v projection(s).
// (OLMo 2 has none: the projections read the residual stream.)
void block_builder::attention_norm() {
  if (spec.pre_norms) norm_saves(m, ctx, h, ctx.r, input_saved, th, 1);
  if (input_saved) m.saved.push_back(ctx.r * th * h);
  y1_bytes = spec.pre_norms ? norm_output_bytes(ctx, ctx.r) : ctx.r;
  bool y1_shared = false;
  feed(linear_role::attention_in, y1_bytes, y1_shared);
  if (spec.parallel_block && !spec.parallel_mlp_norm)
    feed(linear_role::mlp_in, y1_bytes, y1_shared);
  if (y1_shared) m.saved.push_back(y1_bytes * th * h);
  if (holds_own_input(ctx, y1_bytes)) m.retained += y1_bytes * th * h;
  // Sequence parallelism all-gathers the full-sequence input of the column-parallel layers.
  if (ctx.config.sequence_parallel) m.transient = std::max(m.transient, y1_bytes * t * h);
}

// Qwen3's and Gemma 3's q_norm and k_norm take each head of the projections' outputs
// (modeling_qwen3.py Qwen3Attention: q_norm(q_proj(x).view(..., head_dim)) before RoPE).
// OLMo 2's span all heads at once: one row a token.
void block_builder::qk_norms() {
  if (spec.qk_norm) {
    const std::uint64_t kv_heads = spec.num_kv_heads / ctx.tp;
    const std::uint64_t q_rows = spec.qk_norm_per_head ? heads : 1;
    const std::uint64_t kv_rows = spec.qk_norm_per_head ? kv_heads : 1;
    for (const auto& [width, rows] : {std::pair{q, q_rows}, std::pair{kv, kv_rows}}) {
      bool kept = false;
      norm_saves(m, ctx, width, c, kept, t, rows);
      if (kept) m.saved.push_back(c * t * width);
    }
  }
}

// Llama 4's RoPE layers L2-normalise each head of the roped q and k in fp32 with no weight
// (Llama4TextL2Norm: x.float() * rsqrt(mean(x^2) + eps), cast back): the fp32 copies and an
// inverse norm a head. (Its complex RoPE and its NoPE layers' temperature scaling multiply by
// constants and keep only those.)
void block_builder::l2_qk_norms() {
  if (spec.layers[static_cast<std::size_t>(layer_index)].l2_qk_norm) {
    const std::uint64_t kv_heads = spec.num_kv_heads / ctx.tp;
    m.saved.push_back(4 * t * (q + kv) + 4 * t * (heads + kv_heads));
  }
}

// DeepSeek's latent attention (DeepseekV3Attention): q_a_proj's and kv_a_proj_with_mqa's
// latents (16-bit outputs) go through their RMSNorms (whose fp32 weight, under autocast, makes
// the output fp32) into q_b_proj and kv_b_proj.
void block_builder::latent_projections() {
  if (spec.mla) {
    const auto& dims = spec.mla_dims;
    for (const auto& [role, width] : {std::pair{linear_role::latent_q, dims.q_lora_rank},
                                      std::pair{linear_role::latent_kv, dims.kv_lora_rank}}) {
      if (width == 0) continue;  // a full-rank q_proj
      bool kept = false;
      norm_saves(m, ctx, width, c, kept, t, 1);
      if (kept) m.saved.push_back(c * t * width);
      bool shared = false;
      feed(role, ctx.r, shared);
      if (shared) m.saved.push_back(ctx.r * t * width);
      if (holds_own_input(ctx, ctx.r)) m.retained += ctx.r * t * width;
    }
  }
}

// 2. Attention. SDPA's fused kernels keep q, k, v, the output and the log-sum-exp. PyTorch
// picks flash for 16-bit inputs and memory-efficient attention for fp32, which does not take
// grouped-query attention (enable_gqa), so fp32 GQA falls back to the math kernel
// (torch/backends/cuda sdp_utils: check_gqa / can_use_mem_efficient_attention), which
// materialises the scores like eager attention does. Eager attention keeps the fp32
// softmax, its 16-bit cast and K/V repeated to all heads.
void block_builder::attention_operands() {
  // Ulysses attends over the whole sequence with heads / cp of the heads; otherwise a rank's
  // queries meet its own tokens' keys (ring attention is refused with eager kernels).
  ulysses = ctx.cp > 1 && ctx.config.cp_kind == context_parallel_kind::ulysses;
  scores = ulysses
               ? ctx.config.micro_batch * (heads / ctx.cp) * ctx.config.seq_len * ctx.config.seq_len
               : ctx.config.micro_batch * heads * ctx.seq * ctx.seq;
  math_sdpa = kernel == attention_kernel::sdpa && !eager && sdpa_math_kernel(spec, c, transformers);
  // A windowed layer's masked SDPA (sdpa_window_mask): the memory-efficient kernel keeps for
  // backward the additive mask it converts the boolean one into, B x s x s in the query's dtype,
  // in every such layer (aten convert_boolean_attn_mask).
  masked_sdpa = transformers && kernel == attention_kernel::sdpa && !eager && !math_sdpa &&
                ctx.cp == 1 &&
                sdpa_window_mask(spec.layers[static_cast<std::size_t>(layer_index)], ctx.seq);
  // litgpt (repeat_interleave) and torchtune (expand + flatten) copy K/V to every query head
  // before SDPA; transformers passes enable_gqa, but only without a mask (use_gqa_in_sdpa) and
  // from 4.54 on torch 2.5 or later, repeating K/V otherwise (litgpt/model.py
  // CausalSelfAttention, torchtune/modules/attention.py MultiHeadAttention, transformers
  // sdpa_attention.py; software_stack::sdpa_repeats_kv).
  const bool transformers_repeats = transformers && kernel == attention_kernel::sdpa && !eager &&
                                    spec.transformers_repeat_kv &&
                                    ctx.config.software.sdpa_repeats_kv();
  expanded_kv = (!transformers || masked_sdpa || transformers_repeats) && kv < q;
  // Latent attention keeps its queries and keys (the rotary part concatenated to each head) and
  // kv_b_proj's whole output, of which the values are a view; its values are v_head_dim wide.
  values = spec.mla ? heads * spec.mla_dims.v_head_dim : q;
  if (spec.mla) {
    m.saved.push_back(
        c * t * (2 * q + heads * (spec.mla_dims.qk_nope_head_dim + spec.mla_dims.v_head_dim)));
  } else {
    m.saved.push_back(c * t * (q + 2 * (expanded_kv ? q : kv)));
  }
  // Values that are a view of a fused q/k/v output keep all of it alive (q + 2 kv), beside the
  // roped q and k counted above as the projections' own outputs: q + kv more, unless K/V were
  // repeated into copies (litgpt/model.py CausalSelfAttention: qkv.split, view, transpose, RoPE
  // concatenated back; transformers modeling_gpt_neox.py, modeling_phi3.py; measured with
  // tools/measure/saved_tensors.py: 6 B*h for the values' storage where separate projections
  // keep 2).
  const bool repeated_kv = expanded_kv || (eager && kv < q);
  const bool fused_values =
      (framework_of(ctx.config).fused_qkv || (transformers && spec.values_view_fused_qkv)) &&
      !spec.mla && !repeated_kv && !math_sdpa;
  if (fused_values) m.saved.push_back(c * t * (q + kv));
}

// The tensors as large as the scores: kept for backward, or under selective recomputation
// (Korthikanti et al. 2022, Megatron-LM --recompute-granularity selective) recomputed in the
// block's backward.
void block_builder::keep_quadratic(std::uint64_t bytes) {
  if (ctx.config.selective_recompute) {
    quadratic += bytes;
  } else {
    m.saved.push_back(bytes);
  }
}

// Eager attention over `elems` scores: the softmax output (fp32 under autocast or when the
// code asks for it, as litgpt's soft cap does) and the 16-bit tensor the product with V keeps:
// the softmax's cast back, or, with attention dropout, dropout's output, whose backward needs
// only its mask (the cast then lives only until dropout has run).
void block_builder::eager_core(std::uint64_t elems) {
  const bool fp32_softmax = ctx.amp || spec.eager_softmax_fp32 || softcap;
  const std::uint64_t probs = fp32_softmax ? 4 : c;
  keep_quadratic(probs * elems);
  if (probs != c && spec.attention_dropout == 0) keep_quadratic(c * elems);
  if (softcap) keep_quadratic(c * elems);                             // tanh keeps its output
  if (spec.attention_dropout > 0) keep_quadratic(elems + c * elems);  // mask + output
  m.transient = std::max(m.transient, 2 * c * elems);                 // scaled and masked scores
}

// What the kernel keeps of the scores.
void block_builder::attention_scores() {
  if (math_sdpa) {
    // In fp32: q and k scaled by sqrt(scale), v (repeated to every head for fp32 GQA; one
    // broadcast head when 16-bit inputs reach the math kernel unexpanded), the softmax output;
    // the scores before it are the transient.
    const bool broadcast = c != 4;
    m.saved.push_back(4 * t * (q + 2 * (broadcast ? kv : q)));
    keep_quadratic(4 * scores);
    if (spec.attention_dropout > 0) keep_quadratic(scores + 4 * scores);  // mask + output
    m.transient = std::max(m.transient, 4 * scores);
  } else if (eager) {
    if (kv < q && !expanded_kv) m.saved.push_back(2 * c * t * q);  // repeat_kv
    eager_core(scores);
  } else {
    m.saved.push_back(c * t * values);  // output
    m.saved.push_back(4 * ctx.config.micro_batch * heads * ctx.seq);
    if (masked_sdpa) m.saved.push_back(c * ctx.config.micro_batch * ctx.seq * ctx.seq);
  }
  m.masked_attention = masked_sdpa;
}

// LLaMA-Adapter's blocks from adapter_start_layer on.
void block_builder::prompt_attention() {
  const bool adapter_block =
      (ctx.config.finetune == finetune_kind::llama_adapter_v1 ||
       ctx.config.finetune == finetune_kind::llama_adapter_v2) &&
      static_cast<std::uint64_t>(layer_index) >= ctx.config.adapter_start_layer;
  if (adapter_block) {
    // LLaMA-Adapter: a second SDPA of the queries over the prompt's keys and values; its output
    // (kept by the kernel and by the gate's product) and log-sum-exp. The prompt's own q/k/v
    // are adapter_prompt_length rows.
    m.saved.push_back(c * t * q);
    m.saved.push_back(4 * ctx.config.micro_batch * heads * ctx.seq);
  }
}

// 3. Output projection (reads the attention output, made contiguous).
void block_builder::output_projection() {
  bool o_shared = false;
  feed(linear_role::attention_out, c, o_shared);
  if (o_shared) m.saved.push_back(c * t * values);
  if (ctx.base_keeps_input) m.retained += c * t * values;
}

// 3b. Cross-attention (T5LayerCrossAttention): a norm; queries from it, keys and values from
// the encoder's output (the memory, B x s_enc tokens); eager scores over the encoder's
// positions (their position bias is the step's); the output projection.
void block_builder::cross_attention() {
  if (layer.cross_attention) {
    bool x_saved = false;
    norm_saves(m, ctx, h, ctx.r, x_saved, th, 1);
    if (x_saved) m.saved.push_back(ctx.r * th * h);
    const std::uint64_t x_bytes = norm_output_bytes(ctx, ctx.r);
    bool xq_shared = false;
    feed(linear_role::cross_query, x_bytes, xq_shared);
    if (xq_shared) m.saved.push_back(x_bytes * th * h);
    if (holds_own_input(ctx, x_bytes)) m.retained += x_bytes * th * h;
    step_context memory = ctx;
    memory.seq = ctx.memory_seq;
    memory.tokens = ctx.memory_tokens;
    memory.h_tokens = ctx.memory_tokens;
    feed_over(memory, linear_role::cross_memory, x_bytes, m.keeps_memory);
    m.saved.push_back(c * (t * q + 2 * ctx.memory_tokens * kv));  // its q, k and v
    eager_core(ctx.config.micro_batch * heads * ctx.seq * ctx.memory_seq);
    bool xo_shared = false;
    feed(linear_role::cross_out, c, xo_shared);
    if (xo_shared) m.saved.push_back(c * t * q);
    if (ctx.base_keeps_input) m.retained += c * t * q;
  }
}

}  // namespace gpumem
