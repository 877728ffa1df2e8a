// GPT-style decoders with LayerNorm. Module names, shapes and registration order follow each
// family's transformers modeling file (models/<type>/modeling_<type>.py), checked tensor by
// tensor against transformers 5.17 in tests/golden/hf_param_counts.json.

#include "model/architectures.hpp"
#include "model/tensor_builder.hpp"

namespace gpumem {

namespace {

constexpr auto attn = tensor_role::attention;
constexpr auto mlp = tensor_role::mlp;

std::string block(const std::string& stack_prefix, std::uint64_t i) {
  return stack_prefix + std::to_string(i) + ".";
}

// OPT and BioGPT share fairseq's decoder block: k/v/q/out projections, post-attention norm,
// fc1/fc2, final norm (modeling_opt.py OPTDecoderLayer, modeling_biogpt.py BioGptDecoderLayer).
void fairseq_block(tensor_builder& add, const model_spec& spec, bool bias, bool affine_norms) {
  const auto h = spec.hidden_size;
  add.linear("self_attn.k_proj", h, h, bias, attn);
  add.linear("self_attn.v_proj", h, h, bias, attn);
  add.linear("self_attn.q_proj", h, h, bias, attn);
  add.linear("self_attn.out_proj", h, h, bias, attn);
  if (affine_norms) add.layer_norm("self_attn_layer_norm", h);
  add.linear("fc1", h, spec.intermediate_size, bias, mlp);
  add.linear("fc2", spec.intermediate_size, h, bias, mlp);
  if (affine_norms) add.layer_norm("final_layer_norm", h);
}

// Separate q, k, v and output projections over grouped-query heads (Phi's and StarCoder2's
// attention), each biased when `bias`.
void qkv_out(tensor_builder& add, const model_spec& spec, bool bias, const char* out) {
  const auto h = spec.hidden_size;
  const auto q = spec.num_heads * spec.head_dim;
  const auto kv = spec.num_kv_heads * spec.head_dim;
  add.linear("self_attn.q_proj", h, q, bias, attn);
  add.linear("self_attn.k_proj", h, kv, bias, attn);
  add.linear("self_attn.v_proj", h, kv, bias, attn);
  add.linear(std::string("self_attn.") + out, q, h, bias, attn);
}

}  // namespace

void build_opt(config_reader& cfg, model_spec& spec) {
  spec.architecture = "OPTForCausalLM";
  spec.hidden_size = cfg.required({"hidden_size"}, max_width);
  spec.vocab_size = cfg.required({"vocab_size"}, max_vocab);
  // OPTConfig's ffn_dim, or the validation format's normalised intermediate_size.
  spec.intermediate_size = cfg.required({"ffn_dim", "intermediate_size"}, max_width);
  const auto layers = cfg.required({"num_hidden_layers"}, max_layers);
  read_heads(cfg, spec, {"num_attention_heads"}, {"num_attention_heads"});
  spec.max_positions = cfg.optional({"max_position_embeddings"}, 2048, max_positions);
  spec.embedding_dim = cfg.optional({"word_embed_proj_dim"}, spec.hidden_size, max_width);
  const bool pre_norm = cfg.flag("do_layer_norm_before", true);
  const bool final_norm = pre_norm && !cfg.flag("_remove_final_layer_norm", false);
  const bool bias = cfg.flag("enable_bias", true);
  const bool affine = cfg.flag("layer_norm_elementwise_affine", true);
  spec.tied_embeddings = cfg.flag("tie_word_embeddings", true);
  spec.activation = cfg.text("activation_function", "relu");
  spec.attention_dropout = cfg.fraction({"attention_dropout"});
  spec.hidden_dropout = cfg.fraction({"dropout"}, 0.1);  // OPTConfig default
  // OPTDecoder drops out the embeddings plus positions (after project_in) at the same rate.
  if (spec.hidden_dropout > 0) spec.embedding_dropout_features = spec.hidden_size;
  add_uniform_layers(spec, stack_kind::decoder, layers);

  tensor_builder add(spec);
  add.scope("model.decoder.");
  add.embedding("embed_tokens", spec.vocab_size, spec.embedding_dim, tensor_role::token_embedding);
  // OPTLearnedPositionalEmbedding keeps 2 extra rows (fairseq's padding offset).
  add.embedding("embed_positions", spec.max_positions + 2, spec.hidden_size,
                tensor_role::position_embedding);
  if (spec.embedding_dim != spec.hidden_size) {
    add.linear("project_out", spec.hidden_size, spec.embedding_dim, false, tensor_role::projection);
    add.linear("project_in", spec.embedding_dim, spec.hidden_size, false, tensor_role::projection);
  }
  if (final_norm && affine) add.layer_norm("final_layer_norm", spec.hidden_size);
  for (std::uint64_t i = 0; i < layers; ++i) {
    add.scope(block("model.decoder.layers.", i), static_cast<int>(i));
    fairseq_block(add, spec, bias, affine);
  }
  add_lm_head(add, spec, "lm_head", false);
}

void build_biogpt(config_reader& cfg, model_spec& spec) {
  spec.architecture = "BioGptForCausalLM";
  spec.hidden_size = cfg.required({"hidden_size"}, max_width);
  spec.embedding_dim = spec.hidden_size;
  spec.vocab_size = cfg.required({"vocab_size"}, max_vocab);
  spec.intermediate_size = cfg.required({"intermediate_size"}, max_width);
  const auto layers = cfg.required({"num_hidden_layers"}, max_layers);
  read_heads(cfg, spec, {"num_attention_heads"}, {"num_attention_heads"});
  spec.max_positions = cfg.optional({"max_position_embeddings"}, 1024, max_positions);
  spec.tied_embeddings = cfg.flag("tie_word_embeddings", true);
  spec.activation = cfg.text("hidden_act", "gelu");
  spec.attention_dropout = cfg.fraction({"attention_probs_dropout_prob"}, 0.1);  // BioGptConfig
  spec.hidden_dropout = cfg.fraction({"hidden_dropout_prob"}, 0.1);
  // BioGptModel drops out the scaled embeddings plus positions at the same rate.
  if (spec.hidden_dropout > 0) spec.embedding_dropout_features = spec.hidden_size;
  add_uniform_layers(spec, stack_kind::decoder, layers);

  tensor_builder add(spec);
  add.scope("biogpt.");
  add.embedding("embed_tokens", spec.vocab_size, spec.hidden_size, tensor_role::token_embedding);
  // BioGptLearnedPositionalEmbedding: the same 2-row offset as OPT.
  add.embedding("embed_positions", spec.max_positions + 2, spec.hidden_size,
                tensor_role::position_embedding);
  for (std::uint64_t i = 0; i < layers; ++i) {
    add.scope(block("biogpt.layers.", i), static_cast<int>(i));
    fairseq_block(add, spec, true, true);
  }
  add.scope("biogpt.");
  add.layer_norm("layer_norm", spec.hidden_size);
  add_lm_head(add, spec, "output_projection", false);
}

namespace {

// GPT-2 and GPT-BigCode: wte, wpe, blocks of ln_1 / c_attn / c_proj / ln_2 / c_fc / c_proj,
// ln_f (modeling_gpt2.py, modeling_gpt_bigcode.py). GPT-2 uses Conv1D, BigCode nn.Linear.
void gpt2_like(config_reader& cfg, model_spec& spec, bool conv1d, bool multi_query) {
  spec.hidden_size = cfg.required({"n_embd", "hidden_size"}, max_width);
  spec.embedding_dim = spec.hidden_size;
  spec.vocab_size = cfg.required({"vocab_size"}, max_vocab);
  const auto layers = cfg.required({"n_layer", "num_hidden_layers"}, max_layers);
  read_heads(cfg, spec, {"n_head", "num_attention_heads"}, {"n_head", "num_attention_heads"});
  if (multi_query) spec.num_kv_heads = 1;
  spec.intermediate_size =
      cfg.optional({"n_inner", "intermediate_size"}, 4 * spec.hidden_size, max_width);
  spec.max_positions =
      cfg.optional({"n_positions", "max_position_embeddings"}, 1024, max_positions);
  spec.tied_embeddings = cfg.flag("tie_word_embeddings", true);
  spec.activation = cfg.text("activation_function", "gelu_new");
  // GPT2Config and GPTBigCodeConfig default every dropout to 0.1.
  spec.attention_dropout = cfg.fraction({"attn_pdrop"}, 0.1);
  spec.hidden_dropout = cfg.fraction({"resid_pdrop"}, 0.1);
  // self.drop(inputs_embeds + position_embeds)
  if (cfg.fraction({"embd_pdrop"}, 0.1) > 0) spec.embedding_dropout_features = spec.hidden_size;
  add_uniform_layers(spec, stack_kind::decoder, layers);

  const auto h = spec.hidden_size;
  const auto qkv = h + 2 * spec.num_kv_heads * spec.head_dim;
  tensor_builder add(spec);
  auto project = [&](const std::string& name, std::uint64_t in, std::uint64_t out,
                     tensor_role role) {
    if (conv1d) {
      add.conv1d(name, in, out, role);
    } else {
      add.linear(name, in, out, true, role);
    }
  };
  add.scope("transformer.");
  add.embedding("wte", spec.vocab_size, h, tensor_role::token_embedding);
  add.embedding("wpe", spec.max_positions, h, tensor_role::position_embedding);
  for (std::uint64_t i = 0; i < layers; ++i) {
    add.scope(block("transformer.h.", i), static_cast<int>(i));
    add.layer_norm("ln_1", h);
    project("attn.c_attn", h, qkv, attn);
    project("attn.c_proj", h, h, attn);
    add.layer_norm("ln_2", h);
    project("mlp.c_fc", h, spec.intermediate_size, mlp);
    project("mlp.c_proj", spec.intermediate_size, h, mlp);
  }
  add.scope("transformer.");
  add.layer_norm("ln_f", h);
  add_lm_head(add, spec, "lm_head", false);
}

}  // namespace

void build_gpt2(config_reader& cfg, model_spec& spec) {
  spec.architecture = "GPT2LMHeadModel";
  gpt2_like(cfg, spec, true, false);
}

void build_gpt_bigcode(config_reader& cfg, model_spec& spec) {
  spec.architecture = "GPTBigCodeForCausalLM";
  // GPTBigCodeConfig.multi_query defaults to true: one shared key/value head.
  gpt2_like(cfg, spec, false, cfg.flag("multi_query", true));
}

void build_gpt_neo(config_reader& cfg, model_spec& spec) {
  spec.architecture = "GPTNeoForCausalLM";
  spec.hidden_size = cfg.required({"hidden_size"}, max_width);
  spec.embedding_dim = spec.hidden_size;
  spec.vocab_size = cfg.required({"vocab_size"}, max_vocab);
  const auto layers = cfg.required({"num_layers"}, max_layers);
  read_heads(cfg, spec, {"num_heads"}, {"num_heads"});
  spec.intermediate_size = cfg.optional({"intermediate_size"}, 4 * spec.hidden_size, max_width);
  spec.max_positions = cfg.optional({"max_position_embeddings"}, 2048, max_positions);
  spec.tied_embeddings = cfg.flag("tie_word_embeddings", true);
  spec.activation = cfg.text("activation_function", "gelu_new");
  spec.attention_dropout = cfg.fraction({"attention_dropout"});
  spec.hidden_dropout = cfg.fraction({"resid_dropout"});
  if (cfg.fraction({"embed_dropout"}) > 0) spec.embedding_dropout_features = spec.hidden_size;
  // GPTNeoForCausalLM computes the logits in fp32 (`lm_logits.to(torch.float32)`; LLMem's
  // size_estimator.py counts them with 4 bytes).
  spec.logits_fp32 = true;
  add_uniform_layers(spec, stack_kind::decoder, layers);
  // attention_layers lists "global"/"local" per block; local blocks see window_size tokens.
  const auto window = cfg.optional({"window_size"}, 256, max_positions);
  const auto kinds = cfg.text_list("attention_layers");
  for (std::size_t i = 0; i < kinds.size() && i < spec.layers.size(); ++i) {
    if (kinds[i] == "local") {
      spec.layers[i].attention = attention_pattern::sliding;
      spec.layers[i].sliding_window_tokens = window;
    }
  }

  const auto h = spec.hidden_size;
  tensor_builder add(spec);
  add.scope("transformer.");
  add.embedding("wte", spec.vocab_size, h, tensor_role::token_embedding);
  add.embedding("wpe", spec.max_positions, h, tensor_role::position_embedding);
  for (std::uint64_t i = 0; i < layers; ++i) {
    add.scope(block("transformer.h.", i), static_cast<int>(i));
    add.layer_norm("ln_1", h);
    add.linear("attn.attention.k_proj", h, h, false, attn);
    add.linear("attn.attention.v_proj", h, h, false, attn);
    add.linear("attn.attention.q_proj", h, h, false, attn);
    add.linear("attn.attention.out_proj", h, h, true, attn);
    add.layer_norm("ln_2", h);
    add.linear("mlp.c_fc", h, spec.intermediate_size, true, mlp);
    add.linear("mlp.c_proj", spec.intermediate_size, h, true, mlp);
  }
  add.scope("transformer.");
  add.layer_norm("ln_f", h);
  add_lm_head(add, spec, "lm_head", false);
}

namespace {

// CodeGen and GPT-J: one LayerNorm feeding attention and MLP in parallel, rotary positions,
// an LM head with bias (modeling_codegen.py, modeling_gptj.py).
void parallel_rotary(config_reader& cfg, model_spec& spec, bool fused_qkv, bool tie_default) {
  spec.hidden_size = cfg.required({"n_embd"}, max_width);
  spec.embedding_dim = spec.hidden_size;
  spec.vocab_size = cfg.required({"vocab_size"}, max_vocab);
  const auto layers = cfg.required({"n_layer"}, max_layers);
  read_heads(cfg, spec, {"n_head"}, {"n_head"});
  spec.intermediate_size =
      cfg.optional({"n_inner", "intermediate_size"}, 4 * spec.hidden_size, max_width);
  spec.max_positions = cfg.optional({"n_positions"}, 2048, max_positions);
  spec.tied_embeddings = cfg.flag("tie_word_embeddings", tie_default);
  spec.activation = cfg.text("activation_function", "gelu_new");
  spec.attention_dropout = cfg.fraction({"attn_pdrop"});
  spec.hidden_dropout = cfg.fraction({"resid_pdrop"});
  if (cfg.fraction({"embd_pdrop"}) > 0) spec.embedding_dropout_features = spec.hidden_size;
  spec.parallel_block = true;
  add_uniform_layers(spec, stack_kind::decoder, layers);

  const auto h = spec.hidden_size;
  tensor_builder add(spec);
  add.scope("transformer.");
  add.embedding("wte", spec.vocab_size, h, tensor_role::token_embedding);
  for (std::uint64_t i = 0; i < layers; ++i) {
    add.scope(block("transformer.h.", i), static_cast<int>(i));
    add.layer_norm("ln_1", h);
    if (fused_qkv) {
      add.linear("attn.qkv_proj", h, 3 * h, false, attn);
    } else {
      add.linear("attn.k_proj", h, h, false, attn);
      add.linear("attn.v_proj", h, h, false, attn);
      add.linear("attn.q_proj", h, h, false, attn);
    }
    add.linear("attn.out_proj", h, h, false, attn);
    add.linear("mlp.fc_in", h, spec.intermediate_size, true, mlp);
    add.linear("mlp.fc_out", spec.intermediate_size, h, true, mlp);
  }
  add.scope("transformer.");
  add.layer_norm("ln_f", h);
  add_lm_head(add, spec, "lm_head", true);
}

}  // namespace

void build_codegen(config_reader& cfg, model_spec& spec) {
  spec.architecture = "CodeGenForCausalLM";
  // CodeGenForCausalLM casts the logits to fp32 (`lm_logits = self.lm_head(...).to(torch.float32)`;
  // LLMem counts them with 4 bytes). CodeGenConfig passes tie_word_embeddings=False by default
  // (transformers configuration_codegen.py), as GPTJConfig does: a separate LM head.
  spec.logits_fp32 = true;
  parallel_rotary(cfg, spec, true, false);
}

void build_gptj(config_reader& cfg, model_spec& spec) {
  spec.architecture = "GPTJForCausalLM";
  // GPTJConfig passes tie_word_embeddings=False by default.
  parallel_rotary(cfg, spec, false, false);
}

void build_gpt_neox(config_reader& cfg, model_spec& spec) {
  spec.architecture = "GPTNeoXForCausalLM";
  spec.hidden_size = cfg.required({"hidden_size"}, max_width);
  spec.embedding_dim = spec.hidden_size;
  spec.vocab_size = cfg.required({"vocab_size"}, max_vocab);
  spec.intermediate_size = cfg.required({"intermediate_size"}, max_width);
  const auto layers = cfg.required({"num_hidden_layers"}, max_layers);
  read_heads(cfg, spec, {"num_attention_heads"}, {"num_attention_heads"});
  spec.max_positions = cfg.optional({"max_position_embeddings"}, 2048, max_positions);
  spec.tied_embeddings = cfg.flag("tie_word_embeddings", false);  // GPTNeoXConfig default
  spec.parallel_block = cfg.flag("use_parallel_residual", true);
  // GPTNeoXLayer: mlp(post_attention_layernorm(x)) beside attention(input_layernorm(x)).
  spec.parallel_mlp_norm = spec.parallel_block;
  // GPTNeoXAttention: q, k, v are chunks of query_key_value's output; the rotary half of q and k
  // is concatenated back into new tensors.
  spec.values_view_fused_qkv = true;
  spec.activation = cfg.text("hidden_act", "gelu");
  spec.attention_dropout = cfg.fraction({"attention_dropout"});
  spec.hidden_dropout = cfg.fraction({"hidden_dropout"});
  // GPTNeoXModel.emb_dropout drops out the embeddings at hidden_dropout.
  if (spec.hidden_dropout > 0) spec.embedding_dropout_features = spec.hidden_size;
  const bool bias = cfg.flag("attention_bias", true);
  add_uniform_layers(spec, stack_kind::decoder, layers);

  const auto h = spec.hidden_size;
  tensor_builder add(spec);
  add.scope("gpt_neox.");
  add.embedding("embed_in", spec.vocab_size, h, tensor_role::token_embedding);
  for (std::uint64_t i = 0; i < layers; ++i) {
    add.scope(block("gpt_neox.layers.", i), static_cast<int>(i));
    add.layer_norm("input_layernorm", h);
    add.layer_norm("post_attention_layernorm", h);
    add.linear("attention.query_key_value", h, 3 * h, bias, attn);
    add.linear("attention.dense", h, h, bias, attn);
    add.linear("mlp.dense_h_to_4h", h, spec.intermediate_size, true, mlp);
    add.linear("mlp.dense_4h_to_h", spec.intermediate_size, h, true, mlp);
  }
  add.scope("gpt_neox.");
  add.layer_norm("final_layer_norm", h);
  add_lm_head(add, spec, "lm_head", false);  // `embed_out` before transformers 5
}

void build_bloom(config_reader& cfg, model_spec& spec) {
  spec.architecture = "BloomForCausalLM";
  spec.hidden_size = cfg.required({"hidden_size", "n_embed"}, max_width);
  spec.embedding_dim = spec.hidden_size;
  spec.vocab_size = cfg.required({"vocab_size"}, max_vocab);
  const auto layers = cfg.required({"n_layer", "num_hidden_layers"}, max_layers);
  read_heads(cfg, spec, {"n_head", "num_attention_heads"}, {"n_head", "num_attention_heads"});
  spec.intermediate_size = 4 * spec.hidden_size;  // BloomMLP: dense_h_to_4h is fixed at 4x
  spec.tied_embeddings = cfg.flag("tie_word_embeddings", true);
  spec.activation = "bloom_gelu";
  spec.eager_softmax_fp32 = true;  // modeling_bloom.py BloomAttention: softmax(dtype=float32)
  spec.alibi = true;               // modeling_bloom.py build_alibi_tensor: no rotary embedding
  spec.attention_dropout = cfg.fraction({"attention_dropout"});
  spec.hidden_dropout = cfg.fraction({"hidden_dropout"});
  add_uniform_layers(spec, stack_kind::decoder, layers);

  const auto h = spec.hidden_size;
  tensor_builder add(spec);
  add.scope("transformer.");
  add.embedding("word_embeddings", spec.vocab_size, h, tensor_role::token_embedding);
  add.layer_norm("word_embeddings_layernorm", h);
  for (std::uint64_t i = 0; i < layers; ++i) {
    add.scope(block("transformer.h.", i), static_cast<int>(i));
    add.layer_norm("input_layernorm", h);
    add.linear("self_attention.query_key_value", h, 3 * h, true, attn);
    add.linear("self_attention.dense", h, h, true, attn);
    add.layer_norm("post_attention_layernorm", h);
    add.linear("mlp.dense_h_to_4h", h, spec.intermediate_size, true, mlp);
    add.linear("mlp.dense_4h_to_h", spec.intermediate_size, h, true, mlp);
  }
  add.scope("transformer.");
  add.layer_norm("ln_f", h);
  add_lm_head(add, spec, "lm_head", false);
}

void build_falcon(config_reader& cfg, model_spec& spec) {
  spec.architecture = "FalconForCausalLM";
  spec.hidden_size = cfg.required({"hidden_size"}, max_width);
  spec.embedding_dim = spec.hidden_size;
  spec.vocab_size = cfg.required({"vocab_size"}, max_vocab);
  const auto layers = cfg.required({"num_hidden_layers"}, max_layers);
  read_heads(cfg, spec, {"num_attention_heads"}, {"num_kv_heads"});
  const bool new_arch = cfg.flag("new_decoder_architecture", false);
  // modeling_falcon.py FalconAttention: the new architecture uses num_kv_heads; otherwise
  // multi_query means one key/value head and its absence means full multi-head attention.
  if (!new_arch) spec.num_kv_heads = cfg.flag("multi_query", true) ? 1 : spec.num_heads;
  const bool bias = cfg.flag("bias", false);
  spec.parallel_block = cfg.flag("parallel_attn", true);
  spec.intermediate_size = cfg.optional({"ffn_hidden_size"}, 4 * spec.hidden_size, max_width);
  spec.max_positions = cfg.optional({"max_position_embeddings"}, 2048, max_positions);
  spec.tied_embeddings = cfg.flag("tie_word_embeddings", true);
  spec.activation = cfg.text("activation", "gelu");
  spec.attention_dropout = cfg.fraction({"attention_dropout"});
  spec.hidden_dropout = cfg.fraction({"hidden_dropout"});
  const auto norms_in_parallel = cfg.optional({"num_ln_in_parallel_attn"}, 2, 2);
  add_uniform_layers(spec, stack_kind::decoder, layers);

  const auto h = spec.hidden_size;
  const auto qkv = (spec.num_heads + 2 * spec.num_kv_heads) * spec.head_dim;
  tensor_builder add(spec);
  add.scope("transformer.");
  add.embedding("word_embeddings", spec.vocab_size, h, tensor_role::token_embedding);
  for (std::uint64_t i = 0; i < layers; ++i) {
    add.scope(block("transformer.h.", i), static_cast<int>(i));
    add.linear("self_attention.query_key_value", h, qkv, bias, attn);
    add.linear("self_attention.dense", spec.num_heads * spec.head_dim, h, bias, attn);
    add.linear("mlp.dense_h_to_4h", h, spec.intermediate_size, bias, mlp);
    add.linear("mlp.dense_4h_to_h", spec.intermediate_size, h, bias, mlp);
    if (new_arch && norms_in_parallel == 2) {
      spec.parallel_mlp_norm = true;
      add.layer_norm("ln_attn", h);
      add.layer_norm("ln_mlp", h);
    } else {
      add.layer_norm("input_layernorm", h);
      if (!spec.parallel_block) add.layer_norm("post_attention_layernorm", h);
    }
  }
  add.scope("transformer.");
  add.layer_norm("ln_f", h);
  add_lm_head(add, spec, "lm_head", false);
}

void build_phi(config_reader& cfg, model_spec& spec) {
  spec.architecture = "PhiForCausalLM";
  const auto layers = read_standard_dims(cfg, spec);
  spec.max_positions = cfg.optional({"max_position_embeddings"}, 2048, max_positions);
  spec.tied_embeddings = cfg.flag("tie_word_embeddings", false);  // PhiConfig default
  spec.parallel_block = true;
  spec.activation = cfg.text("hidden_act", "gelu_new");
  spec.attention_dropout = cfg.fraction({"attention_dropout"});
  spec.hidden_dropout = cfg.fraction({"resid_pdrop"});
  if (cfg.fraction({"embd_pdrop"}) > 0) spec.embedding_dropout_features = spec.hidden_size;
  spec.eager_softmax_fp32 = true;  // modeling_phi.py eager attention: softmax(dtype=float32)
  const bool qk_norm = cfg.flag("qk_layernorm", false);
  add_uniform_layers(spec, stack_kind::decoder, layers);

  const auto h = spec.hidden_size;
  tensor_builder add(spec);
  add.scope("model.");
  add.embedding("embed_tokens", spec.vocab_size, h, tensor_role::token_embedding);
  for (std::uint64_t i = 0; i < layers; ++i) {
    add.scope(block("model.layers.", i), static_cast<int>(i));
    qkv_out(add, spec, true, "dense");
    if (qk_norm) {
      add.layer_norm("self_attn.q_layernorm", spec.head_dim);
      add.layer_norm("self_attn.k_layernorm", spec.head_dim);
    }
    add.linear("mlp.fc1", h, spec.intermediate_size, true, mlp);
    add.linear("mlp.fc2", spec.intermediate_size, h, true, mlp);
    add.layer_norm("input_layernorm", h);
  }
  add.scope("model.");
  add.layer_norm("final_layernorm", h);
  add_lm_head(add, spec, "lm_head", true);
}

// StarCoder2 (modeling_starcoder2.py Starcoder2DecoderLayer): Mistral's rotary, grouped-query
// attention over a sliding window when one is set, with every linear biased by use_bias, two
// LayerNorms a layer, an ungated MLP (c_fc, gelu_pytorch_tanh, c_proj), residual dropout after
// each sublayer, a final LayerNorm, the LM head tied by default (Starcoder2Config defaults:
// use_bias, tie_word_embeddings True, 4096 positions).
void build_starcoder2(config_reader& cfg, model_spec& spec) {
  spec.architecture = "Starcoder2ForCausalLM";
  const auto layers = read_standard_dims(cfg, spec);
  spec.max_positions = cfg.optional({"max_position_embeddings"}, 4096, max_positions);
  spec.tied_embeddings = cfg.flag("tie_word_embeddings", true);
  spec.activation = cfg.text("hidden_act", "gelu_pytorch_tanh");
  spec.attention_dropout = cfg.fraction({"attention_dropout"});
  spec.hidden_dropout = cfg.fraction({"residual_dropout"});
  if (cfg.fraction({"embedding_dropout"}) > 0) spec.embedding_dropout_features = spec.hidden_size;
  spec.eager_softmax_fp32 = true;  // eager_attention_forward: softmax(dtype=torch.float32)
  spec.transformers_repeat_kv = spec.num_kv_heads < spec.num_heads;  // repeat_kv, as Llama's
  const bool bias = cfg.flag("use_bias", true);
  const auto window = cfg.optional({"sliding_window"}, 0, max_positions, 0);
  add_uniform_layers(spec, stack_kind::decoder, layers);
  for (auto& layer : spec.layers) {
    if (window == 0) continue;
    layer.attention = attention_pattern::sliding;
    layer.sliding_window_tokens = window;
  }

  const auto h = spec.hidden_size;
  tensor_builder add(spec);
  add.scope("model.");
  add.embedding("embed_tokens", spec.vocab_size, h, tensor_role::token_embedding);
  for (std::uint64_t i = 0; i < layers; ++i) {
    add.scope(block("model.layers.", i), static_cast<int>(i));
    qkv_out(add, spec, bias, "o_proj");
    add.linear("mlp.c_fc", h, spec.intermediate_size, bias, mlp);
    add.linear("mlp.c_proj", spec.intermediate_size, h, bias, mlp);
    add.layer_norm("input_layernorm", h);
    add.layer_norm("post_attention_layernorm", h);
  }
  add.scope("model.");
  add.layer_norm("norm", h);
  add_lm_head(add, spec, "lm_head", false);
}

}  // namespace gpumem
