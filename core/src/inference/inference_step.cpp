#include "gpumem/inference/inference_step.hpp"

#include <algorithm>
#include <cmath>
#include <optional>
#include <utility>

#include "gpumem/model/litgpt_model.hpp"
#include "gpumem/model/param_count.hpp"
#include "inference/autoawq_fused.hpp"
#include "inference/generate_release.hpp"
#include "inference/gptq_buffers.hpp"
#include "inference/inference_checks.hpp"
#include "inference/llama_cpp_buffers.hpp"
#include "inference/rank_tensors.hpp"
#include "model/quantization_config.hpp"

namespace gpumem {

namespace {

using cat = memory_category;
using namespace inference_tensors;

// Dimensions of the attention and MLP on this rank.
struct layer_dims {
  std::uint64_t hidden = 0;
  std::uint64_t q = 0;    // query features (heads x head_dim)
  std::uint64_t kv = 0;   // key features per token (kv heads x head_dim)
  std::uint64_t v = 0;    // value features
  std::uint64_t out = 0;  // attention output features before o_proj
  std::uint64_t heads = 0;
  std::uint64_t mlp = 0;  // widest MLP activation per token (routed: top-k experts)
};

layer_dims dims_of(const model_spec& spec, const inference_config& c, const layer_spec& layer,
                   std::uint64_t tp) {
  layer_dims d;
  d.hidden = spec.hidden_size;
  d.heads = spec.num_heads / tp;
  const std::uint64_t kv_heads = std::max<std::uint64_t>(spec.num_kv_heads / tp, 1);
  d.q = d.heads * spec.head_dim;
  d.kv = kv_heads * spec.head_dim;
  d.v = kv_heads * spec.v_head_dim;
  d.out = d.heads * spec.v_head_dim;
  if (spec.mla) {  // keys and values are decompressed per head
    d.kv = d.heads * spec.head_dim;
    d.v = d.heads * spec.v_head_dim;
  }
  // transformers runs Llama 4's tokens through every expert (moe_spec::dense_dispatch); the
  // other engines' fused MoE kernels send each token to its top-k.
  const std::uint64_t experts = c.framework == serving_framework::transformers
                                    ? spec.moe.experts_run()
                                    : spec.moe.experts_per_token;
  const std::uint64_t routed = layer.moe ? experts * spec.moe.expert_intermediate : 0;
  d.mlp = std::max(layer.mlp_intermediate, routed + spec.moe.shared_intermediate) / tp;
  return d;
}

// The largest transient of the quantised matrices of one block, by part.
struct block_transients {
  std::uint64_t attention = 0;
  std::uint64_t mlp = 0;
};

block_transients transients_of(const model_spec& spec, const inference_config& c, std::size_t layer,
                               std::uint64_t rows, std::uint64_t tp) {
  block_transients out;
  for (const auto& t : spec.tensors) {
    if (t.layer != static_cast<int>(layer) || !quantized_tensor(t, c)) continue;
    const std::uint64_t bytes = matmul_transient(local_matrix(t, tp), rows, c);
    auto& part = t.role == tensor_role::attention ? out.attention : out.mlp;
    part = std::max(part, bytes);
  }
  return out;
}

// One forward pass over this rank's blocks: `tokens` new tokens for each of `batch` sequences
// attending to `context` tokens. Returns the handles of the KV tensors the pass created
// (dynamic cache prefill), in layer order.
struct pass {
  std::uint64_t batch = 1;
  std::uint64_t tokens = 1;
  std::uint64_t context = 1;
  bool creates_cache = false;
  bool last_position_logits = true;  // only the last position goes through the LM head
  // transformers' releases (generate_release): the forward's fp32 logits, generate's clone of
  // all of them, and whether they outlive the pass (take_kept_logits).
  bool upcast_logits = false;
  bool clone_logits = false;
  bool keep_logits = false;
  // transformers before 4.54 copies a grouped-query layer's K/V to every query head before SDPA
  // (generate_release::sdpa_repeats_kv).
  bool repeat_kv = false;
  // transformers 4.56+'s StaticCache (generate_release::static_cache_lazy): each layer's keys
  // and values of this many tokens are allocated at the layer's first update; 0: none.
  std::uint64_t lazy_cache_tokens = 0;
};

std::uint64_t layer_cache_tokens(const layer_spec& layer, const inference_config& c,
                                 std::uint64_t tokens) {
  // Sliding-window layers keep at most their window (transformers' sliding cache layers,
  // vLLM's sliding-window manager, llama.cpp's SWA cache); litgpt allocates the full length.
  if (layer.sliding_window_tokens > 0 && c.framework != serving_framework::litgpt)
    return std::min(tokens, layer.sliding_window_tokens);
  return tokens;
}

std::uint64_t layer_kv_bytes_per_token(const model_spec& spec, const inference_config& c,
                                       const layer_spec& layer, std::uint64_t tp) {
  if (spec.mla && c.framework == serving_framework::vllm) {
    // vLLM's MLA cache: the compressed latent and the rope key, one "head", no separate V
    // (v1/kv_cache_interface.py MLAAttentionSpec).
    return (spec.mla_dims.kv_lora_rank + spec.mla_dims.qk_rope_head_dim) * c.kv_bytes;
  }
  const layer_dims d = dims_of(spec, c, layer, tp);
  return (d.kv + d.v) * c.kv_bytes;
}

class inference_replay {
 public:
  inference_replay(const model_spec& spec, const inference_config& c, const rank_layout& r,
                   memory_timeline& tl)
      : spec_(spec), c_(c), r_(r), tl_(tl) {}

  // AutoAWQ's fused attention and norms in place of transformers' (autoawq_fused.hpp).
  void use_autoawq(const autoawq_fused& fused) { awq_ = fused; }

  std::vector<int> forward(const pass& p) {
    const std::uint64_t rows = p.batch * p.tokens;
    const std::uint64_t a = c_.activation_bytes;
    std::vector<int> cache;
    const int mask = autoawq_mask(p);
    int x = tl_.allocate(rows * spec_.hidden_size * a, cat::activations);
    // Python's references (transformers' LlamaModel.forward and its copies, litgpt's GPT.forward,
    // AutoAWQ's LlamaLikeModel.forward at the releases read): the loop `hidden_states =
    // layer(hidden_states, ...)` holds a block's input until the block returns, and
    // transformers' forward keeps its `inputs_embeds` local to its end; measured on an H200
    // (validation/measured_h200_generate.json: two hidden-size bf16 tensors a prompt token).
    const bool held = holds_block_input();
    int embedding =
        held && c_.framework == serving_framework::transformers && r_.first_stage ? x : -1;
    for (std::size_t l = r_.first; l < r_.last; ++l) {
      const int input = x;
      const layer_spec& layer = spec_.layers[l];
      const layer_dims d = dims_of(spec_, c_, layer, r_.tp);
      const block_transients w = transients_of(spec_, c_, l, rows, r_.tp);
      // Attention: the normalised input, q/k/v, the rotary copies, the kernel and o_proj.
      int normed = norm(rows);
      // DynamicCache keeps the prefill's rotated keys and its values as the layer's cache.
      const cat kept = p.creates_cache ? cat::kv_cache : cat::activations;
      int q = matmul(rows * d.q * a, w.attention);
      int k = matmul(rows * d.kv * a, w.attention);
      int v = matmul(rows * d.v * a, w.attention, kept);
      // AutoAWQ's q, k and v are views of its fused projection's output (fuse_qkv), alive through
      // its attention, which rotates them itself.
      const int attended = awq_ ? autoawq_attention(p, d, rows)
                                : rotated_attention(p, d, layer, q, k, v, kept, rows, cache);
      tl_.free(q);
      if (!p.creates_cache) {
        tl_.free(k);
        tl_.free(v);
      }
      int projected = matmul(rows * d.hidden * a, w.attention);
      tl_.free(attended);
      tl_.free(normed);
      x = residual(x, projected, rows, held);
      x = mlp(layer, d, w, x, rows);
      if (held && input != embedding) tl_.free(input);
    }
    if (r_.last_stage) logits(p, x, embedding);
    for (int h : {x, embedding, mask}) tl_.free(h);
    return cache;
  }

 private:
  // The block's MLP over its input `x`; returns the residual sum.
  int mlp(const layer_spec& layer, const layer_dims& d, const block_transients& w, int x,
          std::uint64_t rows) {
    const std::uint64_t a = c_.activation_bytes;
    // MLP (gated: act(gate) * up; routed experts: the top-k experts' widths per token).
    const int normed = norm(rows);
    // Llama4TextMoe under transformers: the tokens repeated once per expert and scaled by
    // their scores (the scaled copy replaces the first) are what the experts' matmuls read.
    const bool repeated_tokens =
        layer.moe && spec_.moe.dense_dispatch && c_.framework == serving_framework::transformers;
    const int repeated = repeated_tokens ? tl_.allocate(rows * spec_.moe.num_experts * d.hidden * a,
                                                        cat::activations)
                                         : -1;
    const std::uint64_t width = rows * d.mlp * a;
    int gate = matmul(width, w.mlp);
    // The python-formula GELU (transformers NewGELUActivation / FastGELUActivation:
    // 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))) has its input, 0.5 x and the bracket
    // alive when the product is made; fused activations (litgpt's F.gelu, vLLM's kernels)
    // write one tensor.
    const bool formula_gelu = c_.framework == serving_framework::transformers &&
                              (spec_.activation == "gelu_new" || spec_.activation == "gelu_fast");
    const int half = formula_gelu ? tl_.allocate(width, cat::activations) : -1;
    const int bracket = formula_gelu ? tl_.allocate(width, cat::activations) : -1;
    int activated = tl_.allocate(width, cat::activations);
    tl_.free(half);
    tl_.free(bracket);
    tl_.free(gate);
    int product = activated;
    if (spec_.gated_mlp) {
      const int up = matmul(width, w.mlp);
      product = tl_.allocate(width, cat::activations);
      tl_.free(up);
      tl_.free(activated);
    }
    const int down = matmul(rows * d.hidden * a, w.mlp);
    tl_.free(product);
    tl_.free(repeated);
    tl_.free(normed);
    return residual(x, down, rows);
  }

  // transformers' attention: apply_rotary_pos_emb (q * cos + rotate_half(q) * sin, rotate_half a
  // concatenated copy) replaces q and k; a dynamic cache keeps the prefill's rotated k and its v.
  int rotated_attention(const pass& p, const layer_dims& d, const layer_spec& layer, int& q, int& k,
                        int v, cat kept, std::uint64_t rows, std::vector<int>& cache) {
    const std::uint64_t a = c_.activation_bytes;
    for (int* t : {&q, &k}) {
      const std::uint64_t bytes = rows * (t == &q ? d.q : d.kv) * a;
      const int rotated = tl_.allocate(bytes, t == &k ? kept : cat::activations);
      const int scratch = tl_.allocate(bytes, cat::activations);
      tl_.free(scratch);
      tl_.free(*t);
      *t = rotated;
    }
    if (p.creates_cache) {
      cache.push_back(k);
      cache.push_back(v);
    }
    if (p.lazy_cache_tokens) {
      const std::uint64_t half = p.batch * layer_cache_tokens(layer, c_, p.lazy_cache_tokens) *
                                 layer_kv_bytes_per_token(spec_, c_, layer, r_.tp) / 2;
      for (int i = 0; i < 2; ++i) cache.push_back(tl_.allocate(half, cat::kv_cache));
    }
    return attention(p, d, layer);
  }

  // AutoAWQ's prefill (prepare_attention_mask, 0.1.6-0.2.7): a (1, 1, S, S) causal mask made in
  // fp32 and kept in fp16 through the pass; -1 when there is none.
  int autoawq_mask(const pass& p) {
    if (!awq_ || !awq_->mask || p.tokens < 2) return -1;
    const int wide = tl_.allocate(p.tokens * p.tokens * 4, cat::activations);
    const int kept = tl_.allocate(p.tokens * p.tokens * 2, cat::activations);
    tl_.free(wide);
    return kept;
  }

  // AutoAWQ's fused attention (QuantAttentionFused.forward) from its fused q/k/v projection: in
  // the prefill RoPE's fp32 copies, the keys' packed copy for the cache (keys_store), then the
  // release's kernel; a decode step runs single_query_attention over the cache, which rotates
  // and attends in one kernel (awq_ft_ext, part of AutoAWQ's kernels).
  int autoawq_attention(const pass& p, const layer_dims& d, std::uint64_t rows) {
    const std::uint64_t a = c_.activation_bytes;
    if (p.tokens < 2) return tl_.allocate(rows * d.out * a, cat::activations);
    int q = -1, k = -1;
    autoawq_rotary(tl_, q, k, rows * d.q * a, rows * d.kv * a, a);
    const int keys_store = tl_.allocate(rows * d.kv * a, cat::activations);
    tl_.free(keys_store);
    const int out = autoawq_prefill_attention(tl_, *awq_, p.batch, p.tokens, d.heads, d.q, a);
    tl_.free(q);
    tl_.free(k);
    return out;
  }

  // RMSNorm upcasts to fp32 (LlamaRMSNorm: hidden.to(float32), its variance, the product).
  int norm(std::uint64_t rows) {
    const std::uint64_t elems = rows * spec_.hidden_size;
    // (AutoAWQ's FasterTransformerRMSNorm writes its output alone: awq/modules/fused/norm.py.)
    if (spec_.norm == norm_kind::rms_norm && c_.activation_bytes < 4 && !awq_) {
      const int up = tl_.allocate(elems * 4, cat::activations);
      const int scaled = tl_.allocate(elems * 4, cat::activations);
      tl_.free(up);
      const int out = tl_.allocate(elems * c_.activation_bytes, cat::activations);
      tl_.free(scaled);
      return out;
    }
    return tl_.allocate(elems * c_.activation_bytes, cat::activations);
  }

  int matmul(std::uint64_t out_bytes, std::uint64_t transient, cat category = cat::activations) {
    const int scratch = transient ? tl_.allocate(transient, cat::activations) : -1;
    const int out = tl_.allocate(out_bytes, category);
    tl_.free(scratch);
    return out;
  }

  // The residual sum; `x` lives on where its caller still holds it (`keep_x`).
  int residual(int x, int branch, std::uint64_t rows, bool keep_x = false) {
    const int sum = tl_.allocate(rows * spec_.hidden_size * c_.activation_bytes, cat::activations);
    if (!keep_x) tl_.free(x);
    tl_.free(branch);
    return sum;
  }

  // The PyTorch module loops whose references the replay follows (forward); vLLM's fused
  // residual stream and llama.cpp's graph allocator are modelled apart.
  bool holds_block_input() const {
    return c_.framework == serving_framework::transformers ||
           c_.framework == serving_framework::litgpt || c_.framework == serving_framework::autoawq;
  }

  // transformers' repeat_kv: a grouped-query layer's keys and values expanded to every query
  // head (a reshape of an expand, so copies), alive while the kernel runs: always before eager
  // attention (eager_attention_forward), before SDPA in the releases that do not pass enable_gqa
  // (pass::repeat_kv), and with a windowed layer's masked prefill (windowed_attention).
  int attention(const pass& p, const layer_dims& d, const layer_spec& layer) {
    const bool transformers = c_.framework == serving_framework::transformers;
    const bool math_kernel = c_.attention != attention_kernel::eager && p.tokens > 1 &&
                             sdpa_math_kernel(spec_, c_.activation_bytes, transformers);
    if (transformers && c_.attention == attention_kernel::sdpa && p.tokens > 1 && !math_kernel &&
        sdpa_window_mask(layer, p.context))
      return windowed_attention(p, d);
    const bool repeats = transformers && spec_.transformers_repeat_kv &&
                         (c_.attention == attention_kernel::eager || p.repeat_kv);
    const int repeated =
        repeats ? tl_.allocate(p.batch * p.context * (d.q + d.out) * c_.activation_bytes,
                               cat::activations)
                : -1;
    const int out = attention_output(p, d, math_kernel);
    tl_.free(repeated);
    return out;
  }

  // A windowed layer's prefill reaching its window (sdpa_window_mask): the mask converted to the
  // query's dtype and K/V repeated to every head, alive while the kernel runs.
  int windowed_attention(const pass& p, const layer_dims& d) {
    const std::uint64_t a = c_.activation_bytes;
    const int mask = tl_.allocate(p.batch * p.tokens * p.context * a, cat::activations);
    const int repeated =
        d.kv < d.q ? tl_.allocate(2 * p.batch * p.context * d.q * a, cat::activations) : -1;
    const int out = tl_.allocate(p.batch * p.tokens * d.out * a, cat::activations);
    tl_.free(mask);
    tl_.free(repeated);
    return out;
  }

  // SDPA/flash keep O(tokens) statistics, unless SDPA has to run its math kernel
  // (sdpa_math_kernel); eager materialises the scores, their fp32 softmax
  // (softmax(dtype=float32)) and its cast back (transformers eager_attention_forward).
  int attention_output(const pass& p, const layer_dims& d, bool math_kernel) {
    const std::uint64_t a = c_.activation_bytes;
    if (math_kernel) {
      // The math kernel: fp32 scores, then (with the mask added) their fp32 softmax.
      const std::uint64_t scores = p.batch * d.heads * p.tokens * p.context;
      const int s = tl_.allocate(scores * 4, cat::activations);
      const int probs = tl_.allocate(scores * 4, cat::activations);
      tl_.free(s);
      const int out = tl_.allocate(p.batch * p.tokens * d.out * a, cat::activations);
      tl_.free(probs);
      return out;
    }
    if (c_.attention == attention_kernel::eager) {
      // transformers' eager_attention_forward: `attn_weights = softmax(attn_weights, dim=-1,
      // dtype=torch.float32).to(query.dtype)` keeps the masked scores until the statement ends.
      // ATen's softmax(x, dtype=float) upcasts a bf16 input to an fp32 copy first (only fp16 on
      // CUDA takes the fused half_to_float kernel: aten/src/ATen/native/SoftMax.cpp); an fp32
      // input is neither copied nor cast back. Measured: Llama-3.1-8B's bf16 eager prefill was
      // 4 bytes a score short without the copy (validation/measured_h100.json).
      const std::uint64_t scores = p.batch * d.heads * p.tokens * p.context;
      const bool copies =
          c_.framework == serving_framework::transformers && a == 2 && c_.activation_bf16;
      const int s = tl_.allocate(scores * a, cat::activations);
      const int upcast = copies ? tl_.allocate(scores * 4, cat::activations) : -1;
      const int probs32 = tl_.allocate(scores * 4, cat::activations);
      tl_.free(upcast);
      const int probs = a < 4 ? tl_.allocate(scores * a, cat::activations) : -1;
      tl_.free(s);
      tl_.free(probs32);
      const int out = tl_.allocate(p.batch * p.tokens * d.out * a, cat::activations);
      tl_.free(probs);
      return out;
    }
    return tl_.allocate(p.batch * p.tokens * d.out * a, cat::activations);
  }

  // The LM head over the positions the pass keeps (all of them, or the last one per sequence:
  // generate's and vLLM's logits_to_keep=1); sampling works on fp32 copies of the last position's
  // logits (generate: logits[:, -1, :].to(float32), then the processed scores and the softmax).
  // Where the loop holds its blocks' inputs (holds_block_input), `hidden_states =
  // self.norm(hidden_states)` drops the last block's output as the norm returns and the model's
  // forward returns (its inputs_embeds with it) before the LM head runs; both handles are freed
  // and set to -1.
  void logits(const pass& p, int& x, int& embedding) {
    const std::uint64_t vocab = c_.framework == serving_framework::litgpt
                                    ? spec_.vocab_size
                                    : ceil_div(spec_.vocab_size, r_.tp);
    const std::uint64_t positions = p.last_position_logits ? p.batch : p.batch * p.tokens;
    const int normed = norm(p.batch * p.tokens);
    if (holds_block_input()) {
      for (int* h : {&x, &embedding}) {
        tl_.free(*h);
        *h = -1;
      }
    }
    std::uint64_t transient = 0;
    for (const auto& t : spec_.tensors) {
      if (t.role == tensor_role::lm_head && quantized_tensor(t, c_))
        transient = matmul_transient(local_matrix(t, split_over(t, c_, r_.tp)), positions, c_);
    }
    const int out = matmul(positions * vocab * c_.activation_bytes, transient);
    tl_.free(normed);
    if (p.upcast_logits || p.clone_logits || p.keep_logits) {
      release_logits(p, out, positions * vocab);
      return;
    }
    // Some modeling code upcasts the logits to fp32 (model_spec::logits_fp32).
    const int upcast = spec_.logits_fp32 && c_.activation_bytes < 4
                           ? tl_.allocate(positions * vocab * 4, cat::logits_and_loss)
                           : -1;
    tl_.free(upcast);
    const int f32 = tl_.allocate(p.batch * spec_.vocab_size * 4, cat::logits_and_loss);
    const int processed = tl_.allocate(p.batch * spec_.vocab_size * 4, cat::logits_and_loss);
    const int probs = tl_.allocate(p.batch * spec_.vocab_size * 4, cat::logits_and_loss);
    for (int h : {f32, processed, probs, out}) tl_.free(h);
  }

  // The logits as a stated transformers release handles them (generate_release.cpp): the
  // forward's fp32 copy replaces the 16-bit output; generate may clone them all before slicing
  // the last position, and (before 4.42) the outputs live on until the next forward returns.
  void release_logits(const pass& p, int out, std::uint64_t elements) {
    const bool upcast = (spec_.logits_fp32 || p.upcast_logits) && c_.activation_bytes < 4;
    if (upcast) {
      const int f32 = tl_.allocate(elements * 4, cat::logits_and_loss);
      tl_.free(out);
      out = f32;
    }
    const int clone = p.clone_logits ? tl_.allocate(elements * (upcast ? 4 : c_.activation_bytes),
                                                    cat::logits_and_loss)
                                     : -1;
    const std::uint64_t last = p.batch * spec_.vocab_size * 4;
    const int f32 = tl_.allocate(last, cat::logits_and_loss);
    const int processed = tl_.allocate(last, cat::logits_and_loss);
    const int probs = tl_.allocate(last, cat::logits_and_loss);
    for (int h : {f32, processed, probs, clone}) tl_.free(h);
    if (p.keep_logits) {
      kept_logits_ = out;
    } else {
      tl_.free(out);
    }
  }

 public:
  // The logits a pass kept (pass::keep_logits), for the caller to free; -1 when none.
  int take_kept_logits() {
    const int kept = kept_logits_;
    kept_logits_ = -1;
    return kept;
  }

 private:
  int kept_logits_ = -1;

  const model_spec& spec_;
  const inference_config& c_;
  const rank_layout& r_;
  memory_timeline& tl_;
  std::optional<autoawq_fused> awq_;  // AutoAWQ fused (use_autoawq)
};

}  // namespace

std::uint64_t kv_cache_bytes(const model_spec& spec, const inference_config& config,
                             std::uint64_t tokens) {
  const std::uint64_t tp = std::max<std::uint64_t>(config.tp_degree, 1);
  const stage_layers stage = pipeline_stage_layers(
      spec.layers.size(), std::max<std::uint64_t>(config.pp_degree, 1), config.pp_stage);
  std::uint64_t bytes = 0;
  for (std::size_t l = stage.first; l < stage.last; ++l) {
    const layer_spec& layer = spec.layers[l];
    bytes += layer_cache_tokens(layer, config, tokens) *
             layer_kv_bytes_per_token(spec, config, layer, tp);
  }
  return bytes;
}

namespace {

// The blocks and stages the estimated rank holds.
rank_layout layout_of(const model_spec& spec, const inference_config& config) {
  const std::uint64_t tp = std::max<std::uint64_t>(config.tp_degree, 1);
  const std::uint64_t pp = std::max<std::uint64_t>(config.pp_degree, 1);
  rank_layout r;
  const stage_layers stage = pipeline_stage_layers(spec.layers.size(), pp, config.pp_stage);
  r.first = stage.first;
  r.last = stage.last;
  r.first_stage = config.pp_stage == 0;
  r.last_stage = config.pp_stage + 1 == pp;
  r.tp = tp;
  // litgpt's layer split runs the embedding, final norm and LM head on cuda:0.
  if (config.framework == serving_framework::litgpt && pp > 1) r.last_stage = r.first_stage;
  return r;
}

// The load phase: the CUDA workspaces and this rank's weights, with notes on what they leave out.
void load_weights(const model_spec& spec, const inference_config& config, const gpu_spec& gpu,
                  const rank_layout& r, memory_timeline& tl, inference_estimate& out) {
  const std::uint64_t tp = r.tp;
  const bool llama_cpp = config.framework == serving_framework::llama_cpp;
  tl.phase("load");
  if (!llama_cpp) {
    tl.allocate(cublas_workspace_bytes(gpu.architecture), cat::cuda_workspace);
    tl.allocate(1ULL << 20, cat::cuda_workspace);
  }
  bool tied_head_needed = r.last_stage && !r.first_stage && spec.tied_embeddings;
  std::uint64_t largest = 0, widest = 0;  // the quantised matrices held (gptq_exllama_buffers)
  for (const auto& t : spec.tensors) {
    const bool tied_copy = tied_head_needed && t.role == tensor_role::token_embedding;
    if (!holds(r, config, t) && !tied_copy) continue;
    const std::uint64_t bytes = stored_bytes(t, spec, config, tp);
    out.weight_bytes += bytes;
    tl.allocate(bytes, cat::weights);
    if (!quantized_tensor(t, config)) continue;
    const matrix_dims m = local_matrix(t, split_over(t, config, tp));
    largest = std::max(largest, m.out * m.in);
    widest = std::max({widest, m.out, m.in});
  }
  if (const auto exllama = gptq_exllama_buffers(config, largest, widest)) {
    tl.allocate(exllama->dequantised, cat::other);
    tl.allocate(exllama->reordered, cat::other);
    out.notes.push_back(exllama->note);
  }
  if (tp > 1) {
    const char* vocab = config.framework == serving_framework::vllm ? ""
                        : config.framework == serving_framework::litgpt
                            ? ", the token embedding and the LM head"
                            : ", the token embedding";
    out.notes.push_back(std::string("replicated on every tensor-parallel rank: the norms, the "
                                    "row-parallel biases") +
                        vocab + "; NCCL buffers are not counted");
  }
  if (spec.tied_embeddings && r.last_stage && !r.first_stage)
    out.notes.push_back("the tied LM head is loaded again on the last stage");
}

// vLLM: a profiling forward pass over max_num_batched_tokens tokens and the sampler's
// logits for max_num_seqs sequences set the activation peak; the KV cache then gets what
// is left of gpu_memory_utilization x total memory (worker determine_available_memory).
void paged_cache(const inference_config& config, const gpu_spec& gpu, std::uint64_t total_tokens,
                 inference_replay& replay, memory_timeline& tl, inference_estimate& out) {
  const timeline_peak loaded = tl.peak();  // loading only allocates: its peak is what is live
  tl.phase("profile run");
  pass profile;
  profile.batch = std::min(config.profile_sequences, config.profile_tokens);
  profile.tokens = ceil_div(config.profile_tokens, profile.batch);
  profile.context = profile.tokens;
  replay.forward(profile);
  const std::uint64_t activation_peak = tl.peak().allocated - tl.allocated();
  const double budget = config.gpu_memory_utilization * static_cast<double>(gpu.memory_bytes);
  const double used =
      static_cast<double>(tl.allocated() + activation_peak + cuda_libraries_bytes());
  const std::uint64_t block_bytes = out.kv_bytes_per_token * config.block_size;
  const std::uint64_t blocks = budget > used && block_bytes > 0
                                   ? static_cast<std::uint64_t>(std::floor(
                                         (budget - used) / static_cast<double>(block_bytes)))
                                   : 0;
  out.kv_capacity_tokens = blocks * config.block_size;
  out.kv_cache_bytes = blocks * block_bytes;
  const std::uint64_t per_sequence = ceil_div(total_tokens, config.block_size) * config.block_size;
  out.concurrent_sequences = out.kv_capacity_tokens / per_sequence;
  out.fits_request = out.concurrent_sequences >= config.batch;
  out.peak.allocated = tl.allocated() + activation_peak + out.kv_cache_bytes;
  out.peak.phase = "serving";
  out.peak.by_category = loaded.by_category;
  out.peak.by_category[static_cast<std::size_t>(cat::activations)] = activation_peak;
  out.peak.by_category[static_cast<std::size_t>(cat::kv_cache)] = out.kv_cache_bytes;
  out.peak_reserved = std::max(tl.peak_reserved(), out.peak.allocated);
  out.notes.push_back(
      "vLLM reserves gpu_memory_utilization of the GPU: the KV cache takes what the weights, "
      "the profiled activation peak and the CUDA libraries leave; CUDA graphs and NCCL buffers "
      "come on top");
}

// A preallocated cache's default length: transformers' generate sizes a static cache to
// max_length - 1 (generation/utils.py: max_cache_length = generation_config.max_length - 1;
// the last generated token is never fed back), litgpt's to prompt + new (generate/base.py
// set_kv_cache(max_seq_length=max_returned_tokens)).
std::uint64_t preallocated_tokens(const inference_config& config, std::uint64_t total_tokens,
                                  std::uint64_t final_context) {
  const std::uint64_t default_cache_tokens =
      config.framework == serving_framework::transformers ? final_context : total_tokens;
  const std::uint64_t cache_tokens =
      config.kv_cache_tokens ? config.kv_cache_tokens : default_cache_tokens;
  return cache_tokens;
}

// Generation under transformers and litgpt: a static cache allocated up front or a dynamic one
// grown step by step, the prefill over the prompt, then one-token decode steps.
struct generation {
  const model_spec& spec;
  const inference_config& config;
  const rank_layout& r;
  memory_timeline& tl;
  inference_replay& replay;
  const std::uint64_t final_context;
  const std::uint64_t cache_tokens;
  const generate_release release;
  std::vector<int> cache;
  const autoawq_fused* awq = nullptr;  // AutoAWQ's fused modules, when it serves

  // The keys (or the values) of one layer for the batch at `tokens` tokens per sequence.
  std::uint64_t half_cache(const layer_spec& layer, std::uint64_t tokens) const {
    return config.batch * layer_cache_tokens(layer, config, tokens) *
           layer_kv_bytes_per_token(spec, config, layer, r.tp) / 2;
  }

  void allocate_static_cache() {
    tl.phase("KV cache");
    for (std::size_t l = r.first; l < r.last; ++l) {
      const std::uint64_t bytes = half_cache(spec.layers[l], cache_tokens);
      for (int half = 0; half < 2; ++half) {
        // AutoAWQ's WindowedCache: torch.zeros(shape).to(dev).half(), fp32 on the GPU first.
        const int wide = awq && awq->cache_from_fp32 ? tl.allocate(2 * bytes, cat::other) : -1;
        cache.push_back(tl.allocate(bytes, cat::kv_cache));
        tl.free(wide);
      }
      // Its RoPE table, one per fused attention (autoawq_fused.hpp).
      if (awq) tl.allocate(autoawq_rope_bytes(spec, *awq), cat::other);
    }
  }

  // The prompt's pass; returns the KV tensors a dynamic cache keeps from it.
  std::vector<int> run_prefill() {
    tl.phase("prefill");
    pass prefill;
    prefill.batch = config.batch;
    prefill.tokens = config.prompt_tokens;
    // A preallocated cache is attended over its full length (masked).
    // (AutoAWQ's fused attention attends over the prompt it was given.)
    prefill.context =
        config.kv == kv_cache_kind::static_cache && !awq ? cache_tokens : config.prompt_tokens;
    prefill.creates_cache = config.kv == kv_cache_kind::dynamic;
    // litgpt projects every position; so does a plain transformers forward pass (new_tokens 1:
    // model(input_ids), logits_to_keep 0), while generate() keeps only the last position.
    prefill.last_position_logits =
        config.framework != serving_framework::litgpt &&
        !(config.framework == serving_framework::transformers && config.new_tokens == 1) &&
        !release.all_prompt_logits;
    prefill.upcast_logits = release.logits_upcast;
    prefill.clone_logits = release.whole_logits_clone;
    prefill.keep_logits = release.outputs_kept && config.new_tokens > 1;
    prefill.repeat_kv = release.sdpa_repeats_kv;
    if (config.kv == kv_cache_kind::static_cache && release.static_cache_lazy)
      prefill.lazy_cache_tokens = cache_tokens;
    std::vector<int> kept = replay.forward(prefill);
    // A lazily allocated static cache is the generation's, not the prefill's to hand on.
    if (prefill.lazy_cache_tokens) cache.swap(kept);
    return kept;
  }

  // Decoding, replayed as its last step: the longest context and the largest cache; and first
  // its first step where a release keeps the prefill's logits or the previous cache through it.
  void run_decode(const std::vector<int>& prefill_cache) {
    tl.phase("decode");
    int kept_logits = replay.take_kept_logits();
    pass decode;
    decode.batch = config.batch;
    decode.tokens = 1;
    decode.upcast_logits = release.logits_upcast;
    decode.repeat_kv = release.sdpa_repeats_kv;
    if (config.kv != kv_cache_kind::dynamic) {
      decode.context = cache_tokens;
      replay.forward(decode);
      tl.free(kept_logits);
      return;
    }
    std::vector<int> held = prefill_cache;
    const std::uint64_t first = config.prompt_tokens + 1;
    if ((kept_logits >= 0 || release.old_cache_kept) && final_context > first) {
      held = decode_step(held, first, decode);
      tl.free(kept_logits);
      kept_logits = -1;
    }
    held = decode_step(held, final_context, decode);
    tl.free(kept_logits);
    cache.insert(cache.end(), held.begin(), held.end());
  }

  // One decode step over a dynamic cache grown to `context` tokens: DynamicCache.update
  // concatenates each step's key and value to the layer's cache (torch.cat: the grown copy
  // exists beside the old one, which is dropped at once, or, before transformers 4.42, only when
  // the forward returns: generate_release). Returns the grown cache.
  std::vector<int> decode_step(const std::vector<int>& old, std::uint64_t context, pass decode) {
    std::vector<int> grown;
    std::size_t i = 0;
    for (std::size_t l = r.first; l < r.last; ++l) {
      const std::uint64_t bytes = half_cache(spec.layers[l], context);
      for (int half = 0; half < 2; ++half, ++i) {
        grown.push_back(tl.allocate(bytes, cat::kv_cache));
        if (!release.old_cache_kept) tl.free(old[i]);
      }
    }
    decode.context = context;
    replay.forward(decode);
    if (release.old_cache_kept) {
      for (int h : old) tl.free(h);
    }
    return grown;
  }
};

}  // namespace

result<inference_estimate> estimate_inference(const model_spec& spec,
                                              const inference_config& config, const gpu_spec& gpu) {
  if (config.framework == serving_framework::litgpt && spec.tied_embeddings)
    return estimate_inference(litgpt_model(spec), config, gpu);
  if (spec.encoder_decoder || !spec.causal) {
    return error{"mode.unsupported_model", "model",
                 "[model] the inference estimator covers decoder-only models; " +
                     spec.architecture + " is not one"};
  }
  const bool transformers = config.framework == serving_framework::transformers;
  if (kernel_run(spec, config.attention, transformers) != config.attention) {
    inference_config run = config;
    run.attention = kernel_run(spec, config.attention, transformers);
    auto fallback = estimate_inference(spec, run, gpu);
    if (fallback.ok()) fallback.value().notes.push_back(kernel_run_note(spec));
    return fallback;
  }
  if (auto e = check_inference_request(spec, config)) return *e;
  const rank_layout r = layout_of(spec, config);

  inference_estimate out;
  const std::uint64_t total_tokens = config.prompt_tokens + config.new_tokens;
  const std::uint64_t final_context = config.prompt_tokens + config.new_tokens - 1;
  out.kv_bytes_per_token = kv_cache_bytes(spec, config, 1);
  memory_timeline tl;
  if (config.timeline_samples > 0) tl.record();
  load_weights(spec, config, gpu, r, tl, out);
  if (config.framework == serving_framework::llama_cpp) {
    llama_cpp_buffers(spec, config, total_tokens, out);
    return out;
  }
  inference_replay replay(spec, config, r, tl);
  if (config.kv == kv_cache_kind::paged) {
    paged_cache(config, gpu, total_tokens, replay, tl, out);
    return out;
  }
  std::optional<autoawq_fused> awq;
  if (config.framework == serving_framework::autoawq) {
    awq = autoawq_fused_of(spec, config, final_context);
    replay.use_autoawq(*awq);
    out.notes.push_back(awq->note);
  }
  const std::uint64_t cache_tokens =
      awq ? awq->max_seq_len : preallocated_tokens(config, total_tokens, final_context);
  const generate_release release = generate_release_of(spec, config);
  if (!release.note.empty()) out.notes.push_back(release.note);
  generation generate{spec,          config,       r,       tl, replay,
                      final_context, cache_tokens, release, {}, awq ? &*awq : nullptr};
  if (config.kv == kv_cache_kind::static_cache && !release.static_cache_lazy)
    generate.allocate_static_cache();
  const std::vector<int> prefill_cache = generate.run_prefill();
  if (config.new_tokens > 1) generate.run_decode(prefill_cache);
  out.kv_cache_bytes = tl.peak().by_category[static_cast<std::size_t>(cat::kv_cache)];
  out.peak = tl.peak();
  out.peak_reserved = tl.peak_reserved();
  if (config.timeline_samples > 0) out.timeline = tl.series(config.timeline_samples);
  return out;
}

std::uint64_t inference_device_used(const inference_estimate& estimate,
                                    std::uint64_t cuda_context_bytes) {
  return estimate.peak_reserved + cuda_context_bytes + cuda_libraries_bytes();
}

}  // namespace gpumem
