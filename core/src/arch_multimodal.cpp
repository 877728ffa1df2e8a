// Multimodal wrappers whose language model is a family gpumem knows: Gemma 3
// (Gemma3ForConditionalGeneration, after modeling_gemma3.py and modeling_siglip.py). Text-only
// fine-tuning and serving load the vision tower and projector but never run them.

#include <nlohmann/json.hpp>

#include "architectures.hpp"
#include "tensor_builder.hpp"

namespace gpumem {

namespace {

// Gemma3TextConfig's defaults for the keys the released multimodal configs leave out of
// text_config (transformers models/gemma3/configuration_gemma3.py).
nlohmann::json gemma3_text_defaults() {
  return {{"vocab_size", 262208},
          {"num_attention_heads", 8},
          {"num_key_value_heads", 4},
          {"head_dim", 256},
          {"hidden_activation", "gelu_pytorch_tanh"},
          {"max_position_embeddings", 131072},
          {"sliding_window", 4096},
          {"tie_word_embeddings", true}};
}

// SiglipVisionModel without its pooling head (Gemma 3: vision_use_head false): patch and
// position embeddings, encoder layers (k/v/q/out projections with biases, two LayerNorms, a
// fc1/fc2 MLP), the post-LayerNorm. The patch Conv2d's [hidden, channels, patch, patch] weight
// is recorded flattened to two dimensions.
void add_siglip(config_reader& cfg, tensor_builder& add) {
  const auto h = cfg.required({"hidden_size"}, max_width);
  const auto inner = cfg.required({"intermediate_size"}, max_width);
  const auto layers = cfg.required({"num_hidden_layers"}, max_layers);
  const auto patch = cfg.required({"patch_size"}, 1ULL << 12);
  const auto image = cfg.required({"image_size"}, 1ULL << 16);
  const auto channels = cfg.optional({"num_channels"}, 3, 1ULL << 10);
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

}  // namespace

result<model_spec> parse_gemma3(const nlohmann::json& config, const std::string& field) {
  const auto sub = [&](const char* key) -> const nlohmann::json* {
    const auto it = config.find(key);
    return it != config.end() && it->is_object() ? &*it : nullptr;
  };
  for (const char* key : {"text_config", "vision_config"}) {
    if (sub(key) == nullptr) {
      return error{"config.invalid_value", field + "." + key,
                   "[" + field + "." + key + "] a gemma3 config needs its " + key +
                       " object (Gemma3Config)"};
    }
  }
  nlohmann::json text = gemma3_text_defaults();
  text.update(*sub("text_config"));
  text["model_type"] = "gemma3_text";
  model_spec spec;
  spec.model_type = "gemma3_text";
  config_reader text_cfg(text, field + ".text_config");
  build_llama_like(text_cfg, spec);
  if (auto problem = text_cfg.problem("required for Gemma 3's language model")) return *problem;

  // Gemma3Model registers the vision tower, then the projector, then the language model.
  std::vector<tensor_spec> language = std::move(spec.tensors);
  spec.tensors.clear();
  tensor_builder add(spec);
  config_reader vision_cfg(*sub("vision_config"), field + ".vision_config");
  add_siglip(vision_cfg, add);
  if (auto problem = vision_cfg.problem("required for Gemma 3's vision tower")) return *problem;
  const std::uint64_t vision_hidden = spec.tensors.back().shape[0];
  // Gemma3MultiModalProjector: a bare [vision hidden, text hidden] weight and an RMSNorm.
  add.scope("model.multi_modal_projector.");
  add.parameter("mm_input_projection_weight", {vision_hidden, spec.hidden_size},
                tensor_role::vision);
  add.rms_norm("mm_soft_emb_norm", vision_hidden);
  std::uint64_t vision_params = 0;
  for (auto& t : spec.tensors) {
    t.role = tensor_role::vision;
    vision_params += t.numel();
  }
  for (auto& t : language) {
    if (t.name.rfind("model.", 0) == 0) t.name.insert(6, "language_model.");
    spec.tensors.push_back(std::move(t));
  }
  spec.model_type = "gemma3";
  spec.architecture = "Gemma3ForConditionalGeneration";
  spec.warnings.push_back("the vision tower and projector (" + std::to_string(vision_params) +
                          " parameters) are loaded; text-only batches never run them (no "
                          "activations; gradients and optimizer states only where DDP, ZeRO or "
                          "Gemini make them)");
  return spec;
}

}  // namespace gpumem
