// Every rule that refuses a training combination, run before any memory is counted: lengths and
// sizes that would pass exact byte counts, adapter targets, and what each framework, parallel
// method and offload accepts (check_training_combination).
#include "training/step_checks.hpp"

#include <algorithm>

#include "gpumem/model/param_count.hpp"
#include "parallel/data_parallel_method.hpp"
#include "training/adapter_targets.hpp"
#include "training/framework.hpp"
#include "training/step_replay.hpp"

namespace gpumem {

namespace {
// Context parallelism splits every sequence evenly over the cp ranks: the ring into 2 cp
// load-balanced chunks, two per rank (Megatron-LM get_batch_on_this_cp_rank; TransformerEngine
// asserts an even length per GPU), Ulysses into cp. Ulysses scatters the heads and the
// key/value heads over the ranks (deepspeed/sequence/layer.py; DeepSpeed's uneven-heads
// all-to-all is not modelled); the ring runs 16-bit fused kernels only (TransformerEngine's
// ring wraps flash / cuDNN attention, which take fp16 and bf16).
std::optional<error> check_context_parallel(const model_spec& spec, const training_config& config,
                                            std::uint64_t tp, std::uint64_t cp) {
  if (cp == 1) return std::nullopt;
  const bool ring = config.cp_kind == context_parallel_kind::ring;
  const std::uint64_t chunks = ring ? 2 * cp : cp;
  if (config.seq_len % chunks != 0) {
    return error{"parallel.invalid_degree", "parallel.cp",
                 "[parallel.cp] context parallelism splits each sequence evenly: seq_len " +
                     std::to_string(config.seq_len) + " is not a multiple of " +
                     (ring ? "2 x cp (" : "cp (") + std::to_string(chunks) + ")"};
  }
  if (!ring && (spec.num_heads / tp % cp != 0 || spec.num_kv_heads / tp % cp != 0)) {
    return error{"parallel.invalid_degree", "parallel.cp",
                 "[parallel.cp] Ulysses scatters the heads over the cp ranks: cp " +
                     std::to_string(cp) + " must divide the attention heads (" +
                     std::to_string(spec.num_heads / tp) + ") and key/value heads (" +
                     std::to_string(spec.num_kv_heads / tp) + ") of each tensor-parallel rank"};
  }
  if (ring && kernel_run(spec, config.attention, framework_of(config).transformers_modelling) ==
                  attention_kernel::eager) {
    return error{"request.invalid_value", "workload.attention",
                 "[workload.attention] ring attention runs a fused kernel: use sdpa or flash (or "
                 "cp_kind ulysses for eager attention)"};
  }
  if (ring && config.compute == compute_precision::fp32) {
    return error{"request.invalid_value", "workload.compute",
                 "[workload.compute] ring attention's fused kernels run in 16 bits: use amp_bf16, "
                 "amp_fp16, pure_bf16 or pure_fp16 (or cp_kind ulysses)"};
  }
  return std::nullopt;
}

// An LLM.int8 base as transformers loads it for PEFT (load_in_8bit): bitsandbytes' Int8Params
// are whole int8 matrices with their row scales, which no framework here shards or splits
// (FSDP and ZeRO-3 flatten floating-point parameters; QLoRA's FSDP path stores 4-bit codes in
// a float quant_storage, which LLM.int8 lacks), and litgpt, torchtune and unsloth train
// 4-bit or 16-bit bases only.
std::optional<error> check_int8_base(const training_config& config) {
  if (config.quantization != base_quantization::int8) return std::nullopt;
  if (!framework_of(config).transformers_modelling) {
    return error{"request.invalid_value", "workload.weights",
                 "[workload.weights] an int8 (LLM.int8) base is modelled as transformers and PEFT "
                 "train it: framework transformers"};
  }
  if (shards_parameters(config.sharding) || config.tp_degree > 1 || config.offload.any()) {
    return error{"request.invalid_value", "parallel.method",
                 "[parallel.method] an int8 (LLM.int8) base is neither sharded, split nor "
                 "offloaded: one GPU, ddp, zero1 or zero2, tp 1, no offload"};
  }
  return std::nullopt;
}

}  // namespace

// Library releases the request cannot run with: torch 1.x runs neither litgpt, torchtune, unsloth
// nor torchtitan (each needs torch 2) nor SDPA (torch 2.0's F.scaled_dot_product_attention);
// PEFT is the adapter library of transformers runs; PEFT < 0.12 leaves LoRA's adapters fp16 over
// an fp16 base, whose gradients AMP's GradScaler refuses ("Attempting to unscale FP16
// gradients", PEFT's troubleshooting guide) unless a ZeRO engine keeps fp32 masters.
std::optional<error> check_software(const training_config& config) {
  const software_stack& software = config.software;
  if (!software.has_sdpa() && !framework_of(config).torch1) {
    return error{"request.invalid_value", "workload.software.torch",
                 "[workload.software.torch] litgpt, torchtune, unsloth and torchtitan need torch "
                 "2; torch 1.x is modelled under framework transformers"};
  }
  if (!software.has_sdpa() && config.attention == attention_kernel::sdpa) {
    return error{"request.invalid_value", "workload.attention",
                 "[workload.attention] sdpa is torch 2's scaled_dot_product_attention; under torch "
                 "1.x transformers runs eager attention (or flash-attn's kernels: flash)"};
  }
  if (software.transformers && !framework_of(config).transformers_modelling) {
    return error{"request.invalid_value", "workload.software.transformers",
                 "[workload.software.transformers] is the release of transformers' modeling "
                 "code: framework transformers; litgpt, torchtune, unsloth and torchtitan run "
                 "attention code of their own"};
  }
  if (software.peft && !framework_of(config).peft) {
    return error{"request.invalid_value", "workload.software.peft",
                 "[workload.software.peft] PEFT's adapters are modelled under framework "
                 "transformers; litgpt, torchtune, unsloth and torchtitan make their own"};
  }
  const bool fp16_lora_base = config.finetune == finetune_kind::lora &&
                              config.quantization == base_quantization::none &&
                              config.base_weight_bytes != 4;
  if (software.peft_adapters_in_base_dtype() && config.compute == compute_precision::amp_fp16 &&
      fp16_lora_base && !zero_engine(config.sharding)) {
    return error{"request.invalid_value", "workload.software.peft",
                 "[workload.software.peft] PEFT < 0.12 makes the adapters fp16 over an fp16 "
                 "base, whose gradients AMP's GradScaler refuses to unscale; such runs cast the "
                 "adapters to fp32, as PEFT >= 0.12 does: leave software.peft out, or give 0.12 "
                 "or later"};
  }
  return std::nullopt;
}

namespace {

// PEFT's embedding adapters (LoRA on the token embedding) and modules_to_save copies, as
// transformers + PEFT train them: other frameworks' LoRA has neither (litgpt and torchtune
// adapt linears only), PEFT applies no tensor parallelism, and the copies of a sharded model
// (ZeRO-3, FSDP, Gemini) would be gathered with its root, which is not modelled.
std::optional<error> check_peft_embedding_modules(const model_spec& spec,
                                                  const training_config& config) {
  const bool embedding_lora =
      std::any_of(spec.tensors.begin(), spec.tensors.end(),
                  [&](const tensor_spec& t) { return embedding_lora_target(spec, config, t); });
  const bool copies = config.save_embeddings || config.save_lm_head;
  if (!embedding_lora && !copies) return std::nullopt;
  const std::string field =
      embedding_lora ? "workload.lora.targets" : "workload.lora.modules_to_save";
  const std::string what =
      embedding_lora ? "LoRA on the token embedding" : "modules_to_save (trained copies)";
  if (!framework_of(config).peft) {
    return error{"request.invalid_value", field,
                 "[" + field + "] " + what + " is PEFT's: framework transformers"};
  }
  if (embedding_lora && config.dora) {
    return error{"request.invalid_value", field,
                 "[" + field +
                     "] DoRA on the token embedding is not modelled; leave "
                     "embed_tokens out of the targets, or train LoRA"};
  }
  if (config.tp_degree > 1) {
    return error{"request.invalid_value", "parallel.tp",
                 "[parallel.tp] " + what + " is modelled without tensor parallelism: tp 1"};
  }
  if (spec.encoder_decoder) {
    return error{"request.invalid_value", field,
                 "[" + field + "] " + what + " of encoder-decoders (T5) is not modelled"};
  }
  const auto has = [&](tensor_role role) {
    return std::any_of(spec.tensors.begin(), spec.tensors.end(),
                       [role](const tensor_spec& t) { return t.role == role; });
  };
  const bool head =
      has(tensor_role::lm_head) || (spec.tied_embeddings && !has(tensor_role::task_head));
  if (config.save_lm_head && !head) {
    return error{"request.invalid_value", "workload.lora.modules_to_save",
                 "[workload.lora.modules_to_save] " + spec.architecture +
                     " has no LM head (lm_head) to copy"};
  }
  if (copies && shards_parameters(config.sharding)) {
    return error{"request.invalid_value", "parallel.method",
                 "[parallel.method] modules_to_save under parameter sharding is not modelled: "
                 "one GPU, ddp, zero1 or zero2"};
  }
  return std::nullopt;
}

// Architectures modelled only as transformers' modeling code runs them: T5, DeepSeek's latent
// attention (DeepseekV3Attention) and Llama 4's experts (Llama4TextMoe); other frameworks' own
// implementations keep other tensors.
std::optional<error> check_transformers_only(const model_spec& spec,
                                             const training_config& config) {
  if (framework_of(config).all_architectures) return std::nullopt;
  const char* what = spec.encoder_decoder      ? "encoder-decoders (T5)"
                     : spec.mla                ? "DeepSeek's latent attention"
                     : spec.moe.dense_dispatch ? "Llama 4's mixture of experts"
                                               : nullptr;
  if (what == nullptr) return std::nullopt;
  return error{"request.invalid_value", "workload.framework",
               std::string("[workload.framework] ") + what +
                   ": modelled as transformers trains it, framework transformers"};
}

// DeepSeek's latent attention is modelled on data-parallel ranks and pipeline stages.
std::optional<error> check_latent_attention(const model_spec& spec, const training_config& config) {
  if (!spec.mla) return std::nullopt;
  if (config.tp_degree > 1 || config.cp_degree > 1) {
    return error{"request.invalid_value", "parallel.method",
                 "[parallel.method] DeepSeek's latent attention is modelled on data-parallel ranks "
                 "and pipeline stages: tp and cp 1"};
  }
  return std::nullopt;
}

// Encoder-decoders (T5) are modelled as transformers runs them, on data-parallel ranks.
std::optional<error> check_encoder_decoder(const model_spec& spec, const training_config& config) {
  if (!spec.encoder_decoder) {
    if (config.target_len == 0) return std::nullopt;
    return error{"request.invalid_value", "workload.target_len",
                 "[workload.target_len] is the decoder's length of an encoder-decoder (T5); " +
                     spec.architecture + " has no decoder stack of its own: leave it out"};
  }
  if (config.tp_degree > 1 || config.cp_degree > 1 || config.pp_degree > 1) {
    return error{"request.invalid_value", "parallel.method",
                 "[parallel.method] encoder-decoders (T5) are modelled on data-parallel ranks: "
                 "tp, cp and pp 1"};
  }
  if (config.finetune == finetune_kind::prompt_tuning) {
    return error{"request.invalid_value", "workload.finetune",
                 "[workload.finetune] prompt tuning of encoder-decoders (T5) is not modelled"};
  }
  return std::nullopt;
}
}  // namespace

std::uint64_t largest_sized_micro_batch(const model_spec& spec, std::uint64_t seq_len,
                                        bool quadratic_attention) {
  const double layers = static_cast<double>(spec.layers.size());
  const std::uint64_t experts_read = spec.moe.experts_run();
  const double width = static_cast<double>(
      std::max({spec.hidden_size, spec.embedding_dim, spec.intermediate_size,
                spec.num_heads * std::max(spec.head_dim, spec.v_head_dim),
                spec.moe.expert_intermediate * (experts_read + 1) + spec.moe.shared_intermediate,
                spec.moe.dense_dispatch ? spec.moe.num_experts * spec.hidden_size : 0,
                // the router's one-hot expert mask, [tokens, k, E] (int64)
                spec.moe.experts_per_token * spec.moe.num_experts}));
  double params = 0;
  for (const auto& t : spec.tensors) params += static_cast<double>(t.numel());
  // DoRA rebuilds each adapted weight's norms from a [in, in] identity.
  const double fixed = 40 * params + 64 * width * width * layers;
  const double s = static_cast<double>(seq_len);
  double per_sequence = 64 * s * layers * width + 32 * s * static_cast<double>(spec.vocab_size);
  if (quadratic_attention)
    per_sequence += 16 * s * s * static_cast<double>(spec.num_heads) * layers;
  // Windowed layers under SDPA keep a mask of s x s (masked_sdpa in the block).
  for (const auto& layer : spec.layers) {
    if (layer.sliding_window_tokens > 0) per_sequence += 8 * s * s;
  }
  const double limit = static_cast<double>(max_exact_count);
  if (fixed >= limit || per_sequence <= 0) return 0;
  return static_cast<std::uint64_t>(std::min((limit - fixed) / per_sequence, 1e15));
}

std::optional<error> check_adapter_targets(const model_spec& spec, const training_config& config,
                                           std::vector<std::string>& unmatched) {
  if (config.finetune != finetune_kind::lora && config.finetune != finetune_kind::ia3)
    return std::nullopt;
  bool any = false;
  const bool lora = config.finetune == finetune_kind::lora;
  const bool has_token_table =
      std::any_of(spec.tensors.begin(), spec.tensors.end(),
                  [&](const tensor_spec& t) { return token_table(spec, t); });
  for (const auto& target : config.lora_targets) {
    const std::vector<std::string> one{target};
    bool found = target == "all-linear" || (lora && target == "lm_head" && spec.tied_embeddings);
    for (const auto& t : spec.tensors) found = found || adapter_target_of(one, t);
    found = found || (lora && has_token_table && names_token_embedding(spec, target));
    any = any || found;
    if (!found) unmatched.push_back(target);
  }
  if (any) return std::nullopt;
  // PEFT raises "Target modules ... not found in the base model" when none matches.
  std::vector<std::string> modules;
  for (const auto& t : spec.tensors) {
    if (t.is_bias || (t.module != module_kind::linear && t.module != module_kind::conv1d) ||
        t.role == tensor_role::router)
      continue;
    const std::string& module = t.module_name.empty() ? module_of(t.name) : t.module_name;
    if (std::find(modules.begin(), modules.end(), module) == modules.end())
      modules.push_back(module);
  }
  std::string names;
  for (const auto& m : modules) names += (names.empty() ? "" : ", ") + m;
  const std::string field =
      config.finetune == finetune_kind::ia3 ? "workload.ia3.targets" : "workload.lora.targets";
  return error{"request.invalid_value", field,
               "[" + field +
                   "] no target names a linear module of this model; its linear modules: " + names +
                   " (or all-linear)"};
}

std::optional<error> check_training_size(const model_spec& spec, std::uint64_t micro_batch,
                                         std::uint64_t seq_len, bool quadratic_attention,
                                         const std::string& length) {
  const std::uint64_t sized = largest_sized_micro_batch(spec, seq_len, quadratic_attention);
  if (micro_batch <= sized) return std::nullopt;
  if (sized == 0 && largest_sized_micro_batch(spec, 1, false) == 0) {
    // The model's weights and states alone, whatever the sequence (40 bytes a parameter).
    return error{"request.too_large", "model",
                 "[model] is too large to train with exact byte counts: its weights, gradients "
                 "and optimizer states could pass 2^53 bytes"};
  }
  if (sized == 0) {
    return error{"request.too_large", "workload." + length,
                 "[workload." + length + "] one sequence of " + std::to_string(seq_len) +
                     " tokens could take more than 2^53 bytes of training tensors; reduce " +
                     length};
  }
  return error{"request.too_large", "workload.micro_batch",
               "[workload.micro_batch] at " + length + " " + std::to_string(seq_len) +
                   " this training step's tensors could exceed 2^53 bytes beyond micro-batch " +
                   std::to_string(sized) + "; reduce micro_batch or " + length};
}

std::optional<error> check_training_lengths(const model_spec& spec, const training_config& config,
                                            std::uint64_t micro_batch, std::uint64_t positions) {
  const bool transformers = framework_of(config).transformers_modelling;
  const bool scores = kernel_run(spec, config.attention, transformers) == attention_kernel::eager ||
                      config.compute == compute_precision::fp32;
  if (auto e = check_training_size(spec, micro_batch, positions, scores)) return e;
  if (spec.encoder_decoder && config.target_len > 0)
    return check_training_size(spec, micro_batch, config.target_len, scores, "target_len");
  return std::nullopt;
}

namespace {
std::optional<error> check_llama_adapter(const model_spec& spec, const training_config& config) {
  if ((config.finetune == finetune_kind::llama_adapter_v1 ||
       config.finetune == finetune_kind::llama_adapter_v2) &&
      spec.layers.size() <= config.adapter_start_layer) {
    return error{"request.invalid_value", "workload.finetune",
                 "[workload.finetune] LLaMA-Adapter starts at block " +
                     std::to_string(config.adapter_start_layer) + "; the model has " +
                     std::to_string(spec.layers.size()) + " blocks"};
  }
  return std::nullopt;
}

std::optional<error> check_ia3(const training_config& config) {
  if (config.finetune == finetune_kind::ia3 && !framework_of(config).peft) {
    return error{"request.invalid_value", "workload.finetune",
                 "[workload.finetune] ia3 is PEFT's: framework transformers"};
  }
  return std::nullopt;
}

std::optional<error> check_pipeline(const model_spec& spec, const training_config& config) {
  const std::uint64_t pp = std::max<std::uint64_t>(config.pp_degree, 1);
  if (pp > spec.layers.size() || config.pp_stage >= pp) {
    return error{"parallel.invalid_degree", "parallel.pp",
                 "[parallel.pp] a pipeline needs at least one of the " +
                     std::to_string(spec.layers.size()) + " blocks per stage; got " +
                     std::to_string(pp) + " stages"};
  }
  const bool shared_blocks =
      std::any_of(spec.layers.begin(), spec.layers.end(),
                  [](const layer_spec& layer) { return layer.shares_params_of >= 0; });
  if (pp > 1 && shared_blocks) {
    return error{"request.invalid_value", "parallel.pp",
                 "[parallel.pp] the model's blocks share their parameters (ALBERT), which a "
                 "pipeline cannot place on separate stages"};
  }
  if (pp > 1 && !data_parallel_of(config.sharding).beside_pipeline) {
    return error{"request.invalid_value", "parallel.dp_method",
                 "[parallel.dp_method] a pipeline replicates over DDP or ZeRO-1 only"};
  }
  return std::nullopt;
}

std::optional<error> check_offload(const training_config& config) {
  const auto dp = config.sharding;
  const offload_placement& off = config.offload;
  const bool grads_to_host =
      off.optimizer != offload_target::none || off.gradients != offload_target::none;
  if (off.params != offload_target::none && !shards_parameters(dp)) {
    return error{"request.invalid_value", "parallel.offload.params",
                 "[parallel.offload.params] parameters are offloaded under ZeRO-3, FSDP or Gemini "
                 "(zero3, fsdp_full_shard, fsdp_shard_grad_op, gemini)"};
  }
  if (grads_to_host && !data_parallel_of(dp).offloads_optimizer) {
    return error{"request.invalid_value", "parallel.offload.optimizer",
                 "[parallel.offload.optimizer] optimizer and gradient offload run under ZeRO, FSDP "
                 "or Gemini (a single GPU: zero2 or zero3 with one GPU)"};
  }
  return std::nullopt;
}
}  // namespace

std::optional<error> check_training_request(const model_spec& spec, const training_config& config,
                                            std::vector<std::string>& unmatched_targets) {
  // (Prompt tuning's virtual tokens are already in seq_len: estimate_training_step.)
  if (auto e = check_training_lengths(spec, config, config.micro_batch, config.seq_len)) return e;
  return check_adapter_targets(spec, config, unmatched_targets);
}

std::optional<error> check_training_combination(const model_spec& spec,
                                                const training_config& config) {
  const std::uint64_t tp = std::max<std::uint64_t>(config.tp_degree, 1);
  const std::uint64_t cp = std::max<std::uint64_t>(config.cp_degree, 1);
  // In the order a request's answer names the first refusal (each check may assume the ones
  // before it passed).
  if (auto e = check_llama_adapter(spec, config)) return e;
  if (auto e = check_tensor_parallel(spec, tp)) return e;
  if (auto e = check_context_parallel(spec, config, tp, cp)) return e;
  // The framework's own profile: what it does not model.
  if (const auto refusals = framework_of(config).refusals) {
    if (auto e = refusals(spec, config)) return e;
  }
  if (auto why = data_parallel_refusal(framework_of(config), config.sharding))
    return error{"request.invalid_value", "parallel.method", "[parallel.method] " + *why};
  if (auto e = check_int8_base(config)) return e;
  if (auto e = check_software(config)) return e;
  if (auto e = check_peft_embedding_modules(spec, config)) return e;
  if (auto e = check_transformers_only(spec, config)) return e;
  if (auto e = check_encoder_decoder(spec, config)) return e;
  if (auto e = check_latent_attention(spec, config)) return e;
  if (auto e = check_ia3(config)) return e;
  if (auto e = check_pipeline(spec, config)) return e;
  return check_offload(config);
}

}  // namespace gpumem
