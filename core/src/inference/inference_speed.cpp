#include "gpumem/inference/inference_speed.hpp"

#include <algorithm>

#include "gpumem/plan/step_time.hpp"

namespace gpumem {

inference_speed estimate_inference_speed(const model_spec& spec, const param_count& counts,
                                         const inference_config& config, const gpu_spec& gpu,
                                         const inference_estimate& rank) {
  inference_speed out;
  const double tp = static_cast<double>(std::max<std::uint64_t>(config.tp_degree, 1));
  const double stages = static_cast<double>(std::max<std::uint64_t>(config.pp_degree, 1));
  const double batch = static_cast<double>(config.batch);
  const double prompt = static_cast<double>(config.prompt_tokens);
  const double peak = matmul_flops(gpu, config.activation_bf16, config.activation_bytes >= 4);
  if (peak <= 0 || gpu.memory_bandwidth_bytes_per_s <= 0) return out;
  const bool fused = config.attention != attention_kernel::eager;
  // Prefill: every prompt token through the model, at the training model's utilisation.
  out.prefill_s = batch * prompt *
                  model_forward_flops_per_token(spec, counts, config.prompt_tokens, fused) / tp /
                  (peak * default_mfu);
  // A decode step at the mean length of the generation: the weights once, and each sequence's
  // keys and values so far; its matmuls are 2 FLOPs per active parameter and sequence.
  const double length = prompt + static_cast<double>(config.new_tokens) / 2.0;
  const double bytes = stages * (static_cast<double>(rank.weight_bytes) +
                                 batch * static_cast<double>(rank.kv_bytes_per_token) * length);
  const double memory_s = bytes / (gpu.memory_bandwidth_bytes_per_s * achieved_bandwidth_share);
  const double compute_s =
      batch * 2.0 * static_cast<double>(counts.active) / tp / (peak * default_mfu);
  // Tensor parallelism all-reduces twice a block (Megatron), each a small collective's latency.
  const double collectives_s =
      tp > 1 ? static_cast<double>(spec.num_layers) * 2.0 * collective_latency_s : 0.0;
  out.decode_step_s = std::max(memory_s, compute_s) + collectives_s;
  // transformers launches every kernel from Python each step; vLLM (CUDA graphs captured for
  // decode unless enforce_eager, vllm/worker/model_runner.py) and llama.cpp (ggml-cuda's CUDA
  // graphs) replay them.
  if (config.framework == serving_framework::transformers ||
      config.framework == serving_framework::litgpt ||
      config.framework == serving_framework::autoawq) {
    const double launches =
        static_cast<double>(spec.num_layers) * kernels_per_block_forward * kernel_launch_s;
    out.launch_bound = launches > out.decode_step_s;
    out.decode_step_s = std::max(out.decode_step_s, launches);
  }
  out.decode_tokens_per_s = batch / out.decode_step_s;
  out.per_sequence_tokens_per_s = 1.0 / out.decode_step_s;
  const double steps = config.new_tokens > 0 ? static_cast<double>(config.new_tokens - 1) : 0.0;
  out.request_s = out.prefill_s + steps * out.decode_step_s;
  return out;
}

}  // namespace gpumem
