// Colossal-AI's Gemini (colossalai/zero/gemini/): ZeRO-3 in chunks whose fp16 slots also hold the
// gradients, stepped by HybridAdam on those fp16 gradients.
#include "parallel/data_parallel_method.hpp"

namespace gpumem {

const data_parallel_traits& colossalai_data_parallel() {
  static const data_parallel_traits gemini = [] {
    data_parallel_traits t;
    t.name = "gemini";
    t.shards_params = t.shards_grads = t.shards_states = true;
    // GeminiDDP converts the module to 16 bits; HybridAdam updates in place
    // (colossalai/nn/optimizer/hybrid_adam.py).
    t.engine = true;
    t.steps_unused_params = true;
    // ZeroDDP grad_handle: copy_tensor_to_chunk_slice writes the reduced shard into the
    // parameters' fp16 chunk slots, which HybridAdam reads.
    t.grads_in_param_chunks = true;
    t.offloads_optimizer = true;  // placement_policy "static" / "auto" to the CPU
    return t;
  }();
  return gemini;
}

}  // namespace gpumem
