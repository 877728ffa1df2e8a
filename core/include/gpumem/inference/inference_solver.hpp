#pragma once
// Inference over all ranks of a layout, and the limits users ask for: the longest context that
// fits at a given batch and the largest batch at a given context, exact to the token (binary
// search over the fit of the full estimate, which grows with both).

#include <cstdint>
#include <string>
#include <vector>

#include "gpumem/inference/inference_step.hpp"
#include "gpumem/plan/estimate.hpp"

namespace gpumem {

struct inference_ranks {
  std::vector<inference_estimate> stages;  // one per pipeline stage (tensor-parallel ranks alike)
  std::vector<bool> stage_fits;
  std::vector<fit_verdict> stage_verdicts;
  std::size_t worst = 0;  // the stage with the largest device footprint
  bool fits = false;      // every stage fits the usable memory, and (paged) the KV capacity the
                          // request's sequences
  fit_verdict verdict = fit_verdict::fits;  // the worst stage's
  // Why it does not fit: "memory", "kv_capacity" (vLLM's cache holds fewer sequences than the
  // request's), "" when it fits.
  std::string limited_by;
};

// Every stage of config.pp_degree, each with device_used against `usable_bytes`.
result<inference_ranks> estimate_inference_ranks(const model_spec& spec,
                                                 const inference_config& config,
                                                 const gpu_spec& gpu, std::uint64_t usable_bytes,
                                                 std::uint64_t cuda_context_bytes);

enum class inference_limit { max_context, max_batch };

struct inference_solution {
  std::uint64_t value = 0;  // tokens per sequence (prompt + new) or sequences; 0: none fits
  bool capped = false;      // the search bound (the model's positions, or `upper`) was reached
};

// max_context varies the prompt with new_tokens fixed (a preallocated cache follows the
// context); max_batch varies the batch. Searches up to `upper` (tokens or sequences).
result<inference_solution> solve_inference_limit(const model_spec& spec,
                                                 const inference_config& config,
                                                 const gpu_spec& gpu, std::uint64_t usable_bytes,
                                                 std::uint64_t cuda_context_bytes,
                                                 inference_limit limit, std::uint64_t upper);

// A serving layout tried by plan_inference: one GPU, tensor parallelism or a layer split over
// `gpus` GPUs.
struct inference_candidate {
  std::string method;  // "single", "tensor_parallel" or "pipeline"
  std::uint64_t gpus = 1;
  bool valid = true;  // false: the model does not split this way (note says why)
  bool fits = false;
  fit_verdict verdict = fit_verdict::does_not_fit;
  std::string limited_by;        // as inference_ranks'; "invalid" when not valid
  std::uint64_t peak_bytes = 0;  // the busiest rank's device footprint
  std::string note;
};

struct inference_plan {
  std::vector<inference_candidate> candidates;
  int choice = -1;  // index into candidates; -1 when none fits
  std::string reason;
};

// The fewest GPUs (at most `max_gpus`) that serve the request: GPU counts 1, 2, 4, ... and
// max_gpus itself; at each count tensor parallelism before a layer split (it keeps every GPU
// busy on each token instead of one at a time).
inference_plan plan_inference(const model_spec& spec, const inference_config& config,
                              const gpu_spec& gpu, std::uint64_t usable_bytes,
                              std::uint64_t cuda_context_bytes, std::uint64_t max_gpus);

}  // namespace gpumem
