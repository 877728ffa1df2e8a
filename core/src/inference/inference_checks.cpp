#include "inference/inference_checks.hpp"

#include <algorithm>
#include <string>

#include "gpumem/model/param_count.hpp"
#include "text/number_text.hpp"

namespace gpumem {

namespace {

// Requests whose tensors could exceed 2^53 bytes (8 PiB) are refused rather than computed with
// wrapped or inexact sizes (JSON numbers are exact to 2^53): a rough upper bound of the KV cache
// and the widest activations.
std::optional<error> check_size(const model_spec& spec, const inference_config& c) {
  // The weights alone, at most 4 bytes a parameter (quantised formats are smaller).
  double params = 0;
  for (const auto& t : spec.tensors) params += static_cast<double>(t.numel());
  if (4 * params >= static_cast<double>(max_exact_count)) {
    return error{"request.too_large", "model",
                 "[model] has " + grouped_number(params, 0) +
                     " parameters: their weights could pass 2^53 bytes, beyond which byte counts "
                     "are not exact in JSON"};
  }
  const double sequences = static_cast<double>(c.batch);
  const double tokens =
      static_cast<double>(c.prompt_tokens + c.new_tokens) + static_cast<double>(c.kv_cache_tokens);
  const double width = static_cast<double>(std::max(
      {spec.hidden_size, spec.intermediate_size, spec.vocab_size,
       spec.num_heads * std::max(spec.head_dim, spec.v_head_dim),
       spec.moe.experts_run() * spec.moe.expert_intermediate + spec.moe.shared_intermediate,
       spec.moe.dense_dispatch ? spec.moe.num_experts * spec.hidden_size : 0}));
  double bytes = sequences * tokens * static_cast<double>(spec.layers.size()) * 2 * width * 4;
  if (c.attention == attention_kernel::eager)
    bytes += sequences * static_cast<double>(spec.num_heads) * tokens * tokens * 8;
  // A windowed layer's prefill under SDPA holds a mask of the prompt's tokens squared.
  const bool windowed =
      std::any_of(spec.layers.begin(), spec.layers.end(),
                  [](const layer_spec& l) { return l.sliding_window_tokens > 0; });
  if (windowed) bytes += sequences * tokens * tokens * 8;
  bytes += static_cast<double>(c.profile_tokens) * width * 16 +
           static_cast<double>(c.profile_sequences) * static_cast<double>(spec.vocab_size) * 16;
  if (bytes < static_cast<double>(max_exact_count)) return std::nullopt;
  return error{
      "request.too_large", "workload.seq_len",
      "[workload.seq_len] this request's KV cache and activations could exceed 2^53 bytes; "
      "reduce seq_len, new_tokens or micro_batch"};
}

}  // namespace

namespace {

// AutoAWQ serves AWQ checkpoints (its WQLinear modules) with fused modules for Llama-like models
// (awq/models/*.py fuse_layers: LlamaLikeBlock for Llama, Mistral, Qwen2 and their kin), over one
// GPU or with its layers spread by device_map; its fused cache is preallocated.
std::optional<error> check_autoawq(const model_spec& spec, const inference_config& config) {
  if (config.weights.format != weight_format::awq_4bit) {
    return error{
        "request.invalid_value", "workload.weights",
        "[workload.weights] the autoawq framework serves AWQ checkpoints (awq_4bit); got " +
            std::string(weight_format_name(config.weights.format))};
  }
  if (config.tp_degree > 1) {
    return error{"request.invalid_value", "parallel.method",
                 "[parallel.method] AutoAWQ spreads a model's layers over GPUs (device_map): use "
                 "pipeline"};
  }
  if (spec.norm != norm_kind::rms_norm || !spec.gated_mlp || spec.moe.num_experts > 0 || spec.mla) {
    return error{"request.invalid_value", "workload.framework",
                 "[workload.framework] AutoAWQ's fused modules cover Llama-like decoders (RMSNorm, "
                 "a gated MLP, no experts); " +
                     spec.architecture + " is not one"};
  }
  // The cache (max_seq_len) must hold the prompt: a longer one fails on the cache's shape; past
  // it, decode rolls the window (cache.py roll_kv).
  if (config.kv_cache_tokens != 0 && config.kv_cache_tokens < config.prompt_tokens) {
    return error{"request.invalid_value", "workload.kv_cache.tokens",
                 "[workload.kv_cache.tokens] AutoAWQ's max_seq_len must hold the prompt (" +
                     std::to_string(config.prompt_tokens) + " tokens), got " +
                     std::to_string(config.kv_cache_tokens)};
  }
  if (config.kv != kv_cache_kind::static_cache) {
    return error{
        "request.invalid_value", "workload.kv_cache.kind",
        "[workload.kv_cache.kind] AutoAWQ's fused modules preallocate their cache: static"};
  }
  return std::nullopt;
}

}  // namespace

std::optional<error> check_inference_request(const model_spec& spec,
                                             const inference_config& config) {
  const std::uint64_t tp = std::max<std::uint64_t>(config.tp_degree, 1);
  const std::uint64_t pp = std::max<std::uint64_t>(config.pp_degree, 1);
  if (auto e = check_tensor_parallel(spec, tp)) return *e;
  if (pp > spec.layers.size()) {
    return error{"parallel.invalid_degree", "cluster.gpus",
                 "[cluster.gpus] a layer split needs at most one GPU per layer (" +
                     std::to_string(spec.layers.size()) + ")"};
  }
  const bool gguf = is_gguf(config.weights.format);
  const bool llama_cpp = config.framework == serving_framework::llama_cpp;
  if (gguf != llama_cpp) {
    return error{"request.invalid_value", "workload.weights",
                 "[workload.weights] GGUF formats (gguf_*) run under the llama_cpp framework, "
                 "and llama_cpp runs GGUF formats"};
  }
  const bool experts =
      std::any_of(spec.tensors.begin(), spec.tensors.end(),
                  [](const tensor_spec& t) { return t.role == tensor_role::routed_experts; });
  if (config.weights.format == weight_format::mxfp4 && !experts) {
    return error{"request.invalid_value", "workload.weights",
                 "[workload.weights] mxfp4 checkpoints quantise routed experts (gpt-oss); " +
                     spec.architecture + " has none"};
  }
  if (llama_cpp && tp > 1) {
    return error{"request.invalid_value", "parallel.method",
                 "[parallel.method] llama.cpp splits a model by layers: use pipeline"};
  }
  if (config.framework == serving_framework::autoawq) {
    if (auto e = check_autoawq(spec, config)) return e;
  }
  return check_size(spec, config);
}

}  // namespace gpumem
