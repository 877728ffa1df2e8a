#pragma once
// A request's `model` — a preset id, {"preset": id}, or {"config": {...}} with its name, task head
// and labels — read into the model's structure and parameter counts, and kept for the next
// requests that name the same model: what is derived from the model alone is built once (a
// handful of models, most recently used first); no answer is kept.

#include <memory>
#include <nlohmann/json.hpp>
#include <optional>

#include "gpumem/model/model_spec.hpp"
#include "gpumem/model/param_count.hpp"
#include "gpumem/plan/llmem.hpp"
#include "gpumem/result.hpp"

namespace gpumem {

struct resolved_model {
  model_spec spec;
  param_count counts;
  nlohmann::ordered_json identity;  // id / name / source of the config
  // LLMem's view of the model, prepared on the first LLMem request that names it.
  const result<llmem_model>& llmem() const;
  mutable std::optional<result<llmem_model>> llmem_prepared = std::nullopt;  // llmem()'s
};

result<std::shared_ptr<const resolved_model>> resolve_model(const nlohmann::ordered_json& request);

}  // namespace gpumem
