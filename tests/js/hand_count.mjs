// A second, independent parameter count from a config.json alone, written from the modules each
// Hugging Face modeling file builds (transformers' models/<type>/modeling_<type>.py): what the
// catalogue test holds every preset's core count against when its model card states no exact
// figure. Deliberately plain arithmetic per family, sharing nothing with the core's tensor lists.
// Returns null for a model type it does not count.

const get = (c, ...keys) => {
  for (const k of keys) if (c[k] !== undefined && c[k] !== null) return c[k];
  return undefined;
};

// Linear layer: weight in x out, plus a bias of out when it has one.
const linear = (inputs, outputs, bias = false) => inputs * outputs + (bias ? outputs : 0);

// Decoders of the Llama shape (modeling_llama.py and its descendants): token embedding, per
// layer q/k/v/o projections, a gated MLP (gate, up, down) or experts, RMSNorms with a weight
// only; a final norm; an LM head unless tied.
function llamaLike(c, type) {
  const H = c.hidden_size;
  const V = c.vocab_size;
  const L = c.num_hidden_layers;
  const heads = c.num_attention_heads;
  const kv = get(c, 'num_key_value_heads') ?? heads;
  const hd = get(c, 'head_dim') ?? H / heads;
  // Qwen2 and Qwen2-MoE always give q/k/v a bias (modeling_qwen2.py); others follow attention_bias.
  const qkvBias = type === 'qwen2' || type === 'qwen2_moe' || Boolean(c.attention_bias);
  const oBias = (type === 'qwen2' || type === 'qwen2_moe') ? false : Boolean(c.attention_bias);
  let attention = linear(H, heads * hd, qkvBias) + 2 * linear(H, kv * hd, qkvBias) + linear(heads * hd, H, oBias);
  // Qwen3 and Gemma 3 normalise each head's q and k (RMSNorm of head_dim: modeling_qwen3.py,
  // modeling_gemma3.py Gemma3Attention q_norm, k_norm); OLMo-2 the whole q and k.
  if (type === 'qwen3' || type === 'qwen3_moe' || type === 'gemma3_text') attention += 2 * hd;
  if (type === 'olmo2') attention += heads * hd + kv * hd;
  const mlpBias = Boolean(c.mlp_bias);
  const gated = (inner) => 2 * linear(H, inner, mlpBias) + linear(inner, H, mlpBias);
  // Norms per layer: two (input, post-attention); Gemma 2 and 3 add pre- and post-feed-forward.
  const normsPerLayer = (type === 'gemma2' || type === 'gemma3_text') ? 4 : 2;
  let layers = 0;
  for (let i = 0; i < L; i += 1) {
    let mlp;
    if (type === 'mixtral') {
      mlp = H * c.num_local_experts + c.num_local_experts * gated(c.intermediate_size);
    } else if (type === 'qwen2_moe' || type === 'qwen3_moe') {
      const sparseStep = get(c, 'decoder_sparse_step') ?? 1;
      const dense = (c.mlp_only_layers ?? []).includes(i) || !(c.num_experts > 0 && (i + 1) % sparseStep === 0);
      if (dense) {
        mlp = gated(c.intermediate_size);
      } else {
        mlp = H * c.num_experts + c.num_experts * gated(c.moe_intermediate_size);
        // Qwen2-MoE's shared expert and its sigmoid gate (one output).
        if (type === 'qwen2_moe' && c.shared_expert_intermediate_size) {
          mlp += gated(c.shared_expert_intermediate_size) + H;
        }
      }
    } else {
      mlp = gated(c.intermediate_size);
    }
    layers += attention + mlp + normsPerLayer * H;
  }
  // Gemma and Phi-3 tie by default in their config classes only where stated: read the flag,
  // defaulting as each config class does (Gemma true, the rest false).
  const tiedDefault = type === 'gemma' || type === 'gemma2' || type === 'gemma3_text';
  const tied = c.tie_word_embeddings ?? tiedDefault;
  return V * H + layers + H + (tied ? 0 : V * H);
}

// GPT-2 (modeling_gpt2.py): token and position embeddings, Conv1D attention and MLP with biases,
// LayerNorms with bias, the LM head tied.
function gpt2(c) {
  const H = c.n_embd;
  const inner = c.n_inner ?? 4 * H;
  const layer = 2 * H + linear(H, 3 * H, true) + linear(H, H, true) + 2 * H + linear(H, inner, true) + linear(inner, H, true);
  return c.vocab_size * H + c.n_positions * H + c.n_layer * layer + 2 * H;
}

// OPT (modeling_opt.py): embeddings of word_embed_proj_dim, learned positions with an offset of 2,
// project_in/out when that width differs, biased projections, the LM head tied.
function opt(c) {
  const H = c.hidden_size;
  const E = c.word_embed_proj_dim ?? H;
  const F = c.ffn_dim;
  const layer = 4 * linear(H, H, true) + 2 * H + linear(H, F, true) + linear(F, H, true) + 2 * H;
  const projections = E !== H ? 2 * linear(H, E) : 0;
  // The final LayerNorm exists when layers normalise first and it is not removed (opt-350m).
  const finalNorm = c.do_layer_norm_before !== false && !c._remove_final_layer_norm ? 2 * H : 0;
  return c.vocab_size * E + (c.max_position_embeddings + 2) * H + projections + c.num_hidden_layers * layer + finalNorm;
}

// BLOOM (modeling_bloom.py): ALiBi (no position table), an embedding LayerNorm, fused biased qkv.
function bloom(c) {
  const H = c.hidden_size ?? c.n_embed;
  const L = c.n_layer ?? c.num_hidden_layers;
  const layer = 2 * H + linear(H, 3 * H, true) + linear(H, H, true) + 2 * H + linear(H, 4 * H, true) + linear(4 * H, H, true);
  return c.vocab_size * H + 2 * H + L * layer + 2 * H;
}

// GPT-NeoX / Pythia (modeling_gpt_neox.py): rotary, fused biased qkv, two LayerNorms per layer,
// an untied output embedding unless tie_word_embeddings.
function gptNeox(c) {
  const H = c.hidden_size;
  const I = c.intermediate_size;
  const layer = 4 * H + linear(H, 3 * H, true) + linear(H, H, true) + linear(H, I, true) + linear(I, H, true);
  const tied = c.tie_word_embeddings ?? false;
  return c.vocab_size * H + c.num_hidden_layers * layer + 2 * H + (tied ? 0 : c.vocab_size * H);
}

// T5 and mT5 (modeling_t5.py, modeling_mt5.py): a shared embedding, relative position buckets in each stack's first
// layer, bias-free projections and RMS-style norms of d_model; v1.1 and Flan gate the MLP and
// untie the LM head.
function t5(c) {
  const d = c.d_model;
  const inner = c.num_heads * c.d_kv;
  const attention = 3 * linear(d, inner) + linear(inner, d);
  const gated = String(c.feed_forward_proj ?? 'relu').startsWith('gated');
  const ff = (gated ? 2 : 1) * linear(d, c.d_ff) + linear(c.d_ff, d);
  const buckets = c.relative_attention_num_buckets * c.num_heads;
  const encoder = c.num_layers * (attention + ff + 2 * d) + buckets + d;
  const decoderLayers = c.num_decoder_layers ?? c.num_layers;
  const decoder = decoderLayers * (2 * attention + ff + 3 * d) + buckets + d;
  const tied = c.tie_word_embeddings ?? true;
  return c.vocab_size * d + encoder + decoder + (tied ? 0 : c.vocab_size * d);
}

// CodeGen (modeling_codegen.py): fused bias-free qkv and out projections, a biased MLP, one
// LayerNorm per layer (parallel attention and MLP), an untied LM head with a bias.
function codegen(c) {
  const H = c.n_embd;
  const I = c.n_inner ?? 4 * H;
  const layer = 2 * H + linear(H, 3 * H) + linear(H, H) + linear(H, I, true) + linear(I, H, true);
  return c.vocab_size * H + c.n_layer * layer + 2 * H + linear(H, c.vocab_size, true);
}

// BioGPT (modeling_biogpt.py): learned positions with an offset of 2, biased projections, the
// output projection tied to the embedding.
function biogpt(c) {
  const H = c.hidden_size;
  const I = c.intermediate_size;
  const layer = 4 * linear(H, H, true) + 2 * H + linear(H, I, true) + linear(I, H, true) + 2 * H;
  return c.vocab_size * H + (c.max_position_embeddings + 2) * H + c.num_hidden_layers * layer + 2 * H;
}

// GPTBigCode (modeling_gpt_bigcode.py): GPT-2's layout with one shared key/value head under
// multi-query attention.
function gptBigcode(c) {
  const H = c.n_embd;
  const I = c.n_inner ?? 4 * H;
  const qkv = c.multi_query === false ? 3 * H : H + 2 * (H / c.n_head);
  const layer = 2 * H + linear(H, qkv, true) + linear(H, H, true) + 2 * H + linear(H, I, true) + linear(I, H, true);
  return c.vocab_size * H + c.n_positions * H + c.n_layer * layer + 2 * H;
}

// GPT-Neo (modeling_gpt_neo.py): bias-free q/k/v, a biased out projection and MLP, tied head.
function gptNeo(c) {
  const H = c.hidden_size;
  const I = c.intermediate_size ?? 4 * H;
  const layer = 2 * H + 3 * linear(H, H) + linear(H, H, true) + 2 * H + linear(H, I, true) + linear(I, H, true);
  return c.vocab_size * H + c.max_position_embeddings * H + c.num_layers * layer + 2 * H;
}

// Phi-1/1.5/2 (modeling_phi.py): one LayerNorm per layer (parallel attention and MLP), biased
// q/k/v/dense and MLP, an untied LM head with a bias.
function phi(c) {
  const H = c.hidden_size;
  const I = c.intermediate_size;
  const layer = 2 * H + 4 * linear(H, H, true) + linear(H, I, true) + linear(I, H, true);
  return c.vocab_size * H + c.num_hidden_layers * layer + 2 * H + linear(H, c.vocab_size, true);
}

// Falcon (modeling_falcon.py): multi-query (7B) or grouped key/value heads with two LayerNorms
// per layer (the new decoder architecture, 40B/180B); linears biased when `bias`; tied head.
function falcon(c) {
  const H = c.hidden_size;
  const heads = c.num_attention_heads;
  const hd = H / heads;
  const bias = Boolean(c.bias);
  let qkv;
  let norms;
  if (c.new_decoder_architecture) {
    qkv = (heads + 2 * (c.num_kv_heads ?? heads)) * hd;
    norms = 2 * (c.num_ln_in_parallel_attn ?? 2) * H;
  } else {
    qkv = c.multi_query ? H + 2 * hd : 3 * H;
    norms = (c.parallel_attn === false ? 2 : 1) * 2 * H;
  }
  const F = c.ffn_hidden_size ?? 4 * H;
  const layer = norms + linear(H, qkv, bias) + linear(H, H, bias) + linear(H, F, bias) + linear(F, H, bias);
  const tied = c.tie_word_embeddings ?? true;
  return c.vocab_size * H + c.num_hidden_layers * layer + 2 * H + (tied ? 0 : c.vocab_size * H);
}

// BERT and ALBERT (modeling_bert.py, modeling_albert.py): word, position and token-type
// embeddings with a LayerNorm; post-norm layers; what the named architecture adds on top (the
// pooler, the masked-LM head with its tied decoder and bias, the classifier).
function bertHeads(c, H, E) {
  const arch = (c.architectures ?? ['BertModel'])[0];
  const pooler = linear(H, H, true);
  const mlm = linear(H, E, true) + 2 * E + c.vocab_size;
  const labels = c.num_labels ?? Object.keys(c.id2label ?? { 0: 0, 1: 1 }).length;
  if (arch.endsWith('ForMaskedLM')) return mlm;
  if (arch.endsWith('ForPreTraining')) return pooler + mlm + linear(H, 2, true);
  if (arch.endsWith('ForSequenceClassification')) return pooler + linear(H, labels, true);
  return pooler;
}
function encoderLayer(H, I) {
  return 4 * linear(H, H, true) + 2 * H + linear(H, I, true) + linear(I, H, true) + 2 * H;
}
function bert(c) {
  const H = c.hidden_size;
  const embeddings = (c.vocab_size + c.max_position_embeddings + c.type_vocab_size) * H + 2 * H;
  return embeddings + c.num_hidden_layers * encoderLayer(H, c.intermediate_size) + bertHeads(c, H, H);
}
// ALBERT shares one layer's parameters across every layer (one group of one layer).
function albert(c) {
  const H = c.hidden_size;
  const E = c.embedding_size;
  const embeddings = (c.vocab_size + c.max_position_embeddings + c.type_vocab_size) * E + 2 * E;
  const groups = c.num_hidden_groups ?? 1;
  const perGroup = (c.inner_group_num ?? 1) * encoderLayer(H, c.intermediate_size);
  return embeddings + linear(E, H, true) + groups * perGroup + bertHeads(c, H, E);
}

// The routed-expert decoders with a shared expert and dense first layers: DeepSeek-V3
// (modeling_deepseek_v3.py: multi-head latent attention) and GLM-4.5 (modeling_glm4_moe.py:
// grouped attention with a q/k/v bias). The router's score-correction bias is a buffer, not a
// parameter; the multi-token-prediction layer (num_nextn_predict_layers) is not loaded.
function routedDecoder(c, attention) {
  const H = c.hidden_size;
  const gated = (inner) => 3 * H * inner;
  let layers = 0;
  for (let i = 0; i < c.num_hidden_layers; i += 1) {
    const moe = i >= c.first_k_dense_replace && i % (c.moe_layer_freq ?? 1) === 0;
    const mlp = moe
      ? H * c.n_routed_experts + c.n_routed_experts * gated(c.moe_intermediate_size) +
        gated(c.moe_intermediate_size * c.n_shared_experts)
      : gated(c.intermediate_size);
    layers += attention + mlp + 2 * H;
  }
  const tied = c.tie_word_embeddings ?? false;
  return c.vocab_size * H + layers + H + (tied ? 0 : c.vocab_size * H);
}
function deepseekV3(c) {
  const H = c.hidden_size;
  const heads = c.num_attention_heads;
  const qkHead = c.qk_nope_head_dim + c.qk_rope_head_dim;
  const q = c.q_lora_rank
    ? linear(H, c.q_lora_rank) + c.q_lora_rank + linear(c.q_lora_rank, heads * qkHead)
    : linear(H, heads * qkHead);
  const kv = linear(H, c.kv_lora_rank + c.qk_rope_head_dim) + c.kv_lora_rank +
    linear(c.kv_lora_rank, heads * (c.qk_nope_head_dim + c.v_head_dim));
  return routedDecoder(c, q + kv + linear(heads * c.v_head_dim, H));
}
function glm4Moe(c) {
  const H = c.hidden_size;
  const heads = c.num_attention_heads;
  const kv = c.num_key_value_heads;
  const hd = c.head_dim ?? H / heads;
  const bias = Boolean(c.attention_bias);
  const norms = c.use_qk_norm ? 2 * hd : 0;
  return routedDecoder(c, linear(H, heads * hd, bias) + 2 * linear(H, kv * hd, bias) + linear(heads * hd, H) + norms);
}

// gpt-oss (modeling_gpt_oss.py): biased grouped attention with a learned sink per head; every
// layer's experts keep fused, biased gate-up and down projections behind a biased router.
function gptOss(c) {
  const H = c.hidden_size;
  const heads = c.num_attention_heads;
  const hd = c.head_dim;
  const kv = c.num_key_value_heads;
  const E = c.num_local_experts;
  const I = c.intermediate_size;
  const attention = linear(H, heads * hd, true) + 2 * linear(H, kv * hd, true) + linear(heads * hd, H, true) + heads;
  const experts = linear(H, E, true) + E * (linear(H, 2 * I, true) + linear(I, H, true));
  const tied = c.tie_word_embeddings ?? false;
  return c.vocab_size * H + c.num_hidden_layers * (attention + experts + 2 * H) + H + (tied ? 0 : c.vocab_size * H);
}

// GPT-J (modeling_gptj.py): one LayerNorm per layer (parallel attention and MLP), unbiased
// q/k/v/out projections, a biased fc_in/fc_out MLP of n_inner (4 x n_embd when unset), a final
// LayerNorm and an untied LM head with a bias.
function gptj(c) {
  const H = c.n_embd;
  const I = c.n_inner ?? 4 * H;
  const layer = 2 * H + 4 * linear(H, H) + linear(H, I, true) + linear(I, H, true);
  return c.vocab_size * H + c.n_layer * layer + 2 * H + linear(H, c.vocab_size, true);
}

// SigLIP's vision tower (modeling_siglip.py SiglipVisionTransformer, no pooling head): a biased
// patch convolution, a position embedding per patch, pre-norm layers of biased attention
// projections and a biased two-matrix MLP, a final LayerNorm. Unset keys take
// SiglipVisionConfig's defaults.
function siglipVision(v) {
  const D = v.hidden_size ?? 768;
  const I = v.intermediate_size ?? 3072;
  const L = v.num_hidden_layers ?? 12;
  const patch = v.patch_size ?? 16;
  const patches = ((v.image_size ?? 224) / patch) ** 2;
  const layer = 2 * D + 4 * linear(D, D, true) + 2 * D + linear(D, I, true) + linear(I, D, true);
  return (v.num_channels ?? 3) * patch * patch * D + D + patches * D + L * layer + 2 * D;
}

// Gemma 3 with vision (modeling_gemma3.py Gemma3ForConditionalGeneration): the SigLIP tower, the
// projector (a vision x text matrix and an RMSNorm of the vision width) and the text model,
// whose unset keys take Gemma3TextConfig's defaults (its file lists only what differs).
function gemma3(c) {
  const text = {
    vocab_size: 262208, hidden_size: 2304, intermediate_size: 9216, num_hidden_layers: 26,
    num_attention_heads: 8, num_key_value_heads: 4, head_dim: 256, ...c.text_config,
  };
  const vision = c.vision_config ?? {};
  const projector = (vision.hidden_size ?? 768) * text.hidden_size + (vision.hidden_size ?? 768);
  return llamaLike(text, 'gemma3_text') + siglipVision(vision) + projector;
}

// StarCoder2 (modeling_starcoder2.py): grouped-query q/k/v/o and an ungated c_fc/c_proj MLP, all
// biased unless use_bias is false, two LayerNorms a layer, a final LayerNorm, the head tied
// unless tie_word_embeddings is false (Starcoder2Config's defaults).
function starcoder2(c) {
  const H = c.hidden_size;
  const heads = c.num_attention_heads;
  const hd = H / heads;
  const kv = (c.num_key_value_heads ?? heads) * hd;
  const bias = c.use_bias ?? true;
  const layer = 2 * linear(H, H, bias) + 2 * linear(H, kv, bias) + linear(H, c.intermediate_size, bias)
    + linear(c.intermediate_size, H, bias) + 4 * H;
  const tied = c.tie_word_embeddings ?? true;
  return c.vocab_size * H + c.num_hidden_layers * layer + 2 * H + (tied ? 0 : c.vocab_size * H);
}

// Mistral 3 (modeling_mistral3.py, modeling_pixtral.py): PixtralVisionModel (a bias-free patch
// convolution, ln_pre, per layer two RMSNorms, q/k/v/o over the vision width and a gated MLP, all
// bias-free), Mistral3MultiModalProjector (an RMSNorm, the spatial_merge_size^2 patch merger,
// linear_1 from the vision width per feature layer to the text width, linear_2), and Mistral.
function mistral3(c) {
  const v = c.vision_config;
  const H = v.hidden_size;
  const layer = 2 * H + 4 * linear(H, H) + 2 * linear(H, v.intermediate_size) + linear(v.intermediate_size, H);
  const vision = v.num_channels * v.patch_size ** 2 * H + H + v.num_hidden_layers * layer;
  const text = c.text_config;
  const layers = Array.isArray(c.vision_feature_layer) ? c.vision_feature_layer.length : 1;
  const bias = c.multimodal_projector_bias ?? true;
  const projector = H + linear(H * c.spatial_merge_size ** 2, H) + linear(H * layers, text.hidden_size, bias)
    + linear(text.hidden_size, text.hidden_size, bias);
  return vision + projector + llamaLike(text, 'mistral');
}

export function handCount(config) {
  const type = config.model_type;
  switch (type) {
    // Granite (modeling_granite.py) is Llama's structure with scalar multipliers, no parameters.
    case 'llama': case 'mistral': case 'qwen2': case 'qwen3': case 'phi3': case 'olmo2': case 'granite':
    case 'gemma': case 'gemma2': case 'gemma3_text': case 'mixtral': case 'qwen2_moe': case 'qwen3_moe':
      return llamaLike(config, type);
    case 'gpt2': return gpt2(config);
    case 'opt': return opt(config);
    case 'bloom': return bloom(config);
    case 'gpt_neox': return gptNeox(config);
    case 't5': case 'mt5': return t5(config);
    case 'codegen': return codegen(config);
    case 'biogpt': return biogpt(config);
    case 'gpt_bigcode': return gptBigcode(config);
    case 'gpt_neo': return gptNeo(config);
    case 'phi': return phi(config);
    case 'falcon': return falcon(config);
    case 'bert': return bert(config);
    case 'albert': return albert(config);
    case 'deepseek_v3': return deepseekV3(config);
    case 'glm4_moe': return glm4Moe(config);
    case 'gpt_oss': return gptOss(config);
    case 'gptj': return gptj(config);
    case 'gemma3': return gemma3(config);
    case 'starcoder2': return starcoder2(config);
    case 'mistral3': return mistral3(config);
    default: return null;
  }
}
