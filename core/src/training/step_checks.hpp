#pragma once
// The rules that refuse a training request, run before the step's replay counts anything.

#include <optional>
#include <string>
#include <vector>

#include "gpumem/training/training_step.hpp"

namespace gpumem {

// The lengths' exact sizes and the adapter targets (`unmatched_targets`: those naming nothing),
// checked on the model as asked (before litgpt unties a tied head).
std::optional<error> check_training_request(const model_spec& spec, const training_config& config,
                                            std::vector<std::string>& unmatched_targets);
// What the finetuning method, frameworks, parallel degrees and offload accept together; the
// first refusal, in a fixed order.
std::optional<error> check_training_combination(const model_spec& spec,
                                                const training_config& config);

// The library releases the request cannot run with (torch 1.x outside transformers or with SDPA,
// transformers' or PEFT's release outside their framework, PEFT < 0.12 under fp16 AMP over an
// fp16 LoRA base).
std::optional<error> check_software(const training_config& config);

}  // namespace gpumem
