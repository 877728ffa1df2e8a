#include "gpumem/inference/inference_speed.hpp"

#include <algorithm>

#include "gpumem/plan/step_time.hpp"

namespace gpumem {

namespace {

// transformers' generate() decode step, timed warm on an H200 host (torch 2.11.0, transformers
// 5.17.0, Python 3.12; tools/measure/host_overhead.py, validation/raw_h200/host_overhead_*.json):
// Llama-3.2-1B and Llama-3.1-8B launched 726 and 1,510 kernels a step with a dynamic cache, 45-47
// a block (the block's modules and the cache's torch.cat; generate's logits processing, argmax
// and stopping checks spread over the blocks), and 864 and 1,776 with a static cache, 54-56 a
// block (index_copy_ into the full-length cache, its mask); the steps took 16-22 us of host a
// kernel (12.5-38.4 ms), the GPU idle between. A faster or slower host CPU moves the last.
constexpr double generate_kernels_per_block = 46.0;
constexpr double generate_static_kernels_per_block = 55.0;
constexpr double generate_host_per_kernel_s = 20e-6;

// The host's floor under an eager decode step: every kernel launched from Python.
double eager_decode_floor_s(const model_spec& spec, const inference_config& config) {
  const double blocks = static_cast<double>(spec.num_layers);
  if (config.framework == serving_framework::transformers) {
    const double kernels = config.kv == kv_cache_kind::static_cache
                               ? generate_static_kernels_per_block
                               : generate_kernels_per_block;
    return blocks * kernels * generate_host_per_kernel_s;
  }
  // litgpt's and AutoAWQ's loops, not measured: the block's modules at a bare launch's cost.
  return blocks * kernels_per_block_forward * kernel_launch_s;
}

}  // namespace

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
    const double launches = eager_decode_floor_s(spec, config);
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
