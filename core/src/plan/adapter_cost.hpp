#pragma once
// What LoRA's and DoRA's own kernels add to a training step's time: the base model's matmuls are
// timed by the step-time model's utilisation, but every adapted linear also runs a chain of small,
// memory-bound kernels beside its matmul (PEFT tuners/lora/layer.py Linear.forward:
// result + lora_B(lora_A(dropout(x))) * scaling).

#include "gpumem/model/model_spec.hpp"
#include "gpumem/training/training_step.hpp"

namespace gpumem {

struct adapter_cost {
  double bytes_per_token = 0;  // moved through memory per token in one forward, whole model
  double fixed_bytes = 0;      // per forward, whatever the tokens (DoRA's weight norm)
  double kernels = 0;          // launched per forward, whole model
};

// Nothing for full fine-tuning and methods without LoRA adapters.
adapter_cost lora_adapter_cost(const model_spec& spec, const training_config& workload);

}  // namespace gpumem
