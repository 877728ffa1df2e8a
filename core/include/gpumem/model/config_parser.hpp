#pragma once
// Hugging Face config.json -> model_spec, for the supported model types, with a Llama-like
// fallback for unknown types that carry the standard keys.

#include <cstdint>
#include <nlohmann/json_fwd.hpp>
#include <string>
#include <vector>

#include "gpumem/model/model_spec.hpp"
#include "gpumem/result.hpp"

namespace gpumem {

// Choices that config.json alone does not settle.
struct model_options {
  std::string task_head;         // BERT: base, masked_lm, ...; empty = from `architectures`
  std::uint64_t num_labels = 0;  // classifier width; 0 = config's num_labels, else 2
};

// `field` names the config in error messages, e.g. "model.config".
result<model_spec> parse_model_config(const nlohmann::ordered_json& config,
                                      const model_options& options, const std::string& field);

// The model_type values read by a dedicated builder.
const std::vector<std::string>& supported_model_types();

// BERT head names accepted in model_options::task_head.
bool is_task_head(const std::string& name);

}  // namespace gpumem
