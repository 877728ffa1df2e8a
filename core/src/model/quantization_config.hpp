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

}  // namespace gpumem
