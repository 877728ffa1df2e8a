#pragma once
// Colossal-AI Gemini's chunk layout (colossalai/zero/gemini/chunk/search_utils.py and
// manager.py, version 0.3.0 as vendored by LLMem): the chunk size search and the registration
// of parameters into chunks, in elements. LLMem's m_init holds these chunks (fp16 parameters
// and fp32 master copies), so gpumem computes them instead of measuring them.

#include <cstdint>
#include <vector>

namespace gpumem {

struct gemini_search_options {
  std::uint64_t search_range_elements = 32ULL << 20;  // search_range_m = 32 ("MB" of elements)
  std::uint64_t min_chunk_elements = 32ULL << 20;     // min_chunk_size_m = 32
  std::uint64_t search_interval = 1024;               // hidden_dim unset: 1024 elements
  bool filter_exlarge_params = true;                  // drop params above mean + 3 sigma
};

struct gemini_layout {
  std::uint64_t chunk_size = 0;  // elements; a multiple of the DP degree
  bool keep_gathered = false;    // the whole model is under min_chunk: one chunk, never sharded
  std::uint64_t wasted = 0;      // unused elements of the searched layout
  // Capacity of every chunk in registration order (oversize tensors get their own chunk).
  std::vector<std::uint64_t> chunks;
};

// `numels`: parameter sizes (local to the rank under tensor parallelism) in model.parameters()
// order; `dp_degree`: ranks a chunk is sharded over.
gemini_layout gemini_chunk_layout(const std::vector<std::uint64_t>& numels, std::uint64_t dp_degree,
                                  const gemini_search_options& options = {});

// The unused elements of next-fit packing of `sizes` into chunks of `chunk_size`
// (search_utils._get_unused_byte); exposed for tests.
std::uint64_t gemini_unused_elements(const std::vector<std::uint64_t>& sizes,
                                     std::uint64_t chunk_size);

}  // namespace gpumem
