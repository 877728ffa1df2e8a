#include "gpumem/training/training_step.hpp"

#include <algorithm>
#include <cmath>

#include "gpumem/model/litgpt_model.hpp"
#include "gpumem/model/param_count.hpp"
#include "gpumem/model/weight_format.hpp"
#include "gpumem/runtime/nccl_buffers.hpp"
#include "training/block_activations.hpp"
#include "training/step_checks.hpp"
#include "training/step_replay.hpp"

namespace gpumem {

namespace {
constexpr std::pair<const char*, offload_target> offload_targets[] = {
    {"none", offload_target::none}, {"cpu", offload_target::cpu}, {"nvme", offload_target::nvme}};
}  // namespace

std::optional<offload_target> offload_target_named(const std::string& name) {
  for (const auto& [n, t] : offload_targets) {
    if (name == n) return t;
  }
  return std::nullopt;
}

const char* offload_target_name(offload_target target) {
  for (const auto& [n, t] : offload_targets) {
    if (target == t) return n;
  }
  return "none";
}

namespace {
constexpr std::pair<const char*, finetune_kind> finetune_kinds[] = {
    {"full", finetune_kind::full},
    {"lora", finetune_kind::lora},
    {"dora", finetune_kind::lora},
    {"ia3", finetune_kind::ia3},
    {"prompt_tuning", finetune_kind::prompt_tuning},
    {"llama_adapter_v1", finetune_kind::llama_adapter_v1},
    {"llama_adapter_v2", finetune_kind::llama_adapter_v2}};
}  // namespace

std::optional<finetune_kind> finetune_kind_named(const std::string& name) {
  for (const auto& [n, kind] : finetune_kinds) {
    if (name == n) return kind;
  }
  return std::nullopt;
}

const char* finetune_name(const training_config& config) {
  if (config.dora) return "dora";
  for (const auto& [n, kind] : finetune_kinds) {
    if (config.finetune == kind) return n;
  }
  return "full";
}

std::uint64_t decoder_len(const training_config& config) {
  return config.target_len > 0 ? config.target_len : config.seq_len;
}

double lora_dropout_of(const training_config& config) {
  return config.lora_dropout.value_or(framework_of(config).lora_dropout);
}

std::vector<std::string> peft_default_targets(finetune_kind kind) {
  if (kind == finetune_kind::lora) return {"q_proj", "v_proj"};
  if (kind == finetune_kind::ia3) return {"k_proj", "v_proj", "down_proj"};
  return {};
}

std::optional<compute_precision> compute_precision_named(const std::string& name) {
  static const std::pair<const char*, compute_precision> precisions[] = {
      {"fp32", compute_precision::fp32},
      {"amp_fp16", compute_precision::amp_fp16},
      {"amp_bf16", compute_precision::amp_bf16},
      {"pure_fp16", compute_precision::pure_fp16},
      {"pure_bf16", compute_precision::pure_bf16}};
  for (const auto& [precision, value] : precisions) {
    if (name == precision) return value;
  }
  return std::nullopt;
}

bool is_amp(compute_precision c) {
  return c == compute_precision::amp_fp16 || c == compute_precision::amp_bf16;
}

std::uint64_t compute_bytes(compute_precision c) { return c == compute_precision::fp32 ? 4 : 2; }

std::optional<context_parallel_kind> context_parallel_kind_named(const std::string& name) {
  for (const auto kind : {context_parallel_kind::ring, context_parallel_kind::ulysses}) {
    if (name == context_parallel_kind_name(kind)) return kind;
  }
  return std::nullopt;
}

const char* context_parallel_kind_name(context_parallel_kind kind) {
  return kind == context_parallel_kind::ulysses ? "ulysses" : "ring";
}

bool shards_parameters(data_parallel dp) { return data_parallel_of(dp).shards_params; }

std::optional<data_parallel> data_parallel_named(const std::string& name) {
  for (const auto dp : {data_parallel::none, data_parallel::ddp, data_parallel::zero1,
                        data_parallel::zero2, data_parallel::zero3, data_parallel::gemini,
                        data_parallel::fsdp_full_shard, data_parallel::fsdp_shard_grad_op}) {
    if (name == data_parallel_of(dp).name) return dp;
  }
  return std::nullopt;
}

// DeepSpeed ZeRO (zero1/2/3) and Colossal-AI (LowLevelZero as zero1/2, Gemini): engines that
// convert the module to 16 bits under mixed precision and step with in-place Adam kernels.
bool zero_engine(data_parallel dp) { return data_parallel_of(dp).engine; }

std::uint64_t full_model_weight_bytes(const training_config& config) {
  if (config.full_weight_bytes) return config.full_weight_bytes;
  if (config.compute == compute_precision::fp32) return 4;
  return !is_amp(config.compute) || zero_engine(config.sharding) ? 2 : 4;
}

std::uint64_t quantized_weight_bytes(const tensor_spec& tensor, std::uint64_t tp,
                                     base_quantization quantization) {
  if (quantization == base_quantization::none) return 0;
  weight_storage storage;
  storage.format = quantization == base_quantization::int8  ? weight_format::int8
                   : quantization == base_quantization::nf4 ? weight_format::nf4
                                                            : weight_format::nf4_double_quant;
  const std::uint64_t in = tensor_parallel_in_features(tensor, tp);
  return quantized_matrix_bytes(tensor_parallel_numel(tensor, tp) / in, in, storage);
}

std::uint64_t unsloth_host_checkpoint_bytes(const model_spec& spec, const training_config& config) {
  // Inputs of at most 2^20 elements stay on the GPU (MINIMUM_SIZE); unsloth runs 16-bit.
  const std::uint64_t elements = config.micro_batch * config.seq_len * spec.hidden_size;
  if (!framework_of(config).host_checkpointing || !config.grad_ckpt || elements <= (1ULL << 20))
    return 0;
  return spec.layers.size() * elements * compute_bytes(config.compute);
}

std::uint64_t device_used_bytes(const training_estimate& estimate,
                                std::uint64_t cuda_context_bytes) {
  return estimate.peak_reserved + estimate.unmanaged_bytes + estimate.nccl_bytes +
         cuda_context_bytes + cuda_libraries_bytes();
}

batch_growth batch_growth_of(const training_estimate& at_one_sequence, std::uint64_t footprint) {
  const std::uint64_t peak = at_one_sequence.peak.allocated;
  const std::uint64_t with = at_one_sequence.peak_with_activations;
  const std::uint64_t below_peak = with > 0 && with < peak ? peak - with : 0;
  const std::uint64_t per_sequence = at_one_sequence.activations_high;
  return {footprint - below_peak, per_sequence > 0 ? per_sequence : footprint};
}

std::uint64_t peak_in_metric(const std::string& metric, std::uint64_t allocated,
                             std::uint64_t reserved, std::uint64_t device_used) {
  return metric == "allocated" ? allocated : metric == "reserved" ? reserved : device_used;
}

std::vector<component> replay_components(const timeline_peak& peak, std::uint64_t peak_reserved,
                                         std::uint64_t paged_bytes, const std::string& metric,
                                         std::uint64_t cuda_context_bytes) {
  std::vector<component> out;
  for (std::size_t i = 0; i < memory_category_count; ++i) {
    const std::uint64_t bytes = peak.by_category[i];
    if (bytes > 0) out.push_back({category_name(static_cast<memory_category>(i)), bytes});
  }
  if (metric == "allocated") return out;
  out.push_back({"allocator_cache", peak_reserved - peak.allocated});
  if (metric == "reserved") return out;
  if (paged_bytes > 0) out.push_back({"paged_optimizer_states", paged_bytes});
  out.push_back({"cuda_context", cuda_context_bytes});
  out.push_back({"cuda_libraries", cuda_libraries_bytes()});
  return out;
}

std::vector<component> peak_components(const training_estimate& estimate, const std::string& metric,
                                       std::uint64_t cuda_context_bytes) {
  auto out = replay_components(estimate.peak, estimate.peak_reserved, estimate.unmanaged_bytes,
                               metric, cuda_context_bytes);
  if (metric == "device_used" && estimate.nccl_bytes > 0)
    out.push_back({"nccl_buffers", estimate.nccl_bytes});
  return out;
}

namespace {
result<training_estimate> estimate_step(const model_spec& spec, const training_config& config,
                                        const gpu_spec& gpu);
}  // namespace

namespace {

std::optional<error> prompt_tuning_refusal(const training_config& config) {
  if (config.finetune != finetune_kind::prompt_tuning) return std::nullopt;
  if (!framework_of(config).peft) {
    return error{"request.invalid_value", "workload.finetune",
                 "[workload.finetune] prompt_tuning is PEFT's: framework transformers"};
  }
  if (config.virtual_tokens == 0) {
    return error{"request.invalid_value", "workload.prompt_tuning.num_virtual_tokens",
                 "[workload.prompt_tuning.num_virtual_tokens] prompt tuning needs its number of "
                 "virtual tokens, 1 or more"};
  }
  return std::nullopt;
}

// The run the blocks see. PEFT's prompt tuning (peft_model.py PeftModelForCausalLM.forward)
// concatenates the virtual tokens' embeddings before every sequence's and pads the labels with
// -100: every block, the logits and the loss run over seq_len + num_virtual_tokens positions.
training_config prompt_tuning_run(const training_config& config) {
  training_config run = config;
  if (config.finetune == finetune_kind::prompt_tuning) run.seq_len += config.virtual_tokens;
  return run;
}

// litgpt unties a tied LM head (its GPT keeps lm_head and wte apart).
bool unties_head(const model_spec& spec, const training_config& config) {
  return framework_of(config).unties_lm_head && spec.tied_embeddings;
}

}  // namespace

result<training_estimate> estimate_training_step(const model_spec& spec,
                                                 const training_config& config,
                                                 const gpu_spec& gpu) {
  if (auto e = prompt_tuning_refusal(config)) return *e;
  return estimate_step(spec, prompt_tuning_run(config), gpu);
}

// The same checks, in the same order, as estimate_training_step and estimate_step (a test holds
// the two together).
std::optional<error> training_refusal(const model_spec& spec, const training_config& config) {
  if (auto e = prompt_tuning_refusal(config)) return e;
  const training_config run = prompt_tuning_run(config);
  std::vector<std::string> unmatched_targets;
  if (auto e = check_training_request(spec, run, unmatched_targets)) return e;
  if (unties_head(spec, run)) return training_refusal(litgpt_model(spec), run);
  return check_training_combination(spec, run);
}

namespace {
// The communicators of a data-parallel group and of a tensor-parallel one, each with its NCCL
// buffers (pipeline stages' send/recv connections are made lazily and left out).
void add_nccl_buffers(const training_config& config, const gpu_spec& gpu, training_estimate& out) {
  for (const std::uint64_t ranks : {config.dp_degree, config.tp_degree}) {
    const nccl_estimate n = nccl_communicator_bytes(gpu, ranks, config.software.nccl_minor());
    out.nccl_bytes += n.bytes;
    if (n.bytes > 0) out.notes.push_back(n.note);
  }
}

result<training_estimate> estimate_step(const model_spec& spec, const training_config& config,
                                        const gpu_spec& gpu) {
  std::vector<std::string> unmatched_targets;
  if (auto e = check_training_request(spec, config, unmatched_targets)) return *e;
  if (unties_head(spec, config)) return estimate_training_step(litgpt_model(spec), config, gpu);
  if (auto e = check_training_combination(spec, config)) return *e;
  training_estimate replayed = step_replay(spec, config, gpu, unmatched_targets).run();
  add_nccl_buffers(config, gpu, replayed);
  return replayed;
}
}  // namespace

// Two steps (the second with the optimizer's states), each of one or two micro-batches.
training_estimate step_replay::run() {
  load();
  for (int pass = 0; pass < steps * micro_steps; ++pass) {
    start_pass(pass);
    forward();
    loss();
    backward();
    if (!last_micro) continue;
    if (!config.optimizer_step) break;
    optimizer_step();
  }
  out.peak = tl.peak();
  out.peak_reserved = tl.peak_reserved();
  out.activations_high = tl.activations_high();
  out.peak_with_activations = tl.peak_with_activations();
  if (config.timeline_samples > 0) out.timeline = tl.series(config.timeline_samples);
  return out;
}

}  // namespace gpumem
