#include "gpumem/model/config_parser.hpp"

#include <nlohmann/json.hpp>

#include "model/architectures.hpp"
#include "model/config_reader.hpp"
#include "model/quantization_config.hpp"

namespace gpumem {

namespace {

using builder = void (*)(config_reader&, model_spec&);

struct family {
  const char* model_type;
  builder build;
};

constexpr family families[] = {
    {"opt", build_opt},
    {"bloom", build_bloom},
    {"codegen", build_codegen},
    {"gpt_neo", build_gpt_neo},
    {"biogpt", build_biogpt},
    {"gpt_bigcode", build_gpt_bigcode},
    {"gpt2", build_gpt2},
    {"gpt_neox", build_gpt_neox},
    {"gptj", build_gptj},
    {"llama", build_llama_like},
    {"mistral", build_llama_like},
    {"mixtral", build_llama_like},
    {"qwen2", build_llama_like},
    {"qwen2_moe", build_llama_like},
    {"gemma", build_llama_like},
    {"gemma2", build_llama_like},
    {"phi", build_phi},
    {"starcoder2", build_starcoder2},
    {"phi3", build_llama_like},
    {"falcon", build_falcon},
    {"deepseek_v3", build_llama_like},
    {"qwen3", build_llama_like},
    {"qwen3_moe", build_llama_like},
    {"gemma3_text", build_llama_like},
    {"gemma3", nullptr},  // text_config and vision_config: parse_gemma3
    {"olmo2", build_llama_like},
    {"granite", build_llama_like},  // modeling_granite.py: Llama with scalar multipliers
    {"gpt_oss", build_llama_like},
    {"llama4_text", build_llama_like},
    {"glm4_moe", build_llama_like},
    {"llama4", nullptr},    // text_config and vision_config: parse_llama4
    {"mistral3", nullptr},  // text_config and vision_config: parse_mistral3
    {"bert", nullptr},      // needs the task head: build_bert
    {"albert", nullptr},    // build_albert
    {"t5", build_t5},
    {"mt5", build_t5},
};

// The keys a config needs for the Llama-like reading of an unknown model_type.
constexpr const char* standard_keys[] = {"hidden_size", "num_hidden_layers", "num_attention_heads",
                                         "intermediate_size", "vocab_size"};

}  // namespace

const std::vector<std::string>& supported_model_types() {
  static const std::vector<std::string> types = [] {
    std::vector<std::string> out;
    for (const auto& f : families) out.emplace_back(f.model_type);
    return out;
  }();
  return types;
}

void index_block_tensors(model_spec& spec) {
  spec.block_tensors.assign(spec.layers.size(), {});
  for (auto& t : spec.tensors) {
    t.flow = linear_role::unknown;
    t.flow = linear_role_of(t);
    t.module_name = module_of(t.name);
  }
  for (std::size_t i = 0; i < spec.tensors.size(); ++i) {
    const int layer = spec.tensors[i].layer;
    if (layer >= 0 && static_cast<std::size_t>(layer) < spec.layers.size())
      spec.block_tensors[static_cast<std::size_t>(layer)].push_back(static_cast<std::uint32_t>(i));
  }
}

namespace {

result<model_spec> read_model_config(const nlohmann::ordered_json& config,
                                     const model_options& options, const std::string& field) {
  if (!config.is_object()) {
    return error{
        "config.not_an_object", field,
        "[" + field + "] must be a config.json object, got " + std::string(config.type_name())};
  }
  config_reader cfg(config, field);
  model_spec spec;
  spec.model_type = cfg.text("model_type", "");

  const family* known = nullptr;
  for (const auto& f : families) {
    if (spec.model_type == f.model_type) known = &f;
  }
  if (known == nullptr) {
    std::string missing;
    for (const char* key : standard_keys) {
      if (!cfg.has(key)) missing += (missing.empty() ? "" : ", ") + std::string(key);
    }
    const std::string shown = spec.model_type.empty() ? "(none)" : "'" + spec.model_type + "'";
    if (!missing.empty()) {
      return error{"config.unsupported_model_type", field + ".model_type",
                   "[" + field + ".model_type] " + shown +
                       " is not a supported model type, and the config lacks " + missing +
                       " needed to read it as a Llama-like decoder"};
    }
    spec.warnings.push_back("model_type " + shown +
                            " is not one gpumem knows; it was read as a Llama-like decoder "
                            "(RMSNorm, gated MLP, no biases) from its standard keys");
  }

  if (spec.model_type == "gemma3") return parse_gemma3(config, field);
  if (spec.model_type == "llama4") return parse_llama4(config, field);
  if (spec.model_type == "mistral3") return parse_mistral3(config, field);
  if (known != nullptr && known->build == nullptr) {
    if (spec.model_type == "albert") {
      build_albert(cfg, spec, options);
    } else {
      build_bert(cfg, spec, options);
    }
  } else if (known != nullptr) {
    known->build(cfg, spec);
  } else {
    build_llama_like(cfg, spec);
    spec.architecture = "LlamaForCausalLM (fallback)";
  }
  if (auto problem = cfg.problem("required for model_type '" +
                                 (spec.model_type.empty() ? "(none)" : spec.model_type) + "'")) {
    return *problem;
  }
  return spec;
}

}  // namespace

result<model_spec> parse_model_config(const nlohmann::ordered_json& config,
                                      const model_options& options, const std::string& field) {
  auto spec = read_model_config(config, options, field);
  if (!spec.ok()) return spec;
  if (auto e = read_quantization_config(config, field, spec.value())) return *e;
  index_block_tensors(spec.value());
  return spec;
}

}  // namespace gpumem
