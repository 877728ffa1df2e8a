// Llama-like decoders: RMSNorm, gated MLP, grouped-query attention, with the variants of
// Mistral, Qwen2, Gemma/Gemma2, Phi-3 (fused projections), Mixtral and Qwen2-MoE (routed experts),
// DeepSeek-V3 (multi-head latent attention, shared experts, dense first layers) and gpt-oss
// (attention sinks, biased experts with a clamped SwiGLU, alternating sliding windows) and Llama 4
// (experts every token runs through, a shared expert, chunked attention, weightless L2 q/k
// norms on its RoPE layers) and GLM-4.5 (DeepSeek-V3's experts and router beside grouped-query
// attention). Names,
// shapes and order follow transformers 5 (fused `experts.gate_up_proj` / `experts.down_proj`),
// checked against tests/golden/hf_param_counts.json. Unknown model types with the standard
// Llama keys are read the same way, with a warning.

#include <algorithm>
#include <utility>

#include "model/architectures.hpp"
#include "model/tensor_builder.hpp"

namespace gpumem {

namespace {

constexpr auto attn = tensor_role::attention;

// What distinguishes the members of the family, decided from model_type.
struct variant {
  bool qkv_bias = false;  // Qwen2 / Qwen2-MoE hard-code bias on q, k, v
  bool o_bias = false;
  bool mlp_bias = false;
  bool fused = false;            // Phi-3: o_proj, qkv_proj; gate_up_proj, down_proj
  bool sandwich_norms = false;   // Gemma 2 and 3: pre/post feed-forward norms
  bool qk_norm = false;          // Qwen3, Gemma 3: q_norm and k_norm over each head
  bool post_norms_only = false;  // OLMo 2: norms after attention and MLP, none before
  bool tie_default = false;
  enum class moe_layout { none, mixtral, qwen2, deepseek, gpt_oss, llama4 } moe = moe_layout::none;
  bool sinks = false;  // gpt-oss: a learned sink logit per head (GptOssAttention.sinks)
  const char* architecture = "LlamaForCausalLM";
};

// The transformers causal-LM class of each member.
const char* class_for(const std::string& type) {
  static const std::pair<const char*, const char*> classes[] = {
      {"mistral", "MistralForCausalLM"},    {"mixtral", "MixtralForCausalLM"},
      {"qwen2", "Qwen2ForCausalLM"},        {"qwen2_moe", "Qwen2MoeForCausalLM"},
      {"gemma", "GemmaForCausalLM"},        {"gemma2", "Gemma2ForCausalLM"},
      {"phi3", "Phi3ForCausalLM"},          {"deepseek_v3", "DeepseekV3ForCausalLM"},
      {"qwen3", "Qwen3ForCausalLM"},        {"qwen3_moe", "Qwen3MoeForCausalLM"},
      {"gemma3_text", "Gemma3ForCausalLM"}, {"olmo2", "Olmo2ForCausalLM"},
      {"gpt_oss", "GptOssForCausalLM"},     {"llama4_text", "Llama4ForCausalLM"},
      {"glm4_moe", "Glm4MoeForCausalLM"},   {"granite", "GraniteForCausalLM"}};
  for (const auto& [name, cls] : classes) {
    if (type == name) return cls;
  }
  return "LlamaForCausalLM";
}

variant variant_for(const std::string& type, config_reader& cfg) {
  variant v;
  if (type == "qwen2" || type == "qwen2_moe") {
    v.qkv_bias = true;
  } else if (type == "glm4_moe") {
    // Glm4MoeAttention: attention_bias on q, k and v; o_proj never biased.
    v.qkv_bias = cfg.flag("attention_bias", false);
  } else {
    // LlamaConfig / MistralConfig / DeepseekV3Config: attention_bias covers q, k, v and o.
    v.qkv_bias = v.o_bias = cfg.flag("attention_bias", false);
  }
  v.mlp_bias = cfg.flag("mlp_bias", false);
  v.fused = type == "phi3";
  v.sandwich_norms = type == "gemma2" || type == "gemma3_text";
  v.qk_norm = type == "qwen3" || type == "qwen3_moe" || type == "gemma3_text" || type == "olmo2" ||
              (type == "glm4_moe" && cfg.flag("use_qk_norm", false));
  v.post_norms_only = type == "olmo2";
  // GemmaConfig (and Gemma 2's and 3's) defaults to tied embeddings.
  v.tie_default = type == "gemma" || type == "gemma2" || type == "gemma3_text";
  if (type == "mixtral") v.moe = variant::moe_layout::mixtral;
  // Qwen3MoeSparseMoeBlock is Qwen2-MoE's without the shared expert.
  if (type == "qwen2_moe" || type == "qwen3_moe") v.moe = variant::moe_layout::qwen2;
  // Glm4MoeMoE is DeepseekV3MoE's layout: fused experts, an fp32-scoring router (gate) with its
  // correction bias as a buffer, shared experts; dense layers before first_k_dense_replace.
  if (type == "deepseek_v3" || type == "glm4_moe") v.moe = variant::moe_layout::deepseek;
  if (type == "gpt_oss") {
    v.moe = variant::moe_layout::gpt_oss;
    v.sinks = true;
  }
  if (type == "llama4_text") v.moe = variant::moe_layout::llama4;
  v.architecture = class_for(type);
  return v;
}

void read_moe(config_reader& cfg, model_spec& spec, const variant& v) {
  using layout = variant::moe_layout;
  const auto layers = spec.layers.size();
  if (v.moe == layout::mixtral || v.moe == layout::gpt_oss) {
    spec.moe.num_experts = cfg.required({"num_local_experts"}, max_experts);
    spec.moe.expert_intermediate = spec.intermediate_size;
    for (auto& layer : spec.layers) layer.moe = true;
  } else if (v.moe == layout::qwen2) {
    // Qwen2MoeConfig defaults to 60 experts, Qwen3MoeConfig to 128.
    const std::uint64_t experts = spec.model_type == "qwen3_moe" ? 128 : 60;
    spec.moe.num_experts = cfg.optional({"num_experts"}, experts, max_experts, 0);
    spec.moe.expert_intermediate = cfg.required({"moe_intermediate_size"}, max_width);
    spec.moe.shared_intermediate =
        cfg.optional({"shared_expert_intermediate_size"}, 0, max_width, 0);
    // Qwen2MoeDecoderLayer: sparse unless listed in mlp_only_layers, every decoder_sparse_step-th.
    const auto step = cfg.optional({"decoder_sparse_step"}, 1, max_layers);
    const auto dense = cfg.index_list("mlp_only_layers", max_layers);
    for (std::size_t i = 0; i < layers; ++i) {
      const bool listed = std::find(dense.begin(), dense.end(), i) != dense.end();
      spec.layers[i].moe = !listed && spec.moe.num_experts > 0 && (i + 1) % step == 0;
    }
  } else if (v.moe == layout::llama4) {
    // Llama4TextConfig: num_local_experts (16) routed experts and one shared expert, all
    // intermediate_size wide; the dense layers' MLP is intermediate_size_mlp (16384) wide. MoE
    // layers are those in moe_layers, else every interleave_moe_layer_step-th from step - 1.
    spec.moe.num_experts = cfg.optional({"num_local_experts"}, 16, max_experts);
    spec.moe.expert_intermediate = spec.intermediate_size;
    spec.moe.shared_intermediate = spec.intermediate_size;
    spec.moe.dense_dispatch = true;
    spec.intermediate_size = cfg.optional({"intermediate_size_mlp"}, 16384, max_width);
    const auto step = cfg.optional({"interleave_moe_layer_step"}, 1, max_layers);
    const bool listed = cfg.has("moe_layers");
    const auto moe_layers = cfg.index_list("moe_layers", max_layers);
    for (std::size_t i = 0; i < layers; ++i) {
      spec.layers[i].moe =
          listed ? std::find(moe_layers.begin(), moe_layers.end(), i) != moe_layers.end()
                 : (i + 1) % step == 0;
    }
  } else if (v.moe == layout::deepseek) {
    spec.moe.num_experts = cfg.required({"n_routed_experts"}, max_experts);
    spec.moe.expert_intermediate = cfg.required({"moe_intermediate_size"}, max_width);
    spec.moe.shared_intermediate =
        spec.moe.expert_intermediate * cfg.optional({"n_shared_experts"}, 0, max_experts, 0);
    spec.moe.fp32_router = true;
    // DeepseekV3DecoderLayer: MoE from first_k_dense_replace on, every moe_layer_freq-th layer.
    const auto first = cfg.optional({"first_k_dense_replace"}, 0, max_layers, 0);
    const auto every = cfg.optional({"moe_layer_freq"}, 1, max_layers);
    for (std::size_t i = 0; i < layers; ++i) spec.layers[i].moe = i >= first && i % every == 0;
  }
  if (v.moe != layout::none) {
    // (Llama4TextConfig defaults to one expert a token.)
    spec.moe.experts_per_token = v.moe == layout::llama4
                                     ? cfg.optional({"num_experts_per_tok"}, 1, max_experts)
                                     : cfg.required({"num_experts_per_tok"}, max_experts);
    if (spec.moe.experts_per_token > std::max<std::uint64_t>(spec.moe.num_experts, 1)) {
      cfg.fail("config.invalid_value", "num_experts_per_tok",
               "[" + cfg.field("num_experts_per_tok") + "] must be at most the " +
                   std::to_string(spec.moe.num_experts) + " experts, got " +
                   std::to_string(spec.moe.experts_per_token));
    }
  }
  for (auto& layer : spec.layers) layer.mlp_intermediate = layer.moe ? 0 : spec.intermediate_size;
}

// Llama 4's RoPE layers (Llama4TextConfig: no_rope_layers, 1 where a layer uses RoPE; by default
// all but every no_rope_layer_interval-th). They L2-normalise q and k when use_qk_norm
// (Llama4TextAttention: qk_norm only where use_rope) and are the layers the default layer_types
// chunk ("chunked_attention"); the NoPE layers attend to every token ("full_attention").
std::vector<bool> read_llama4_rope_layers(config_reader& cfg, model_spec& spec) {
  const auto layers = spec.layers.size();
  const auto interval = cfg.optional({"no_rope_layer_interval"}, 4, max_layers);
  const auto listed = cfg.index_list("no_rope_layers", 1);
  if (!listed.empty() && listed.size() < layers) {
    cfg.fail("config.inconsistent_layers", "no_rope_layers",
             "[" + cfg.field("no_rope_layers") + "] must give each of the " +
                 std::to_string(layers) + " layers a 0 or 1, got " + std::to_string(listed.size()));
  }
  const bool qk_norm = cfg.flag("use_qk_norm", true);
  std::vector<bool> rope(layers);
  for (std::size_t i = 0; i < layers; ++i) {
    rope[i] = listed.size() >= layers ? listed[i] == 1 : (i + 1) % interval != 0;
    spec.layers[i].l2_qk_norm = qk_norm && rope[i];
  }
  return rope;
}

void read_mla(config_reader& cfg, model_spec& spec) {
  spec.mla = true;
  spec.mla_dims.q_lora_rank = cfg.optional({"q_lora_rank"}, 0, max_width, 0);
  spec.mla_dims.kv_lora_rank = cfg.required({"kv_lora_rank"}, max_width);
  spec.mla_dims.qk_nope_head_dim = cfg.required({"qk_nope_head_dim"}, max_width);
  spec.mla_dims.qk_rope_head_dim = cfg.required({"qk_rope_head_dim"}, max_width);
  spec.mla_dims.v_head_dim = cfg.required({"v_head_dim"}, max_width);
  spec.head_dim = spec.mla_dims.qk_nope_head_dim + spec.mla_dims.qk_rope_head_dim;
  spec.v_head_dim = spec.mla_dims.v_head_dim;
}

void attention_block(tensor_builder& add, const model_spec& spec, const variant& v) {
  const auto h = spec.hidden_size;
  const auto q = spec.num_heads * spec.head_dim;
  const auto kv = spec.num_kv_heads * spec.head_dim;
  if (spec.mla) {
    // DeepseekV3Attention: q through a low-rank bottleneck with its RMSNorm (or full-rank), k/v
    // from one compressed latent plus a shared rotary key, expanded per head by kv_b_proj.
    const auto& m = spec.mla_dims;
    if (m.q_lora_rank == 0) {
      add.linear("self_attn.q_proj", h, q, false, attn);
    } else {
      add.linear("self_attn.q_a_proj", h, m.q_lora_rank, v.qkv_bias, attn);
      add.rms_norm("self_attn.q_a_layernorm", m.q_lora_rank);
      add.linear("self_attn.q_b_proj", m.q_lora_rank, q, false, attn);
    }
    add.linear("self_attn.kv_a_proj_with_mqa", h, m.kv_lora_rank + m.qk_rope_head_dim, v.qkv_bias,
               attn);
    add.rms_norm("self_attn.kv_a_layernorm", m.kv_lora_rank);
    add.linear("self_attn.kv_b_proj", m.kv_lora_rank,
               spec.num_heads * (m.qk_nope_head_dim + m.v_head_dim), false, attn);
    add.linear("self_attn.o_proj", spec.num_heads * m.v_head_dim, h, v.o_bias, attn);
  } else if (v.fused) {
    add.linear("self_attn.o_proj", q, h, v.o_bias, attn);
    add.linear("self_attn.qkv_proj", h, q + 2 * kv, v.qkv_bias, attn);
  } else {
    add.linear("self_attn.q_proj", h, q, v.qkv_bias, attn);
    add.linear("self_attn.k_proj", h, kv, v.qkv_bias, attn);
    add.linear("self_attn.v_proj", h, kv, v.qkv_bias, attn);
    add.linear("self_attn.o_proj", q, h, v.o_bias, attn);
    if (v.sinks) add.parameter("self_attn.sinks", {spec.num_heads}, attn);
    if (v.qk_norm) {
      // OLMo 2 normalises all heads together (Olmo2Attention: RMSNorm(heads x head_dim)).
      add.rms_norm("self_attn.q_norm", v.post_norms_only ? q : spec.head_dim);
      add.rms_norm("self_attn.k_norm", v.post_norms_only ? kv : spec.head_dim);
    }
  }
}

void gated_mlp(tensor_builder& add, const std::string& prefix, std::uint64_t h, std::uint64_t width,
               bool bias, bool fused, tensor_role role) {
  if (fused) {
    add.linear(prefix + "gate_up_proj", h, 2 * width, bias, role);
  } else {
    add.linear(prefix + "gate_proj", h, width, bias, role);
    add.linear(prefix + "up_proj", h, width, bias, role);
  }
  add.linear(prefix + "down_proj", width, h, bias, role);
}

void mlp_block(tensor_builder& add, const model_spec& spec, const layer_spec& layer,
               const variant& v) {
  using layout = variant::moe_layout;
  const auto h = spec.hidden_size;
  // Llama 4's decoder layer names its MLP feed_forward (Llama4TextDecoderLayer).
  const std::string mlp = v.moe == layout::llama4 ? "feed_forward." : "mlp.";
  if (!layer.moe) {
    gated_mlp(add, mlp, h, spec.intermediate_size, v.mlp_bias, v.fused, tensor_role::mlp);
    return;
  }
  const auto e = spec.moe.num_experts;
  const auto width = spec.moe.expert_intermediate;
  auto experts = [&] {
    add.parameter("mlp.experts.gate_up_proj", {e, 2 * width, h}, tensor_role::routed_experts);
    add.parameter("mlp.experts.down_proj", {e, h, width}, tensor_role::routed_experts);
  };
  auto router = [&] { add.linear("mlp.gate", h, e, false, tensor_role::router); };
  if (v.moe == layout::gpt_oss) {
    // GptOssMLP: a biased router (GptOssTopKRouter; a linear map, registered as the other
    // routers are), then the experts with their biases, gate_up_proj stored [experts, hidden,
    // 2 x width] (GptOssExperts).
    add.linear("mlp.router", h, e, true, tensor_role::router);
    add.parameter("mlp.experts.gate_up_proj", {e, h, 2 * width}, tensor_role::routed_experts);
    add.parameter("mlp.experts.gate_up_proj_bias", {e, 2 * width}, tensor_role::routed_experts,
                  true);
    add.parameter("mlp.experts.down_proj", {e, width, h}, tensor_role::routed_experts);
    add.parameter("mlp.experts.down_proj_bias", {e, h}, tensor_role::routed_experts, true);
    return;
  }
  if (v.moe == layout::llama4) {
    // Llama4TextMoe: the experts (gate_up_proj stored [experts, hidden, 2 x width], no biases),
    // the router (Llama4Router, an nn.Linear) and the shared expert (Llama4TextMLP).
    add.parameter("feed_forward.experts.gate_up_proj", {e, h, 2 * width},
                  tensor_role::routed_experts);
    add.parameter("feed_forward.experts.down_proj", {e, width, h}, tensor_role::routed_experts);
    add.linear("feed_forward.router", h, e, false, tensor_role::router);
    gated_mlp(add, "feed_forward.shared_expert.", h, spec.moe.shared_intermediate, false, false,
              tensor_role::shared_experts);
    return;
  }
  if (v.moe == layout::deepseek) {
    // DeepseekV3MoE registers the experts first; the router's e_score_correction_bias is a
    // buffer in transformers, not a parameter.
    experts();
    router();
    if (spec.moe.shared_intermediate > 0) {
      gated_mlp(add, "mlp.shared_experts.", h, spec.moe.shared_intermediate, false, false,
                tensor_role::shared_experts);
    }
    return;
  }
  router();
  experts();
  if (v.moe == layout::qwen2 && spec.moe.shared_intermediate > 0) {
    gated_mlp(add, "mlp.shared_expert.", h, spec.moe.shared_intermediate, false, false,
              tensor_role::shared_experts);
    add.linear("mlp.shared_expert_gate", h, 1, false, tensor_role::shared_experts);
  }
}

}  // namespace

void build_llama_like(config_reader& cfg, model_spec& spec) {
  const variant v = variant_for(spec.model_type, cfg);
  spec.architecture = v.architecture;
  spec.norm = norm_kind::rms_norm;
  spec.gated_mlp = true;
  const auto layers = read_standard_dims(cfg, spec);
  // Absent: unknown (0, no limit); stated, at least 1 as every other family's.
  spec.max_positions = cfg.optional({"max_position_embeddings"}, 0, max_positions);
  spec.tied_embeddings = cfg.flag("tie_word_embeddings", v.tie_default);
  spec.activation = cfg.text("hidden_activation", cfg.text("hidden_act", "silu"));
  const bool gpt_oss = spec.model_type == "gpt_oss";
  const bool llama4 = spec.model_type == "llama4_text";
  // GptOssExperts runs its own clamped SwiGLU (alpha 1.702, limit 7) whatever hidden_act says.
  if (gpt_oss) spec.activation = "gpt_oss_swiglu";
  spec.attention_dropout = cfg.fraction({"attention_dropout"});
  spec.hidden_dropout = cfg.fraction({"resid_pdrop", "hidden_dropout"});
  // modeling_llama.py eager_attention_forward; gpt-oss takes the softmax of its logits and sinks
  // in their own dtype (modeling_gpt_oss.py eager_attention_forward), as Llama 4 does its
  // logits' (modeling_llama4.py: "llama4 doesn't cast attn weights to fp32").
  spec.eager_softmax_fp32 = !gpt_oss && !llama4;
  spec.attention_sinks = v.sinks;
  const bool gemma =
      spec.model_type == "gemma" || spec.model_type == "gemma2" || spec.model_type == "gemma3_text";
  // Olmo2RMSNorm and GptOssRMSNorm multiply by the weight before casting back too.
  spec.norm_keeps_input_dtype = gemma || spec.model_type == "olmo2" || gpt_oss;
  spec.post_norms = v.sandwich_norms || v.post_norms_only;
  spec.pre_norms = !v.post_norms_only;
  spec.qk_norm = v.qk_norm;
  spec.qk_norm_per_head = !v.post_norms_only;
  // Phi3Attention slices query, key and value out of qkv_proj's output; RoPE makes q and k anew.
  spec.values_view_fused_qkv = v.fused;
  // Gemma2Config defaults attn_logit_softcapping to 50.0; an explicit null switches it off.
  if (spec.model_type == "gemma2" && !cfg.present("attn_logit_softcapping"))
    spec.attention_softcap = 50.0;
  else
    spec.attention_softcap = cfg.number("attn_logit_softcapping", 0.0, 0.0, 1e6);
  add_uniform_layers(spec, stack_kind::decoder, layers);
  read_moe(cfg, spec, v);
  if (spec.model_type == "deepseek_v3") read_mla(cfg, spec);
  // LlamaAttention and the files that copy it call repeat_kv on grouped-query keys and values.
  spec.transformers_repeat_kv = !spec.mla && spec.num_kv_heads < spec.num_heads;

  // Sliding windows: a config's layer_types names each layer's ("sliding_attention"); otherwise
  // Mistral/Phi-3 slide on every layer when a window is set; Gemma2 on even layers
  // (Gemma2DecoderLayer: is_sliding = not layer_idx % 2); Gemma 3 on all but every sixth
  // (Gemma3TextConfig: sliding_window_pattern 6, default window 4096); the Qwens only with
  // use_sliding_window, from max_window_layers on (Qwen2Config / Qwen3Config layer_types).
  const bool qwen = spec.model_type == "qwen2" || spec.model_type == "qwen2_moe" ||
                    spec.model_type == "qwen3" || spec.model_type == "qwen3_moe";
  const bool gemma3 = spec.model_type == "gemma3_text";
  // Llama 4's chunked layers attend within attention_chunk_size (8192; null: no chunks), which
  // bounds what they attend to and cache as a window of that size does (transformers' cache
  // keeps a sliding layer for them).
  const bool unchunked =
      llama4 && cfg.present("attention_chunk_size") && !cfg.has("attention_chunk_size");
  const auto window =
      llama4 ? (unchunked ? 0 : cfg.optional({"attention_chunk_size"}, 8192, max_positions))
             : cfg.optional({"sliding_window"}, gemma3 ? 4096 : 0, max_positions, 0);
  const char* windowed_type = llama4 ? "chunked_attention" : "sliding_attention";
  const bool windowed = qwen ? cfg.flag("use_sliding_window", false)
                             : spec.model_type != "gemma" && spec.model_type != "llama";
  const auto first_windowed = qwen ? cfg.optional({"max_window_layers"}, 28, max_layers, 0) : 0;
  const auto pattern = gemma3 ? cfg.optional({"sliding_window_pattern"}, 6, max_layers) : 0;
  auto layer_types = cfg.text_list("layer_types");
  if (llama4) {
    const auto rope = read_llama4_rope_layers(cfg, spec);
    if (layer_types.empty()) {
      for (bool chunked : rope) layer_types.push_back(chunked ? windowed_type : "full_attention");
    }
  }
  if (!layer_types.empty() && layer_types.size() != spec.layers.size()) {
    cfg.fail("config.inconsistent_layers", "layer_types",
             "[" + cfg.field("layer_types") + "] must name each of the " +
                 std::to_string(spec.layers.size()) + " layers, got " +
                 std::to_string(layer_types.size()));
  }
  for (auto& layer : spec.layers) {
    const auto i = static_cast<std::uint64_t>(layer.index);
    bool sliding = windowed && window > 0;
    if (spec.model_type == "gemma2") sliding = sliding && i % 2 == 0;
    if (gemma3) sliding = sliding && (i + 1) % pattern != 0;
    if (qwen) sliding = sliding && i >= first_windowed;
    if (layer_types.size() == spec.layers.size())
      sliding = window > 0 && (windowed || !qwen) &&
                layer_types[static_cast<std::size_t>(i)] == windowed_type;
    if (sliding) {
      layer.attention = attention_pattern::sliding;
      layer.sliding_window_tokens = window;
    }
  }

  tensor_builder add(spec);
  add.scope("model.");
  add.embedding("embed_tokens", spec.vocab_size, spec.hidden_size, tensor_role::token_embedding);
  for (const auto& layer : spec.layers) {
    add.scope("model.layers." + std::to_string(layer.index) + ".", layer.index);
    attention_block(add, spec, v);
    mlp_block(add, spec, layer, v);
    if (!v.post_norms_only) add.rms_norm("input_layernorm", spec.hidden_size);
    add.rms_norm("post_attention_layernorm", spec.hidden_size);
    if (v.post_norms_only) add.rms_norm("post_feedforward_layernorm", spec.hidden_size);
    if (v.sandwich_norms) {
      add.rms_norm("pre_feedforward_layernorm", spec.hidden_size);
      add.rms_norm("post_feedforward_layernorm", spec.hidden_size);
    }
  }
  add.scope("model.");
  add.rms_norm("norm", spec.hidden_size);
  add_lm_head(add, spec, "lm_head", false);
}

}  // namespace gpumem
