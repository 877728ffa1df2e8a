#pragma once
// How fast a served request runs (docs/methodology.md, Inference speed): the prefill of the
// prompts is compute-bound, each decode step reads this rank's weights and the KV cache of every
// sequence once and is bound by the memory's bandwidth, unless the host's kernel launches take
// longer (transformers runs eagerly; vLLM and llama.cpp replay captured CUDA graphs).

#include "gpumem/inference/inference_step.hpp"
#include "gpumem/model/model_spec.hpp"
#include "gpumem/model/param_count.hpp"
#include "gpumem/runtime/hardware.hpp"

namespace gpumem {

struct inference_speed {
  double prefill_s = 0;                  // the prompts' forward, every sequence
  double decode_step_s = 0;              // one new token for every sequence, at the mean length
  double decode_tokens_per_s = 0;        // every sequence together
  double per_sequence_tokens_per_s = 0;  // what one user sees
  double request_s = 0;                  // the prefill and the remaining decode steps
  bool launch_bound = false;             // the host's launches set a decode step
};

// `rank`: the replay of one rank (its weights and KV bytes per token); a pipeline runs its stages
// one after another.
inference_speed estimate_inference_speed(const model_spec& spec, const param_count& counts,
                                         const inference_config& config, const gpu_spec& gpu,
                                         const inference_estimate& rank);

}  // namespace gpumem
