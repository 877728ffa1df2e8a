#pragma once
// A config.json's quantization_config: what a quantised checkpoint stores (model_spec.hpp,
// checkpoint_quantization).

#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "gpumem/model/model_spec.hpp"
#include "gpumem/result.hpp"

namespace gpumem {

// Reads `config`'s quantization_config into spec.checkpoint (nothing when there is none); an
// error names the field it cannot read.
std::optional<error> read_quantization_config(const nlohmann::ordered_json& config,
                                              const std::string& field, model_spec& spec);

// Whether a tensor's name holds a module pattern of a quantization_config's
// modules_to_not_convert (transformers matches them as parts of the module's name; gpt-oss writes
// "model.layers.*.self_attn": the parts between wildcards, in order).
bool names_quantization_module(const std::string& name, const std::string& pattern);

}  // namespace gpumem
