#pragma once
// What transformers' generate() computes and keeps in the prefill and the first decode step,
// by release (framework transformers with workload.software.transformers; unset: today's).

#include <string>

#include "gpumem/inference/inference_step.hpp"
#include "gpumem/model/model_spec.hpp"

namespace gpumem {

struct generate_release {
  bool all_prompt_logits = false;   // the prefill's LM head runs over every prompt position
  bool logits_upcast = false;       // the model's forward upcasts its logits to fp32
  bool whole_logits_clone = false;  // generate clones the whole logits before slicing the last
  bool outputs_kept = false;        // the prefill's outputs live through the next forward
  bool old_cache_kept = false;      // the previous step's KV tensors live through the forward
  bool sdpa_repeats_kv = false;     // grouped-query K/V copied to every head before SDPA
  bool static_cache_lazy = false;   // a static cache's layer allocates at its first update
  std::string note;                 // what the stated release changes, "" when nothing
};

generate_release generate_release_of(const model_spec& spec, const inference_config& config);

}  // namespace gpumem
