#pragma once
// The rules that refuse an inference request, run before its replay counts anything.

#include <optional>

#include "gpumem/inference/inference_step.hpp"

namespace gpumem {

// The parallel degrees, the weight format with the framework, and the request's exact sizes;
// the first refusal, in a fixed order.
std::optional<error> check_inference_request(const model_spec& spec,
                                             const inference_config& config);

}  // namespace gpumem
