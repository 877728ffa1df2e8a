#pragma once
// model_spec and param_count as the JSON the API returns (docs/api.md, command "params").

#include <nlohmann/json.hpp>

#include "gpumem/model/model_spec.hpp"
#include "gpumem/model/param_count.hpp"

namespace gpumem {

nlohmann::ordered_json params_json(const model_spec& spec, const param_count& counts);

}  // namespace gpumem
