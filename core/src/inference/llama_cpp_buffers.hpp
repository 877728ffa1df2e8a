#pragma once
// llama.cpp's device memory: fixed buffers, no caching allocator (llama.cpp b4000).

#include <cstdint>

#include "gpumem/inference/inference_step.hpp"

namespace gpumem {

// llama.cpp: the weights, the KV cache of n_ctx cells (batch x tokens per sequence) and the
// compute buffer are fixed device buffers outside any caching allocator.
void llama_cpp_buffers(const model_spec& spec, const inference_config& config,
                       std::uint64_t total_tokens, inference_estimate& out);

}  // namespace gpumem
