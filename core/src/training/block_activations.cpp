#include "training/block_activations.hpp"

#include <algorithm>
#include <utility>

#include "training/adapter_targets.hpp"
#include "training/block_builder.hpp"

namespace gpumem {

// Whether a quantised base linear holds the very tensor it reads in bitsandbytes' ctx.tensors
// (see linear_input): MatMul8bitLt always, MatMul4Bit when its input needed no cast.
bool holds_own_input(const step_context& ctx, std::uint64_t input_bytes) {
  return ctx.base_keeps_input && (ctx.int8_base || input_bytes == ctx.c);
}

namespace {

// The input a linear keeps for its weight gradient (autograd saves what the backward of the
// trainable operands needs; aten mm: the input only when the weight requires grad).
// `elems` is the size of the input this rank keeps, `input_bytes` its element size.
// `own_dropout`: the adapter drops its input out itself (litgpt's fused q/k/v adapters share
// one dropout).
void linear_input(block_memory& m, const step_context& ctx, std::uint64_t elems,
                  std::uint64_t input_bytes, bool trainable, bool adapter, bool own_dropout,
                  bool& shared_saved) {
  // bitsandbytes MatMul4Bit before 0.45 keeps its input whenever the input needs a gradient,
  // frozen weight or not (bitsandbytes autograd/_functions.py MatMul4Bit.forward: ctx.tensors =
  // (A, B); 0.45 keeps (None, B): step_context::base_keeps_input); an input in another dtype
  // than the compute one is cast first, a copy per call (bitsandbytes/nn/modules.py
  // Linear4bit.forward). MatMul8bitLt keeps the input it was handed,
  // uncast, with its outlier columns (few; not counted): ctx.tensors = (CAt, subA, A), CAt only
  // for a trained weight (bitsandbytes >= 0.45; earlier versions also kept an int8 copy CAt of
  // every input, not modelled). It quantises an fp16 copy of the input into int8 codes for the
  // matmul, transients.
  if (ctx.int8_base) m.transient = std::max(m.transient, elems * (input_bytes == 2 ? 1 : 3));
  if (ctx.base_keeps_input) {
    if (holds_own_input(ctx, input_bytes)) {
      shared_saved = true;
    } else {
      m.saved.push_back(elems * ctx.c);
      m.retained += elems * ctx.c;
    }
  } else if (ctx.quantized && input_bytes != ctx.c) {
    // bitsandbytes >= 0.45 keeps no input (ctx.tensors = (None, B)): the cast copy lives for
    // the matmul only.
    m.transient = std::max(m.transient, elems * ctx.c);
  }
  if (trainable) {
    if (ctx.amp && input_bytes != ctx.c) {
      m.saved.push_back(elems * ctx.c);  // autocast casts the input for every linear separately
    } else {
      shared_saved = true;  // the activation itself, counted once by the caller
    }
  }
  if (adapter) {
    // What lora_A reads: PEFT casts the input to the adapter dtype first (_cast_input_dtype: a
    // copy when they differ; litgpt and torchtune do not cast), and drops it out when
    // lora_dropout > 0 — each adapter with a dropout of its own, litgpt's fused q/k/v adapters
    // with one — keeping the mask (1 byte an element) and handing lora_A the copy (PEFT
    // tuners/lora/layer.py Linear.forward: lora_B(lora_A(dropout(x))); litgpt/lora.py,
    // torchtune modules/peft/lora.py). Under autocast lora_A keeps a 16-bit cast of a wider
    // input (PEFT 0.12's fp32 adapters), and the wider copies live for the matmul only.
    const std::uint64_t read_bytes =
        framework_of(ctx.config).peft ? ctx.adapter_bytes : input_bytes;
    const bool cast = ctx.amp && read_bytes != ctx.c;  // autocast's copy is what lora_A keeps
    if (read_bytes != input_bytes && cast) m.transient = std::max(m.transient, elems * read_bytes);
    if (lora_dropout_of(ctx.config) > 0) {
      if (own_dropout) {
        m.saved.push_back(elems + elems * (cast ? ctx.c : read_bytes));
        // The wider dropped-out copy (beside PEFT's cast it was made from) until lora_A's cast.
        if (cast)
          m.transient =
              std::max(m.transient, elems * read_bytes * (read_bytes != input_bytes ? 2 : 1));
      }
    } else if (cast || read_bytes != input_bytes) {
      m.saved.push_back(elems * (cast ? ctx.c : read_bytes));
    } else {
      shared_saved = true;  // lora_A reads the input itself
    }
    m.saved.push_back(ctx.tokens * ctx.config.lora_rank * ctx.c);
  }
}

}  // namespace

namespace {

// What DoRA adds to an adapted linear (PEFT tuners/lora/dora.py DoraLinearLayer.forward, the
// input already cast to the adapter dtype a). Every forward rebuilds the weight's column norms:
// an in x in identity pushed through lora_A and lora_B gives the 16-bit lora_weight; the base
// weight is converted to dtype a (a copy when it is stored otherwise; a 4-bit one is dequantised
// first); scaling x lora_weight and the sum (dtype max(a, c)) are alive with them. The output
// (mag_norm_scale - 1) x base_result + mag_norm_scale x lora_result x scaling keeps base_result
// and lora_result (both 16-bit under autocast) for the magnitude's gradient; its products,
// promoted to dtype max(a, c), exist for the [tokens, out] result and again in backward.
void dora_terms(block_memory& m, const step_context& ctx, const tensor_spec& w) {
  const std::uint64_t c = ctx.c;
  const std::uint64_t a = ctx.adapter_bytes;
  const std::uint64_t p = std::max(a, c);
  const std::uint64_t in = local_in(w, ctx.tp);
  const std::uint64_t out = local_out(w, ctx.tp);
  const std::uint64_t weight = tensor_parallel_numel(w, ctx.tp);
  std::uint64_t rebuild = in * in * a + in * ctx.config.lora_rank * c + weight * (c + c + p);
  if (ctx.amp && a != c) rebuild += in * in * c;  // autocast's 16-bit cast of the identity
  // The dequantised weight before .to(a): 16-bit from 4 bits, fp32 from int8 (PEFT
  // dequantize_bnb_weight: bitsandbytes int8_vectorwise_dequant multiplies by the fp32 SCB).
  if (ctx.quantized) rebuild += weight * (ctx.int8_base ? 4 : c);
  if (ctx.quantized || ctx.r != a) rebuild += weight * a;  // ctx.r: the stored base dtype
  m.transient = std::max(m.transient, rebuild);
  m.saved.push_back(2 * ctx.tokens * out * c);
  m.transient = std::max(m.transient, 3 * ctx.tokens * out * p);
  m.adapter_backward = std::max(m.adapter_backward, 2 * ctx.tokens * out * p);
}

}  // namespace

// Norm saves over `rows` rows of `width` / `rows` per token (one row a token for the hidden
// norms, one a head for Qwen3's and Gemma 3's q_norm and k_norm). RMSNorm (LlamaRMSNorm): the
// fp32 input, rsqrt per row, and (when its weight trains) the normalised input — in the input
// dtype where the weight multiplies after the cast back, in fp32 where it multiplies before
// (litgpt's RMSNorm, GemmaRMSNorm's output * (1 + weight.float())). LayerNorm
// (native_layer_norm): the input, mean and rstd per row; under autocast, which runs layer_norm in
// fp32, the input it keeps is a 16-bit input's fp32 copy, one per call (measured with
// tools/measure/saved_tensors.py: 4 B*h for each of GPT-NeoX's two norms of a bf16 input).
void norm_saves(block_memory& m, const step_context& ctx, std::uint64_t width,
                std::uint64_t input_bytes, bool& input_saved, std::uint64_t tokens,
                std::uint64_t rows) {
  const std::uint64_t t = tokens;
  if (ctx.spec.norm == norm_kind::rms_norm) {
    if (input_bytes == 4) {
      input_saved = true;
    } else {
      m.saved.push_back(4 * t * width);
    }
    m.saved.push_back(4 * t * rows);
    const bool fp32_normed =
        framework_of(ctx.config).fp32_norm_output || ctx.spec.norm_keeps_input_dtype;
    if (ctx.norms_train) m.saved.push_back((fp32_normed ? 4 : input_bytes) * t * width);
  } else {
    if (ctx.amp && input_bytes != 4) {
      m.saved.push_back(4 * t * width);
    } else {
      input_saved = true;
    }
    m.saved.push_back(8 * t * rows);
  }
}

// The element size of a norm's output: RMSNorm returns the input dtype; LayerNorm runs in fp32
// under autocast; an fp32 norm weight (PEFT's kbit preparation) makes it fp32 where the weight
// multiplies in its own dtype (LlamaRMSNorm: weight * hidden_states.to(input_dtype)).
std::uint64_t norm_output_bytes(const step_context& ctx, std::uint64_t input_bytes) {
  if ((ctx.spec.norm == norm_kind::layer_norm && ctx.amp) || ctx.kbit_fp32_norms) return 4;
  return input_bytes;
}

namespace {

// Bytes per MLP-width element that the activation function keeps (transformers ACT2FN), its
// input included. The python-formula GELU (NewGELUActivation: 0.5 x (1 + tanh(sqrt(2/pi)
// (x + 0.044715 x^3)))) keeps x for pow, tanh's output, 0.5 x and 1 + tanh; under autocast pow
// runs in fp32 (autocast's fp32 op list) and type promotion keeps the tanh branch in fp32.
// ReLU keeps its output; F.gelu, SiLU and BLOOM's GeLUFunction their input.
std::uint64_t activation_bytes(const std::string& activation, std::uint64_t c, bool amp) {
  if (activation == "gelu_new" || activation == "gelu_fast") return amp ? 4 + 4 + c + 4 : 4 * c;
  // gpt-oss's clamped SwiGLU (GptOssExperts.forward), per gate element: the fused gate_up output
  // both clamps keep (its up half counted as "up"), the clamped gate, sigmoid's output and
  // up + 1; the product glu is the gate's output.
  if (activation == "gpt_oss_swiglu") return 4 * c;
  return c;
}

// ReLU's backward reads its output (threshold_backward(grad, result)), which is also the tensor
// the next product or projection reads: one tensor kept, not two (OPT's fc1 -> ReLU -> fc2,
// modeling_opt.py OPTDecoderLayer). Every other activation keeps its input.
bool activation_keeps_output(const std::string& activation) { return activation == "relu"; }

}  // namespace

// unsloth's dequantisation of its largest 4-bit block linear (of block `layer`, or of all blocks
// when -1): the 16-bit weight and fp32 absmax per 64-element block (unsloth/kernels/utils.py
// fast_dequantize, WEIGHT_BUFFERS and ABSMAX_BUFFERS).
std::uint64_t unsloth_dequantised_bytes(const model_spec& spec, std::uint64_t c, int layer) {
  std::uint64_t largest = 0;
  for (const auto& t : spec.tensors) {
    if (t.layer >= 0 && (layer < 0 || t.layer == layer) && t.module == module_kind::linear &&
        !t.is_bias)
      largest = std::max(largest, t.numel());
  }
  return largest * c + largest / 64 * 4;
}

namespace {

// What one block keeps under unsloth's fast LoRA path (unsloth/kernels/fast_lora.py LoRA_QKV,
// LoRA_W, LoRA_MLP; rms_layernorm.py Fast_RMS_Layernorm; flash-attention, which takes K/V per
// KV head).
block_memory unsloth_block(const step_context& ctx, int layer_index) {
  const auto& spec = ctx.spec;
  const std::uint64_t t = ctx.tokens;
  const std::uint64_t c = ctx.c;
  const std::uint64_t h = spec.hidden_size;
  const std::uint64_t q = spec.num_heads * spec.head_dim;
  const std::uint64_t kv = spec.num_kv_heads * spec.head_dim;
  const std::uint64_t i = spec.intermediate_size;
  block_memory m;
  // Each RMSNorm keeps its 16-bit input (the residual stream) and an fp32 inverse RMS a row.
  const std::uint64_t norm = ctx.r * t * h + 4 * t;
  // LoRA_QKV keeps the norm's output; Q, K and V, roped in place, are what flash-attention
  // keeps with its output (LoRA_W's input) and an fp32 log-sum-exp per head and token; LoRA_MLP
  // keeps the second norm's output and the gate and up projections (SwiGLU is recomputed).
  m.saved = {norm, c * t * h, c * t * (q + 2 * kv), c * t * q, 4 * t * spec.num_heads,
             norm, c * t * h, 2 * c * t * i};
  // Qwen3's q_norm and k_norm run the same kernel over each head (models/qwen3.py).
  if (spec.qk_norm)
    m.saved.push_back(c * t * (q + kv) + 4 * t * (spec.num_heads + spec.num_kv_heads));
  // Forward: the SwiGLU product and the down projection's output. Backward: the down
  // projection's input gradient (made in place into the gate and up outputs after) and the
  // incoming and outgoing hidden-width gradients; a 4-bit base is dequantised afresh for each
  // backward matmul (fast_dequantize without the global buffer).
  m.transient = c * t * i + c * t * h;
  m.backward_transient = c * t * i + 2 * c * t * h;
  if (ctx.quantized) m.backward_transient += unsloth_dequantised_bytes(spec, c, layer_index);
  return m;
}

// What PEFT's IA3 adds to a target linear (tuners/ia3/layer.py Linear.forward), its vector in
// the adapter dtype a. A feedforward target casts its input to a (a copy unless it is a
// already), keeps it for the vector's gradient, and casts the scaled product back for the frozen
// linear; any other target keeps the linear's output for the vector's gradient and scales it into
// dtype max(a, c) before casting it back.
void ia3_terms(block_memory& m, const step_context& ctx, const tensor_spec& w,
               std::uint64_t in_elems, std::uint64_t input_bytes, bool& shared_saved) {
  const std::uint64_t a = ctx.adapter_bytes;
  if (ia3_scales_input(w)) {
    if (a == input_bytes) {
      shared_saved = true;
    } else {
      m.saved.push_back(in_elems * a);
    }
    m.transient = std::max(m.transient, in_elems * (a + input_bytes));
    return;
  }
  const std::uint64_t out_elems = ctx.tokens * local_out(w, ctx.tp);
  m.saved.push_back(out_elems * ctx.c);
  m.transient = std::max(m.transient, out_elems * std::max(a, ctx.c));
}

}  // namespace

// The block's linears and the adapters on them, with the copies a quantised or autocast weight
// makes for its matmuls.
void block_builder::collect_linears() {
  for_each_block_tensor(spec, parameter_block(spec, layer_index), [&](const tensor_spec& tensor) {
    if (tensor.is_bias) return;
    if (tensor.module == module_kind::linear || tensor.module == module_kind::conv1d) {
      linears.push_back(&tensor);
      const std::uint64_t local = tensor_parallel_numel(tensor, ctx.tp);
      // A 4-bit weight is dequantised to 16 bits for its matmul, forward and backward; one that
      // Lightning quantised from fp16 (litgpt: fabric/plugins/precision/bitsandbytes.py
      // quantize, `.to(dtype=torch.half)`) is dequantised to fp16 and converted again for bf16
      // compute (bitsandbytes MatMul4Bit: dequantize_4bit(B).to(A.dtype)).
      // An int8 weight runs its forward as an int8 matmul and is dequantised for the input
      // gradient only, to the input's dtype (MatMul8bitLt.backward: state.CB.to(ctx.dtype_A)).
      const std::uint64_t dequantised = ctx.int8_base ? local * (ctx.kbit_fp32_norms ? 4 : c)
                                                      : local * c * (ctx.fp16_quant_state ? 2 : 1);
      if (ctx.quantized && !ctx.int8_base) m.transient = std::max(m.transient, dequantised);
      if (ctx.quantized) m.backward_transient = std::max(m.backward_transient, dequantised);
      if (ctx.autocast_copies) m.weight_copies.push_back(local * c);  // autocast's weight cache
    }
  });
  adapted.resize(linears.size());
  ia3_scaled.resize(linears.size());
  for (std::size_t j = 0; j < linears.size(); ++j) {
    adapted[j] = lora_target(ctx.config, *linears[j]);
    ia3_scaled[j] = ia3_target(ctx.config, *linears[j]);
  }
}

// The linears of `role` reading an input of `input_bytes` per element over the tokens of `at`
// (the block's own, or the encoder's for cross-attention's keys and values).
void block_builder::feed_over(const step_context& at, linear_role role, std::uint64_t input_bytes,
                              bool& shared) {
  // litgpt fuses q, k and v into one linear whose LoRA (LoRAQKVLinear) drops its input out
  // once for all enabled projections (litgpt/lora.py).
  const bool fused_qkv = framework_of(at.config).fused_qkv && role == linear_role::attention_in;
  bool dropped_out = false;
  for (std::size_t j = 0; j < linears.size(); ++j) {
    const tensor_spec* w = linears[j];
    if (role_of(*w) == role) {
      // (Read once per block for its own configuration: PEFT's name matching is string work.)
      const bool own = &at.config == &ctx.config;
      const bool adapter = own ? adapted[j] : lora_target(at.config, *w);
      // Column-parallel layers read the hidden-width input (kept sequence-split under SP and
      // all-gathered again for backward); row-parallel ones their rank's slice.
      const std::uint64_t elems =
          column_parallel(*w) ? at.h_tokens * tensor_in(*w) : at.tokens * local_in(*w, at.tp);
      linear_input(m, at, elems, input_bytes, at.full, adapter, !(fused_qkv && dropped_out),
                   shared);
      dropped_out = dropped_out || adapter;
      if (adapter && at.config.dora) dora_terms(m, at, *w);
      if (own ? ia3_scaled[j] : ia3_target(at.config, *w))
        ia3_terms(m, at, *w, elems, input_bytes, shared);
      // LLaMA-Adapter v2's adapter_scale * (linear(x) + adapter_bias) keeps the sum for the
      // scale's gradient.
      if (at.config.finetune == finetune_kind::llama_adapter_v2)
        m.saved.push_back(c * at.tokens * local_out(*w, at.tp));
    }
  }
}

void block_builder::feed(linear_role role, std::uint64_t input_bytes, bool& shared) {
  feed_over(ctx, role, input_bytes, shared);
}

// Gemma 2's and 3's post_attention_layernorm and post_feedforward_layernorm normalise the
// attention's and the MLP's outputs before the residual adds.
void block_builder::post_norm() {
  if (!spec.post_norms) return;
  bool kept = false;
  norm_saves(m, ctx, h, c, kept, th, 1);
  if (kept) m.saved.push_back(c * th * h);
}

// 4. MLP, after a second norm unless attention and MLP run in parallel.
void block_builder::mlp_norm() {
  mlp_in_bytes = y1_bytes;
  if (!spec.parallel_block || spec.parallel_mlp_norm) {
    bool mid_saved = false;
    if (spec.pre_norms) norm_saves(m, ctx, h, ctx.r, mid_saved, th, 1);
    // A parallel block's own MLP norm reads the block's input, which the first norm may keep.
    if (mid_saved && !(spec.parallel_block && input_saved)) m.saved.push_back(ctx.r * th * h);
    mlp_in_bytes = spec.pre_norms ? norm_output_bytes(ctx, ctx.r) : ctx.r;
    bool y2_shared = false;
    feed(linear_role::mlp_in, mlp_in_bytes, y2_shared);
    if (y2_shared) m.saved.push_back(mlp_in_bytes * th * h);
    if (holds_own_input(ctx, mlp_in_bytes)) m.retained += mlp_in_bytes * th * h;
  }
}

// A mixture-of-experts block (transformers 5's MixtralExperts and kin): each token runs through
// its top-k experts (on average k/E of the tokens reach each expert) and the shared expert(s),
// so the gated MLP's saved tensors span k x the expert width plus the shared width. Llama 4's
// runs every token through all E experts (moe_spec::dense_dispatch).
void block_builder::moe_experts() {
  const std::uint64_t experts_read = spec.moe.experts_run();
  const std::uint64_t routed = layer.moe ? experts_read * spec.moe.expert_intermediate / ctx.tp : 0;
  i = layer.moe ? routed + spec.moe.shared_intermediate / ctx.tp : spec.intermediate_size / ctx.tp;
  if (layer.moe) {
    const std::uint64_t e = spec.moe.num_experts;
    const std::uint64_t k = spec.moe.experts_per_token;
    // The router's logits and their fp32 softmax (routing_weights, dtype=torch.float); the
    // one-hot expert mask (int64) and the zeroed output being scattered into. DeepSeek's router
    // scores in fp32 (its logits and their sigmoid, with the fp32 copy of its input when its
    // weight trains) and scatters into an fp32 output (DeepseekV3MoE.moe: zeros_like(...,
    // dtype=topk_weights.dtype)).
    if (spec.moe.fp32_router) {
      m.saved.push_back(8 * t * e + (ctx.full ? 4 * t * h : 0));
      m.transient = std::max(m.transient, 8 * t * k * e + 4 * t * h);
    } else if (spec.moe.dense_dispatch) {
      // Llama4Router: the top-k logits scattered into -inf, their fp32 sigmoid (kept) cast back,
      // and its transposed column (copied by reshape) that scales the repeated tokens.
      m.saved.push_back(4 * t * e + c * t * e);
      m.transient = std::max(m.transient, 2 * c * t * e);
    } else {
      m.saved.push_back(c * t * e + 4 * t * e);
      m.transient = std::max(m.transient, 8 * t * k * e + c * t * h);
    }
    // Each expert's output is kept for the routing weight's gradient (the product with
    // routing_weights: the weights need one whenever the block's input does, trained router or
    // not). Under tensor parallelism it is a partial sum of the whole width, not a split.
    // Llama 4 scales the experts' inputs instead: the product keeps the repeated tokens
    // (hidden_states.repeat(E, 1)).
    m.saved.push_back(c * t * experts_read * h);
    if (ctx.full) {
      // Trained experts keep the gathered tokens each expert reads (hidden_states[token_idx];
      // Llama 4: the scaled repeated tokens), whole on every tensor-parallel rank.
      m.saved.push_back(c * t * experts_read * h);
      // Autocast casts every expert's slice of the fused fp32 weights per call (a view is not
      // cached) and keeps the copy for the input gradient.
      if (ctx.autocast_copies)
        m.weight_copies.push_back(e * 3 * spec.moe.expert_intermediate * h * c / ctx.tp);
    }
  }
}

// bitsandbytes' Linear4bit returns its input's dtype (out.to(inp_dtype)), as MatMul8bitLt does
// (int8_scaled_mm(..., dtype=A.dtype)), so a quantised MLP runs in the dtype its norm hands it.
void block_builder::mlp() {
  mlp_bytes = ctx.quantized ? mlp_in_bytes : c;
  // The activation's output, which the product (gated) or the down projection reads, is the
  // tensor the activation itself keeps when it keeps its output.
  const bool output_kept_by_activation = activation_keeps_output(spec.activation);
  if (spec.gated_mlp) {
    // What the gate's activation keeps (SiLU: its input), its output and up (the product's
    // inputs).
    const std::uint64_t own =
        output_kept_by_activation
            ? 0
            : activation_bytes(spec.activation, mlp_bytes, ctx.amp && mlp_bytes == c);
    m.saved.push_back((own + 2 * mlp_bytes) * t * i);
  } else {
    // litgpt runs its GELUs as one fused F.gelu (tanh or exact), keeping only the input.
    m.saved.push_back(
        (framework_of(ctx.config).fused_gelu
             ? c
             : activation_bytes(spec.activation, mlp_bytes, ctx.amp && mlp_bytes == c)) *
        t * i);
  }
  // T5's feed-forward drops the activation out before `wo` (T5DenseActDense): its mask; the
  // output is what `wo` reads. A `wo` kept fp32 gets the product cast to fp32 first (and, under
  // autocast, cast back with a per-call 16-bit copy of the frozen weight).
  const bool dropped_before_down = spec.encoder_decoder && spec.hidden_dropout > 0;
  if (dropped_before_down) m.saved.push_back(t * i);
  if (ctx.fp32_kept) {
    const std::uint64_t cast_back = ctx.amp ? c * t * i + c * i * h : 0;
    m.transient = std::max(m.transient, (mlp_bytes + 4) * t * i + cast_back + ctx.r * th * h);
  }
  bool down_shared = false;
  feed(linear_role::mlp_out, mlp_bytes, down_shared);
  // Trained routed experts keep their down projection's input (no linear module carries them).
  if (layer.moe && ctx.full && !down_shared) down_shared = true;
  // (A ReLU output read straight by the down projection is counted above, as the activation's.)
  const bool down_reads_kept_output =
      output_kept_by_activation && !spec.gated_mlp && !dropped_before_down;
  if (down_shared && !down_reads_kept_output) m.saved.push_back(mlp_bytes * t * i);
  if (holds_own_input(ctx, mlp_bytes)) m.retained += mlp_bytes * t * i;
}

// The residual dropout masks (bool), one per sublayer.
void block_builder::residual_dropout() {
  if (spec.hidden_dropout > 0) m.saved.push_back((layer.cross_attention ? 3 : 2) * th * h);
}

// Busiest moment besides what is saved: the MLP product before down-projection and the
// residual stream; during backward the gradients of the MLP's intermediates.
void block_builder::busiest_moments() {
  m.transient = std::max(m.transient, mlp_bytes * t * i + ctx.r * th * h);
  m.backward_transient += 3 * mlp_bytes * t * i + 2 * ctx.r * th * h;
  m.backward_transient = std::max(m.backward_transient, m.adapter_backward);
  // Selective recomputation: the attention core made again for its backward (as the kept
  // tensors are alive there otherwise).
  m.backward_transient = std::max(m.backward_transient, quadratic);
}

// Context parallelism's attention, at its busiest (t is this rank's share of the tokens).
void block_builder::context_parallel_peaks() {
  if (ctx.cp > 1) {
    const std::uint64_t kv_chunk = c * t * 2 * kv;  // one rank's keys and values
    if (ulysses) {
      // DeepSpeed-Ulysses (deepspeed/sequence/layer.py single_all_to_all): the caller's q/k/v
      // stay alive while each all-to-all makes a contiguous send copy, a receive buffer and a
      // contiguous copy of it in the attention's layout (post_all2all); the backward
      // all-to-alls the gradients the same way.
      const std::uint64_t all_to_all = c * t * q + kv_chunk + 3 * c * t * q;
      m.transient = std::max(m.transient, all_to_all);
      m.backward_transient = std::max(m.backward_transient, all_to_all);
    } else {
      // TransformerEngine's ring (context_parallel.py AttnFuncWithCPAndKVP2P): the forward keeps
      // cp K/V buffers (a copy of its own, then each received one; the last is saved) and every
      // step's output until its loop ends, and corrects the output in fp32 before its 16-bit
      // copy is returned; the backward holds dq, two buffers of K/V with their dK/dV, and one
      // step's dq and dK/dV.
      m.transient = std::max(m.transient, ctx.cp * kv_chunk + ctx.cp * c * t * q + 4 * t * q);
      m.backward_transient = std::max(m.backward_transient, 2 * c * t * q + 5 * kv_chunk);
    }
  }
}

// torchtitan's per-op selective checkpointing (torchtitan/models/llama3/parallelize.py
// _apply_ac_to_transformer_block, selective_ac_option "op"): the block is checkpointed, but its
// forward keeps the outputs of the ops in _save_list — the attention kernel's (output and
// log-sum-exp) and aten.mm's, except every second matmul of the block. Its Llama runs wq, wk,
// wv, wo, w1 (gate), w3 (up), w2 (down), whatever a checkpoint fuses: the q, v, gate and down
// projections' outputs are kept, in the order they are made; k, o and up are recomputed.
// Under sequence parallelism the list's reduce_scatter_tensor keeps the attention's and the
// MLP's reduce-scattered outputs too.
void block_builder::per_op_cache() {
  if (framework_of(ctx.config).per_op_selective_recompute && ctx.config.selective_recompute) {
    const bool sp = ctx.config.sequence_parallel;
    m.op_cache = {c * t * q, c * t * kv, c * t * values,
                  4 * ctx.config.micro_batch * heads * ctx.seq};
    if (sp) m.op_cache.push_back(c * th * h);  // o's output reduce-scattered
    m.op_cache.push_back(c * t * i);
    m.op_cache.push_back(c * t * h);
    if (sp) m.op_cache.push_back(c * th * h);  // down's
  }
}

// The parts in the order the block runs them.
block_memory block_builder::build() {
  // Room for a block's usual tensors and linears: each growth is a malloc, dear in WebAssembly.
  m.saved.reserve(32);
  linears.reserve(16);
  collect_linears();
  attention_norm();
  qk_norms();
  l2_qk_norms();
  latent_projections();
  attention_operands();
  attention_scores();
  prompt_attention();
  output_projection();
  post_norm();
  cross_attention();
  mlp_norm();
  moe_experts();
  mlp();
  post_norm();
  residual_dropout();
  busiest_moments();
  context_parallel_peaks();
  per_op_cache();
  if (ctx.config.finetune == finetune_kind::llama_adapter_v1 &&
      static_cast<std::uint64_t>(layer_index) < ctx.config.adapter_start_layer) {
    // Nothing below or in the block trains: it runs without a graph.
    m.graph = false;
    m.saved.clear();
    m.retained = 0;
    m.backward_transient = 0;
  }
  return std::move(m);
}

namespace {

// Two names alike but for their numbers (a layer's, an expert's).
bool alike_but_numbers(const std::string& a, const std::string& b) {
  const auto digit = [](char ch) { return ch >= '0' && ch <= '9'; };
  std::size_t i = 0;
  std::size_t j = 0;
  while (i < a.size() && j < b.size()) {
    if (digit(a[i]) && digit(b[j])) {
      while (i < a.size() && digit(a[i])) ++i;
      while (j < b.size() && digit(b[j])) ++j;
      continue;
    }
    if (a[i] != b[j]) return false;
    ++i;
    ++j;
  }
  return i == a.size() && j == b.size();
}

// Every field of a tensor but its layer, and its name but for the numbers. (The name is read
// only for what the parse has not read from it yet: its module's name and its place in the flow,
// linear_role_of and adapter_target_of.)
bool same_tensor_elsewhere(const tensor_spec& x, const tensor_spec& y) {
  if (!(x.role == y.role && x.module == y.module &&
        std::equal(x.shape.begin(), x.shape.end(), y.shape.begin(), y.shape.end()) &&
        x.is_bias == y.is_bias && x.kept_fp32 == y.kept_fp32 && x.flow == y.flow &&
        x.module_name == y.module_name))
    return false;
  const bool read = !x.module_name.empty() && x.flow != linear_role::unknown;
  return read || alike_but_numbers(x.name, y.name);
}

// Every field of a layer but its index within its stack.
bool same_layer_kind(const layer_spec& x, const layer_spec& y) {
  return x.stack == y.stack && x.attention == y.attention &&
         x.sliding_window_tokens == y.sliding_window_tokens &&
         x.cross_attention == y.cross_attention && x.moe == y.moe && x.l2_qk_norm == y.l2_qk_norm &&
         x.mlp_intermediate == y.mlp_intermediate && x.shares_params_of == y.shares_params_of;
}

bool same_block_tensors(const model_spec& spec, int a, int b) {
  const auto& x = spec.block_tensors[static_cast<std::size_t>(a)];
  const auto& y = spec.block_tensors[static_cast<std::size_t>(b)];
  if (x.size() != y.size()) return false;
  for (std::size_t k = 0; k < x.size(); ++k) {
    if (!same_tensor_elsewhere(spec.tensors[x[k]], spec.tensors[y[k]])) return false;
  }
  return true;
}

}  // namespace

bool same_block_description(const step_context& ctx, int a, int b) {
  const model_spec& spec = ctx.spec;
  const std::size_t layers = spec.layers.size();
  const auto in_range = [&](int l) { return l >= 0 && static_cast<std::size_t>(l) < layers; };
  // (Unindexed tensors: each block is described on its own.)
  if (!in_range(a) || !in_range(b) || spec.block_tensors.size() != layers) return false;
  if (!same_layer_kind(spec.layers[static_cast<std::size_t>(a)],
                       spec.layers[static_cast<std::size_t>(b)]))
    return false;
  // LLaMA-Adapter's first adapted layer (build, prompt_attention).
  const std::uint64_t start = ctx.config.adapter_start_layer;
  if ((static_cast<std::uint64_t>(a) < start) != (static_cast<std::uint64_t>(b) < start))
    return false;
  // The tensors it runs (its own, or those it shares), and its own (unsloth's dequantised
  // copies).
  const int runs_a = parameter_block(spec, a);
  const int runs_b = parameter_block(spec, b);
  if (!in_range(runs_a) || !in_range(runs_b)) return false;
  return same_block_tensors(spec, runs_a, runs_b) &&
         ((runs_a == a && runs_b == b) || same_block_tensors(spec, a, b));
}

block_memory block_memory_of(const step_context& ctx, int layer_index) {
  if (framework_of(ctx.config).own_kernels) return unsloth_block(ctx, layer_index);
  return block_builder(ctx, layer_index).build();
}

}  // namespace gpumem
