// Multimodal wrappers whose language model is a family gpumem knows: Gemma 3
// (Gemma3ForConditionalGeneration, after modeling_gemma3.py and modeling_siglip.py), Llama 4
// (Llama4ForConditionalGeneration, modeling_llama4.py) and Mistral 3 (Mistral Small 3.1/3.2:
// Mistral3ForConditionalGeneration, modeling_mistral3.py and modeling_pixtral.py). Text-only
// fine-tuning and serving load the vision tower and projector but never run them.

#include <nlohmann/json.hpp>

#include "model/architectures.hpp"
#include "model/tensor_builder.hpp"

namespace gpumem {

namespace {

// Gemma3TextConfig's defaults for the keys the released multimodal configs leave out of
// text_config (transformers models/gemma3/configuration_gemma3.py).
nlohmann::ordered_json gemma3_text_defaults() {
  return {{"vocab_size", 262208},
          {"num_attention_heads", 8},
          {"num_key_value_heads", 4},
          {"head_dim", 256},
          {"hidden_activation", "gelu_pytorch_tanh"},
          {"max_position_embeddings", 131072},
          {"sliding_window", 4096},
          {"tie_word_embeddings", true}};
}

// The dimensions every vision tower here reads from its vision_config (num_channels: 3 by
// default in SiglipVisionConfig, Llama4VisionConfig and PixtralVisionConfig).
struct vision_dims {
  std::uint64_t hidden, inner, layers, patch, channels;
};
vision_dims read_vision_dims(config_reader& cfg) {
  return {cfg.required({"hidden_size"}, max_width), cfg.required({"intermediate_size"}, max_width),
          cfg.required({"num_hidden_layers"}, max_layers), cfg.required({"patch_size"}, 1ULL << 12),
          cfg.optional({"num_channels"}, 3, 1ULL << 10)};
}

// SiglipVisionModel without its pooling head (Gemma 3: vision_use_head false): patch and
// position embeddings, encoder layers (k/v/q/out projections with biases, two LayerNorms, a
// fc1/fc2 MLP), the post-LayerNorm. The patch Conv2d's [hidden, channels, patch, patch] weight
// is recorded flattened to two dimensions.
void add_siglip(config_reader& cfg, tensor_builder& add) {
  const auto [h, inner, layers, patch, channels] = read_vision_dims(cfg);
  const auto image = cfg.required({"image_size"}, 1ULL << 16);
  if (patch > 0 && image % patch != 0) {
    cfg.fail("config.invalid_value", "patch_size",
             "[" + cfg.field("patch_size") + "] must divide image_size " + std::to_string(image) +
                 ", got " + std::to_string(patch));
  }
  const auto side = patch > 0 ? image / patch : 0;
  const auto role = tensor_role::vision;
  add.scope("model.vision_tower.vision_model.embeddings.");
  add.parameter("patch_embedding.weight", {h, channels * patch * patch}, role);
  add.parameter("patch_embedding.bias", {h}, role, true);
  add.embedding("position_embedding", side * side, h, role);
  for (std::uint64_t i = 0; i < layers; ++i) {
    add.scope("model.vision_tower.vision_model.encoder.layers." + std::to_string(i) + ".");
    for (const char* name :
         {"self_attn.k_proj", "self_attn.v_proj", "self_attn.q_proj", "self_attn.out_proj"})
      add.linear(name, h, h, true, role);
    add.layer_norm("layer_norm1", h);
    add.linear("mlp.fc1", h, inner, true, role);
    add.linear("mlp.fc2", inner, h, true, role);
    add.layer_norm("layer_norm2", h);
  }
  add.scope("model.vision_tower.vision_model.");
  add.layer_norm("post_layernorm", h);
}

// Gemma3MultiModalProjector: a bare [vision hidden, text hidden] weight and an RMSNorm.
void add_gemma3_vision(config_reader& cfg, config_reader&, tensor_builder& add,
                       const model_spec& spec) {
  add_siglip(cfg, add);
  const std::uint64_t vision_hidden = spec.tensors.empty() ? 0 : spec.tensors.back().shape[0];
  add.scope("model.multi_modal_projector.");
  add.parameter("mm_input_projection_weight", {vision_hidden, spec.hidden_size},
                tensor_role::vision);
  add.rms_norm("mm_soft_emb_norm", vision_hidden);
}

// Llama4TextConfig's and Llama4VisionConfig's defaults (configuration_llama4.py) for keys a
// config leaves out.
nlohmann::ordered_json llama4_text_defaults() {
  return {{"vocab_size", 202048},      {"hidden_size", 5120},
          {"intermediate_size", 8192}, {"num_hidden_layers", 48},
          {"num_attention_heads", 40}, {"num_key_value_heads", 8},
          {"head_dim", 128},           {"max_position_embeddings", 131072}};
}
nlohmann::ordered_json llama4_vision_defaults() {
  return {{"hidden_size", 768},          {"num_hidden_layers", 34},     {"intermediate_size", 5632},
          {"vision_output_dim", 7680},   {"image_size", 448},           {"patch_size", 14},
          {"projector_input_dim", 4096}, {"projector_output_dim", 4096}};
}

// Llama4VisionModel: its class and position embeddings ((image / patch)^2 patches and the
// class token), the unfold convolution's bias-free linear, LayerNorms before and after the
// encoder, the encoder layers (q/k/v/o and fc1/fc2 with biases, two LayerNorms) and the
// pixel-shuffle adapter's two bias-free linears; then Llama4MultiModalProjector's bias-free
// linear into the text width. torch lists a module's own parameters before its children's.
void add_llama4_vision(config_reader& cfg, config_reader&, tensor_builder& add,
                       const model_spec& spec) {
  const auto [h, inner, layers, patch, channels] = read_vision_dims(cfg);
  const auto image = cfg.required({"image_size"}, 1ULL << 16);
  const auto output = cfg.required({"vision_output_dim"}, max_width);
  const auto adapter_in = cfg.required({"projector_input_dim"}, max_width);
  const auto adapter_out = cfg.required({"projector_output_dim"}, max_width);
  const auto side = patch > 0 ? image / patch : 0;
  const auto role = tensor_role::vision;
  add.scope("vision_model.");
  add.parameter("class_embedding", {h}, role);
  add.parameter("positional_embedding_vlm", {side * side + 1, h}, role);
  add.linear("patch_embedding.linear", channels * patch * patch, h, false, role);
  add.layer_norm("layernorm_pre", h);
  add.layer_norm("layernorm_post", h);
  for (std::uint64_t i = 0; i < layers; ++i) {
    add.scope("vision_model.model.layers." + std::to_string(i) + ".");
    for (const char* name :
         {"self_attn.q_proj", "self_attn.k_proj", "self_attn.v_proj", "self_attn.o_proj"})
      add.linear(name, h, h, true, role);
    add.linear("mlp.fc1", h, inner, true, role);
    add.linear("mlp.fc2", inner, h, true, role);
    add.layer_norm("input_layernorm", h);
    add.layer_norm("post_attention_layernorm", h);
  }
  add.scope("vision_model.vision_adapter.mlp.");
  add.linear("fc1", inner, adapter_in, false, role);
  add.linear("fc2", adapter_out, adapter_out, false, role);
  add.scope("multi_modal_projector.");
  add.linear("linear_1", output, spec.hidden_size, false, role);
}

// PixtralVisionConfig's defaults (configuration_pixtral.py) for keys a config leaves out.
nlohmann::ordered_json pixtral_defaults() {
  return {{"hidden_size", 1024},
          {"intermediate_size", 4096},
          {"num_hidden_layers", 24},
          {"patch_size", 16}};
}

// PixtralVisionModel: the bias-free patch Conv2d (recorded flattened to two dimensions), ln_pre,
// and layers of attention_norm, a bias-free gated MLP, bias-free k/v/q/o and ffn_norm (RMSNorms);
// then Mistral3MultiModalProjector: an RMSNorm, the patch merger's bias-free linear over
// spatial_merge_size^2 patches, linear_1 (over the features of every vision_feature_layer) and
// linear_2 (biased when multimodal_projector_bias).
void add_pixtral(config_reader& cfg, config_reader& wrapper, tensor_builder& add,
                 const model_spec& spec) {
  const auto [h, inner, layers, patch, channels] = read_vision_dims(cfg);
  const auto merge = wrapper.optional({"spatial_merge_size"}, 2, 1ULL << 6);
  const bool bias = wrapper.flag("multimodal_projector_bias", false);
  // One vision_feature_layer, or a list whose layers' features are concatenated.
  const std::uint64_t feature_layers = wrapper.items("vision_feature_layer");
  const auto role = tensor_role::vision;
  add.scope("model.vision_tower.");
  add.parameter("patch_conv.weight", {h, channels * patch * patch}, role);
  add.rms_norm("ln_pre", h);
  for (std::uint64_t i = 0; i < layers; ++i) {
    add.scope("model.vision_tower.transformer.layers." + std::to_string(i) + ".");
    add.rms_norm("attention_norm", h);
    add.linear("feed_forward.gate_proj", h, inner, false, role);
    add.linear("feed_forward.up_proj", h, inner, false, role);
    add.linear("feed_forward.down_proj", inner, h, false, role);
    for (const char* name :
         {"attention.k_proj", "attention.v_proj", "attention.q_proj", "attention.o_proj"})
      add.linear(name, h, h, false, role);
    add.rms_norm("ffn_norm", h);
  }
  add.scope("model.multi_modal_projector.");
  add.rms_norm("norm", h);
  add.linear("patch_merger.merging_layer", h * merge * merge, h, false, role);
  add.linear("linear_1", h * std::max<std::uint64_t>(feature_layers, 1), spec.hidden_size, bias,
             role);
  add.linear("linear_2", spec.hidden_size, spec.hidden_size, bias, role);
}

// What sets one multimodal wrapper apart.
struct wrapper {
  const char* model_type;    // the wrapper's, e.g. "gemma3"
  const char* text_type;     // its language model's, e.g. "gemma3_text"
  const char* architecture;  // the transformers class counted
  const char* name;          // in messages
  nlohmann::ordered_json text_defaults;
  nlohmann::ordered_json vision_defaults;
  // The vision tower (from vision_config) and projector (which may read the wrapper's own keys),
  // registered, as the wrapper does, before the language model.
  void (*vision)(config_reader& vision, config_reader& wrapper, tensor_builder&,
                 const model_spec& language);
  // Where the language model's tensors sit in the wrapper ("model." -> "model.language_model.").
  std::string (*language_name)(const std::string&);
  // The loss the wrapper takes itself (model_spec::loss).
  model_loss loss;
};

result<model_spec> parse_wrapper(const nlohmann::ordered_json& config, const std::string& field,
                                 const wrapper& w) {
  const auto sub = [&](const char* key) -> const nlohmann::ordered_json* {
    const auto it = config.find(key);
    return it != config.end() && it->is_object() ? &*it : nullptr;
  };
  for (const char* key : {"text_config", "vision_config"}) {
    if (sub(key) == nullptr) {
      return error{"config.invalid_value", field + "." + key,
                   "[" + field + "." + key + "] a " + w.model_type + " config needs its " + key +
                       " object (" + w.architecture + ")"};
    }
  }
  nlohmann::ordered_json text = w.text_defaults;
  text.update(*sub("text_config"));
  text["model_type"] = w.text_type;
  model_spec spec;
  spec.model_type = w.text_type;
  config_reader text_cfg(text, field + ".text_config");
  build_llama_like(text_cfg, spec);
  if (auto problem = text_cfg.problem(std::string("required for ") + w.name + "'s language model"))
    return *problem;

  std::vector<tensor_spec> language = std::move(spec.tensors);
  spec.tensors.clear();
  tensor_builder add(spec);
  nlohmann::ordered_json vision = w.vision_defaults;
  vision.update(*sub("vision_config"));
  config_reader vision_cfg(vision, field + ".vision_config");
  config_reader wrapper_cfg(config, field);
  w.vision(vision_cfg, wrapper_cfg, add, spec);
  if (auto problem = vision_cfg.problem(std::string("required for ") + w.name + "'s vision tower"))
    return *problem;
  if (auto problem = wrapper_cfg.problem(std::string("required for ") + w.name + "'s projector"))
    return *problem;
  std::uint64_t vision_params = 0;
  for (auto& t : spec.tensors) {
    t.role = tensor_role::vision;
    vision_params += t.numel();
  }
  for (auto& t : language) {
    t.name = w.language_name(t.name);
    spec.tensors.push_back(std::move(t));
  }
  spec.model_type = w.model_type;
  spec.architecture = w.architecture;
  spec.loss = w.loss;
  spec.warnings.push_back("the vision tower and projector (" + std::to_string(vision_params) +
                          " parameters) are loaded; text-only batches never run them (no "
                          "activations; gradients and optimizer states only where DDP, ZeRO or "
                          "Gemini make them)");
  return spec;
}

}  // namespace

result<model_spec> parse_gemma3(const nlohmann::ordered_json& config, const std::string& field) {
  // Gemma3Model registers the vision tower, then the projector, then the language model.
  // Gemma3ForConditionalGeneration takes its own loss: logits.float(), their shifted contiguous
  // copy and a plain nn.CrossEntropyLoss.
  const wrapper gemma3{
      "gemma3",
      "gemma3_text",
      "Gemma3ForConditionalGeneration",
      "Gemma 3",
      gemma3_text_defaults(),
      nlohmann::ordered_json::object(),
      add_gemma3_vision,
      [](const std::string& name) {
        return name.rfind("model.", 0) == 0 ? "model.language_model." + name.substr(6) : name;
      },
      model_loss::plain_fp32};
  return parse_wrapper(config, field, gemma3);
}

result<model_spec> parse_llama4(const nlohmann::ordered_json& config, const std::string& field) {
  // Llama4ForConditionalGeneration registers vision_model, multi_modal_projector, then
  // language_model (a Llama4ForCausalLM). It takes its own loss: logits[..., :-1, :] made
  // contiguous and a plain nn.CrossEntropyLoss, in the logits' dtype.
  const wrapper llama4{"llama4",
                       "llama4_text",
                       "Llama4ForConditionalGeneration",
                       "Llama 4",
                       llama4_text_defaults(),
                       llama4_vision_defaults(),
                       add_llama4_vision,
                       [](const std::string& name) { return "language_model." + name; },
                       model_loss::plain};
  return parse_wrapper(config, field, llama4);
}

result<model_spec> parse_mistral3(const nlohmann::ordered_json& config, const std::string& field) {
  // Mistral3Model registers the vision tower (Pixtral), the projector, then the language model (a
  // MistralModel; Mistral3ForConditionalGeneration adds the LM head and takes transformers'
  // ForCausalLMLoss). Other language models under mistral3 (Ministral 3, Mistral 4) are not read.
  const auto text = config.find("text_config");
  if (text != config.end() && text->is_object()) {
    const auto type = text->find("model_type");
    if (type != text->end() && *type != "mistral") {
      return error{"config.unsupported_model_type", field + ".text_config.model_type",
                   "[" + field + ".text_config.model_type] " + type->dump() +
                       ": a mistral3 config is read with a Mistral language model ('mistral')"};
    }
  }
  const wrapper mistral3{
      "mistral3",
      "mistral",
      "Mistral3ForConditionalGeneration",
      "Mistral 3",
      nlohmann::ordered_json::object(),
      pixtral_defaults(),
      add_pixtral,
      [](const std::string& name) {
        return name.rfind("model.", 0) == 0 ? "model.language_model." + name.substr(6) : name;
      },
      model_loss::causal_lm};
  return parse_wrapper(config, field, mistral3);
}

}  // namespace gpumem
