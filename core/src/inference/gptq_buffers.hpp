#pragma once
// The buffers AutoGPTQ's exllama kernels allocate at load, under transformers' GPTQ integration.

#include <cstdint>
#include <optional>
#include <string>

#include "gpumem/inference/inference_step.hpp"

namespace gpumem {

struct exllama_buffers {
  std::uint64_t dequantised = 0;  // temp_dq: the largest quantised matrix, dequantised to fp16
  std::uint64_t reordered = 0;    // temp_state: act-order's reordered input
  std::string note;
};

// For a 4-bit GPTQ checkpoint served by transformers' generate in the releases that load it with
// AutoGPTQ's exllama kernels; `largest_matrix`: the most elements of a quantised matrix this rank
// holds, `widest_side`: the most input or output features of one. None otherwise.
std::optional<exllama_buffers> gptq_exllama_buffers(const inference_config& config,
                                                    std::uint64_t largest_matrix,
                                                    std::uint64_t widest_side);

}  // namespace gpumem
