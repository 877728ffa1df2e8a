// The inference request: `workload` (weights, precisions, lengths, the KV cache), `parallel`
// (how the model is split over cluster.gpus) and `solve`, read in a fixed order: the first
// refusal is the answer.
#include <nlohmann/json.hpp>

#include "api/request_fields.hpp"
#include "api/request_reader.hpp"
#include "model/config_reader.hpp"

namespace gpumem {

using json = nlohmann::ordered_json;

namespace {

// The serving framework, the weights' format, the precisions, attention and the lengths; the
// compute precision's name, which the KV cache's default dtype follows.
result<std::string> read_inference_formats(config_reader& in, inference_config& c) {
  const auto framework = choose(in, "framework", "transformers",
                                {"transformers", "litgpt", "vllm", "llama_cpp", "autoawq"});
  const bool llama_cpp = framework && *framework == "llama_cpp";
  const auto weights =
      choose(in, "weights", llama_cpp ? "gguf_q4_k_m" : "bf16",
             {"fp32", "fp16", "bf16", "fp8", "int8", "nf4", "fp4", "nf4_double_quant",
              "fp4_double_quant", "gptq_4bit", "awq_4bit", "mxfp4", "gguf_q8_0", "gguf_q6_k",
              "gguf_q5_k_m", "gguf_q4_k_m", "gguf_q3_k_m", "gguf_q2_k"});
  const bool fp32_weights = weights && *weights == "fp32";
  const auto compute =
      choose(in, "compute", fp32_weights ? "fp32" : "bf16",
             {"fp32", "fp16", "bf16", "amp_fp16", "amp_bf16", "pure_fp16", "pure_bf16"});
  const auto scaling = choose(in, "fp8_scaling", "per_channel", {"per_tensor", "per_channel"});
  const auto attention = choose(in, "attention", "sdpa", {"eager", "sdpa", "flash"});
  c.weights.group_size = in.optional({"group_size"}, c.weights.group_size, 1ULL << 20);
  c.batch = in.optional({"micro_batch"}, c.batch, 1ULL << 20);
  c.prompt_tokens = in.optional({"seq_len"}, c.prompt_tokens, max_positions);
  c.new_tokens = in.optional({"new_tokens"}, c.new_tokens, max_positions);
  if (auto problem = in.problem("")) return *problem;
  c.weights.format = *weight_format_named(*weights);  // `choose` accepted only these names
  c.weights.fp8 = *scaling == "per_tensor" ? fp8_scaling::per_tensor : fp8_scaling::per_channel;
  c.activation_bytes = *compute == "fp32" ? 4 : 2;
  c.activation_bf16 = compute->find("bf16") != std::string::npos;
  c.weights.dense_bytes = c.activation_bytes;
  c.attention = attention_kernel_named(*attention);
  c.framework = *serving_framework_named(*framework);  // `choose` accepted only these names
  return *compute;
}

// A quantised checkpoint's weights are what its config.json says (quantization_config): unstated
// weights take them; stated ones must agree. An FP8 or MXFP4 checkpoint may also run dequantised
// to 16 bits (transformers' FineGrainedFP8Config and Mxfp4Config with dequantize=True, DeepSeek's
// fp8_cast_bf16.py).
std::optional<error> checkpoint_weights(const json& workload, const model_spec& model,
                                        inference_config& c) {
  // llama.cpp runs a GGUF file converted from the checkpoint: its own quantisation.
  if (!model.quantized_checkpoint || c.framework == serving_framework::llama_cpp)
    return std::nullopt;
  const checkpoint_quantization& q = model.checkpoint;
  const auto format = weight_format_named(q.weights);
  if (!format) return std::nullopt;
  if (workload.contains("weights")) {
    const bool dequantised =
        (*format == weight_format::mxfp4 || *format == weight_format::fp8) &&
        (c.weights.format == weight_format::bf16 || c.weights.format == weight_format::fp16);
    if (c.weights.format != *format && !dequantised) {
      return error{"request.invalid_value", "workload.weights",
                   "[workload.weights] the checkpoint stores its weights as " + q.weights +
                       " (its config.json's quantization_config, quant_method " + q.method +
                       "); got " + weight_format_name(c.weights.format) +
                       ": leave weights out or state " + q.weights};
    }
    if (dequantised) return std::nullopt;
  }
  c.weights.format = *format;
  c.unquantized_modules = q.unconverted;
  if (q.group_size > 0 && !workload.contains("group_size")) c.weights.group_size = q.group_size;
  c.weights.act_order = q.act_order;
  if (q.fp8_per_tensor && !workload.contains("fp8_scaling"))
    c.weights.fp8 = fp8_scaling::per_tensor;
  return std::nullopt;
}

// The KV cache: each framework's own default kind.
std::optional<error> read_kv_cache(const json& workload, const std::string& compute,
                                   inference_config& c) {
  const json& kv = member(workload, "kv_cache");
  if (auto e = check_object(workload, "kv_cache", "workload")) return *e;
  if (auto e = unknown_keys(kv, "workload.kv_cache",
                            {"kind", "dtype", "tokens", "block_size", "gpu_memory_utilization",
                             "max_num_batched_tokens", "max_num_seqs"})) {
    return *e;
  }
  config_reader kv_in(kv, "workload.kv_cache", "request");
  const char* default_kind = c.framework == serving_framework::vllm           ? "paged"
                             : c.framework == serving_framework::transformers ? "dynamic"
                                                                              : "static";
  const auto kind = choose(kv_in, "kind", default_kind, {"dynamic", "static", "paged"});
  const auto dtype = choose(kv_in, "dtype", compute == "fp32" ? "fp32" : "bf16",
                            {"fp32", "fp16", "bf16", "fp8", "int8"});
  c.kv_cache_tokens = kv_in.optional({"tokens"}, 0, max_positions);  // absent: the default
  c.block_size = kv_in.optional({"block_size"}, c.block_size, 1024);
  c.gpu_memory_utilization =
      kv_in.number("gpu_memory_utilization", c.gpu_memory_utilization, 0.01, 1.0);
  c.profile_tokens = kv_in.optional({"max_num_batched_tokens"}, c.profile_tokens, 1ULL << 20);
  c.profile_sequences = kv_in.optional({"max_num_seqs"}, c.profile_sequences, 1ULL << 16);
  if (auto problem = kv_in.problem("")) return *problem;
  c.kv = *kv_cache_kind_named(*kind);
  c.kv_bytes = *dtype == "fp32" ? 4 : (*dtype == "fp8" || *dtype == "int8") ? 1 : 2;
  if ((c.kv == kv_cache_kind::paged) != (c.framework == serving_framework::vllm)) {
    return error{"request.invalid_value", "workload.kv_cache.kind",
                 "[workload.kv_cache.kind] paged is vLLM's cache, and vLLM's cache is paged"};
  }
  const std::uint64_t context = c.prompt_tokens + c.new_tokens;
  // (AutoAWQ's fused cache is max_seq_len, which must hold the prompt: check_autoawq.)
  if (c.framework == serving_framework::autoawq) return std::nullopt;
  // The last new token is sampled, never fed back: transformers' generate sizes a static cache
  // to prompt + new tokens - 1 (validation/measured_h100_batch2.json: 1,151 for 1,024 + 128).
  if (c.kv_cache_tokens != 0 && c.kv_cache_tokens + 1 < context) {
    return error{"request.invalid_value", "workload.kv_cache.tokens",
                 "[workload.kv_cache.tokens] a preallocated cache must hold the prompt and all "
                 "but the last new token (" +
                     std::to_string(context - 1) + "), got " + std::to_string(c.kv_cache_tokens)};
  }
  return std::nullopt;
}

// How the model is split over cluster.gpus: one GPU, tensor parallelism, or layers split.
std::optional<error> read_inference_parallel(const json& request, std::uint64_t gpus,
                                             inference_request& out) {
  inference_config& c = out.config;
  if (auto e = check_object(request, "parallel")) return *e;
  const json& parallel = member(request, "parallel");
  if (auto e = unknown_keys(parallel, "parallel", {"method"})) return *e;
  config_reader p_in(parallel, "parallel", "request");
  const auto method = choose(p_in, "method", gpus > 1 ? "tensor_parallel" : "single",
                             {"single", "tensor_parallel", "pipeline", "pipeline_layers"});
  if (auto problem = p_in.problem("")) return *problem;
  out.method = *method == "pipeline_layers" ? "pipeline" : *method;
  if (out.method == "single" && gpus != 1) {
    return error{
        "request.invalid_value", "parallel.method",
        "[parallel.method] single runs on one GPU; cluster.gpus is " + std::to_string(gpus)};
  }
  if (out.method == "tensor_parallel") c.tp_degree = gpus;
  if (out.method == "pipeline") c.pp_degree = gpus;
  return std::nullopt;
}

// What to solve for, if anything.
std::optional<error> read_solve(const json& request, inference_request& out) {
  const json& solve = member(request, "solve");
  if (request.contains("solve")) {
    if (!solve.is_string() || (solve != "max_context" && solve != "max_batch")) {
      return error{"request.invalid_value", "solve",
                   "[solve] must be \"max_context\" or \"max_batch\", got " + solve.dump()};
    }
    out.solve = solve.get<std::string>();
  }
  return std::nullopt;
}

// workload.software: transformers' release, whose generate() changed what a prefill keeps, and
// AutoAWQ's, whose fused modules changed (autoawq_fused.hpp).
std::optional<error> read_inference_software(const json& workload, inference_config& c) {
  if (auto e = read_library_releases(workload,
                                     {{"transformers", &c.transformers}, {"autoawq", &c.autoawq}},
                                     "{\"transformers\": \"4.36.2\"}", "4.36.2"))
    return e;
  const bool autoawq = c.framework == serving_framework::autoawq;
  if (c.autoawq && !autoawq) {
    return error{"request.invalid_value", "workload.software.autoawq",
                 "[workload.software.autoawq] is the release of AutoAWQ's fused modules: framework "
                 "autoawq"};
  }
  if (!c.transformers) return std::nullopt;
  if (c.framework != serving_framework::transformers && !autoawq) {
    return error{"request.invalid_value", "workload.software.transformers",
                 "[workload.software.transformers] is the release of transformers' generate(): "
                 "framework transformers or autoawq"};
  }
  // An unstated attention is the release's default.
  if (!workload.contains("attention") && transformers_eager_by_default(*c.transformers))
    c.attention = attention_kernel::eager;
  return std::nullopt;
}

}  // namespace

result<inference_request> read_inference_request(const json& request, const model_spec& model,
                                                 std::uint64_t gpus,
                                                 std::vector<std::string>& warnings) {
  if (auto e = check_object(request, "workload")) return *e;
  const json& workload = member(request, "workload");
  if (auto e = unknown_keys(
          workload, "workload",
          {"phase", "weights", "fp8_scaling", "group_size", "compute", "micro_batch", "seq_len",
           "new_tokens", "kv_cache", "attention", "framework", "software"})) {
    return *e;
  }
  config_reader in(workload, "workload", "request");
  inference_request out;
  inference_config& c = out.config;
  const auto compute = read_inference_formats(in, c);
  if (!compute.ok()) return compute.failure();
  if (auto e = checkpoint_weights(workload, model, c)) return *e;
  if (auto e = read_inference_software(workload, c)) return *e;
  if (auto e = read_kv_cache(workload, compute.value(), c)) return *e;
  const std::uint64_t context = c.prompt_tokens + c.new_tokens;
  if (auto e = check_seq_len(model, context, warnings))
    return error{e->code, "workload.seq_len", e->message};
  if (auto e = read_inference_parallel(request, gpus, out)) return *e;
  if (auto e = read_solve(request, out)) return *e;
  return out;
}

}  // namespace gpumem
