// llama.cpp's fixed device buffers: the weights, the KV cache cells and the compute buffer.
#include "inference/llama_cpp_buffers.hpp"

#include <algorithm>
#include <string>

namespace gpumem {

namespace {

using cat = memory_category;

// llama.cpp's compute buffer: ggml-alloc reserves the worst-case graph of one micro-batch
// (n_ubatch = 512 tokens) in fp32, whose largest live set is the logits [n_vocab, n_ubatch] or,
// without flash attention, the scores [n_ctx, n_ubatch, n_head], plus a hidden-width tensor.
std::uint64_t llama_cpp_compute_buffer(const model_spec& spec, const inference_config& c,
                                       std::uint64_t context) {
  const std::uint64_t ubatch = std::min<std::uint64_t>(512, c.batch * c.prompt_tokens);
  std::uint64_t widest = spec.vocab_size;
  widest = std::max(widest, 2 * spec.intermediate_size);
  if (c.attention == attention_kernel::eager) widest = std::max(widest, spec.num_heads * context);
  return 4 * ubatch * (widest + spec.hidden_size);
}

}  // namespace

// llama.cpp: the weights, the KV cache of n_ctx cells (batch x tokens per sequence) and the
// compute buffer are fixed device buffers outside any caching allocator.
void llama_cpp_buffers(const model_spec& spec, const inference_config& config,
                       std::uint64_t total_tokens, inference_estimate& out) {
  const std::uint64_t cells =
      config.batch * (config.kv_cache_tokens ? config.kv_cache_tokens : total_tokens);
  out.kv_cache_bytes = kv_cache_bytes(spec, config, cells);
  const std::uint64_t compute = llama_cpp_compute_buffer(spec, config, cells / config.batch);
  out.peak.by_category[static_cast<std::size_t>(cat::weights)] = out.weight_bytes;
  out.peak.by_category[static_cast<std::size_t>(cat::kv_cache)] = out.kv_cache_bytes;
  out.peak.by_category[static_cast<std::size_t>(cat::activations)] = compute;
  out.peak.phase = "prefill";
  out.peak.allocated = out.weight_bytes + out.kv_cache_bytes + compute;
  out.peak_reserved = out.peak.allocated;
  out.notes.push_back("llama.cpp allocates fixed buffers (weights, a KV cache of " +
                      std::to_string(cells) +
                      " cells, the compute buffer of a 512-token micro-batch) with no caching "
                      "allocator: allocated and reserved are their sum");
}

}  // namespace gpumem
