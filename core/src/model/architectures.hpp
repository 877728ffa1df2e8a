#pragma once
// One builder per Hugging Face architecture family. Each reads its config.json keys through
// config_reader, fills the model's dimensions and block list, and registers every parameter
// tensor exactly as the family's transformers modeling file does (names, shapes, order).

#include <cstdint>
#include <string>

#include "gpumem/model/config_parser.hpp"
#include "gpumem/model/model_spec.hpp"
#include "model/config_reader.hpp"

namespace gpumem {

// GPT-style decoders (arch_gpt.cpp).
void build_opt(config_reader& cfg, model_spec& spec);
void build_biogpt(config_reader& cfg, model_spec& spec);
void build_gpt2(config_reader& cfg, model_spec& spec);
void build_gpt_bigcode(config_reader& cfg, model_spec& spec);
void build_gpt_neo(config_reader& cfg, model_spec& spec);
void build_codegen(config_reader& cfg, model_spec& spec);
void build_gptj(config_reader& cfg, model_spec& spec);
void build_gpt_neox(config_reader& cfg, model_spec& spec);
void build_bloom(config_reader& cfg, model_spec& spec);
void build_falcon(config_reader& cfg, model_spec& spec);
void build_phi(config_reader& cfg, model_spec& spec);
void build_starcoder2(config_reader& cfg, model_spec& spec);

// Llama-like decoders: RMSNorm, gated MLP, GQA, MoE and MLA variants (arch_llama.cpp).
void build_llama_like(config_reader& cfg, model_spec& spec);

// Multimodal wrappers around a known language model (arch_multimodal.cpp): Gemma 3's, Llama 4's
// and Mistral 3's text_config and vision_config.
result<model_spec> parse_gemma3(const nlohmann::ordered_json& config, const std::string& field);
result<model_spec> parse_llama4(const nlohmann::ordered_json& config, const std::string& field);
result<model_spec> parse_mistral3(const nlohmann::ordered_json& config, const std::string& field);

// Encoders and encoder-decoders (arch_encoder.cpp).
void build_bert(config_reader& cfg, model_spec& spec, const model_options& options);
void build_albert(config_reader& cfg, model_spec& spec, const model_options& options);
void build_t5(config_reader& cfg, model_spec& spec);

// The attention geometry shared by most families: heads must divide the hidden size unless the
// config gives head_dim explicitly, and key/value heads must divide the query heads.
void read_heads(config_reader& cfg, model_spec& spec, std::initializer_list<const char*> head_keys,
                std::initializer_list<const char*> kv_keys);

// The dimensions under transformers' standard keys (hidden_size, vocab_size, intermediate_size,
// num_attention_heads, num_key_value_heads), which the Llama-like decoders, Phi and StarCoder2
// name alike; returns num_hidden_layers.
std::uint64_t read_standard_dims(config_reader& cfg, model_spec& spec);

// One decoder block per layer index with the dense MLP width, global attention.
void add_uniform_layers(model_spec& spec, stack_kind stack, std::uint64_t count);

}  // namespace gpumem

namespace gpumem {
class tensor_builder;
// The output projection at the top level: its weight unless tied to the token embedding, and
// its bias when the family has one (CodeGen, GPT-J, Phi). `name` is the module name in the
// causal-LM class (lm_head, output_projection for BioGPT).
void add_lm_head(tensor_builder& add, const model_spec& spec, const std::string& name, bool bias);
}  // namespace gpumem
