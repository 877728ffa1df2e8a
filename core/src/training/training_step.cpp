#include "gpumem/training/training_step.hpp"

#include <algorithm>
#include <cmath>

#include "gpumem/model/param_count.hpp"
#include "gpumem/model/weight_format.hpp"
#include "training/adapter_targets.hpp"
#include "training/block_activations.hpp"

namespace gpumem {

namespace {
// torchtune's CEWithChunkedOutputLoss (num_output_chunks = 8; recipes call
// model.set_num_output_chunks with it): the output projection and cross-entropy in 8 chunks.
constexpr std::uint64_t torchtune_output_chunks = 8;
// litgpt's LM head chunk and chunked_cross_entropy's chunk (finetune/*.py lm_head_chunk_size=128,
// utils.py chunked_cross_entropy chunk_size=128), in tokens of each sequence.
constexpr std::uint64_t litgpt_chunk_tokens = 128;

using cat = memory_category;

// unsloth's fused loss splits the tokens into chunks whose logits, at 16 bytes apiece, fit
// `target_bytes` (min(half the free device memory, 4 GiB)) less the hidden states' gradient
// `fixed_bytes`, in multiples of 4 (unsloth_zoo/fused_losses/cross_entropy_loss.py
// get_chunk_size, _CE_BYTES_PER_LOGIT, _CE_TARGET_GB_CAP).
std::uint64_t unsloth_loss_chunks(std::uint64_t tokens, std::uint64_t vocab, double target_bytes,
                                  double fixed_bytes) {
  if (fixed_bytes > 0 && fixed_bytes < target_bytes) target_bytes -= fixed_bytes;
  const double exact =
      static_cast<double>(tokens) * static_cast<double>(vocab) * 16.0 / target_bytes;
  if (exact <= 1.0 + 1e-9) return 1;
  const auto chunks = static_cast<std::uint64_t>(std::ceil(exact / 4 - 1e-9)) * 4;
  return std::min(chunks, tokens);
}

// What the output layer projects and the loss reads: every position onto the (rank's share of
// the) vocabulary for language-model heads; for BERT's and ALBERT's classification heads the pooled
// first token (sequence classification) or every token (token classification, question answering:
// start and end) onto the classifier's outputs (transformers BertFor* forward).
struct output_shape {
  std::uint64_t rows = 0;
  std::uint64_t cols = 0;
};
output_shape output_of(const model_spec& spec, const training_config& config, std::uint64_t v,
                       std::uint64_t tokens) {
  if (spec.causal || spec.architecture.find("MaskedLM") != std::string::npos ||
      spec.architecture.find("PreTraining") != std::string::npos) {
    return {tokens, v};
  }
  std::uint64_t labels = 2;
  for (const auto& t : spec.tensors) {
    if (t.role == tensor_role::task_head && !t.is_bias && t.shape.size() == 2 &&
        t.name.find("pooler") == std::string::npos)
      labels = t.shape[0];
  }
  // The bare encoders (BertModel, AlbertModel) are read by their pooled output too.
  const std::string& head = spec.architecture;
  const bool bare = head.size() >= 5 && head.compare(head.size() - 5, 5, "Model") == 0;
  const bool pooled = head.find("SequenceClassification") != std::string::npos || bare;
  return {pooled ? config.micro_batch : tokens, labels};
}

}  // namespace

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
  return config.lora_dropout.value_or(config.framework == framework_profile::litgpt ? 0.05 : 0.0);
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

bool shards_parameters(data_parallel dp) {
  return dp == data_parallel::zero3 || dp == data_parallel::gemini ||
         dp == data_parallel::fsdp_full_shard || dp == data_parallel::fsdp_shard_grad_op;
}

std::optional<data_parallel> data_parallel_named(const std::string& name) {
  static const std::pair<const char*, data_parallel> methods[] = {
      {"single", data_parallel::none},
      {"ddp", data_parallel::ddp},
      {"zero1", data_parallel::zero1},
      {"zero2", data_parallel::zero2},
      {"zero3", data_parallel::zero3},
      {"gemini", data_parallel::gemini},
      {"fsdp_full_shard", data_parallel::fsdp_full_shard},
      {"fsdp_shard_grad_op", data_parallel::fsdp_shard_grad_op}};
  for (const auto& [method, value] : methods) {
    if (name == method) return value;
  }
  return std::nullopt;
}

namespace {
// DeepSpeed ZeRO (zero1/2/3) and Colossal-AI (LowLevelZero as zero1/2, Gemini): engines that
// convert the module to 16 bits under mixed precision and step with in-place Adam kernels.
bool zero_engine(data_parallel dp) {
  return dp == data_parallel::zero1 || dp == data_parallel::zero2 || dp == data_parallel::zero3 ||
         dp == data_parallel::gemini;
}
}  // namespace

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

std::uint64_t tensor_parallel_numel(const tensor_spec& tensor, std::uint64_t tp) {
  if (tp <= 1) return tensor.numel();
  // Routed experts split every expert's width (Megatron-LM's expert tensor parallelism); the
  // router stays whole on every rank.
  if (tensor.role == tensor_role::routed_experts) return tensor.numel() / tp;
  if (tensor.role == tensor_role::router) return tensor.numel();
  const bool block_linear = tensor.layer >= 0 && (tensor.module == module_kind::linear ||
                                                  tensor.module == module_kind::conv1d);
  if (block_linear) {
    return tensor.is_bias && !column_parallel(tensor) ? tensor.numel() : tensor.numel() / tp;
  }
  if (tensor.role == tensor_role::token_embedding || tensor.role == tensor_role::lm_head) {
    return ceil_div(tensor.shape[0], tp) * (tensor.numel() / tensor.shape[0]);
  }
  return tensor.numel();
}

std::uint64_t tensor_parallel_in_features(const tensor_spec& tensor, std::uint64_t tp) {
  const bool block_linear = tensor.layer >= 0 && (tensor.module == module_kind::linear ||
                                                  tensor.module == module_kind::conv1d);
  return block_linear ? local_in(tensor, std::max<std::uint64_t>(tp, 1)) : tensor_in(tensor);
}

stage_layers pipeline_stage_layers(std::size_t layers, std::uint64_t stages, std::uint64_t stage) {
  const std::size_t n = static_cast<std::size_t>(stages);
  const std::size_t s = static_cast<std::size_t>(stage);
  const std::size_t base = layers / n;
  const std::size_t extra = layers % n;
  stage_layers out;
  out.first = s * base + std::min(s, extra);
  out.last = out.first + base + (s < extra ? 1 : 0);
  return out;
}

std::uint64_t cuda_libraries_bytes() { return 102760448ULL - 35651584ULL; }

std::uint64_t unsloth_host_checkpoint_bytes(const model_spec& spec, const training_config& config) {
  // Inputs of at most 2^20 elements stay on the GPU (MINIMUM_SIZE); unsloth runs 16-bit.
  const std::uint64_t elements = config.micro_batch * config.seq_len * spec.hidden_size;
  if (config.framework != framework_profile::unsloth || !config.grad_ckpt ||
      elements <= (1ULL << 20))
    return 0;
  return spec.layers.size() * elements * compute_bytes(config.compute);
}

std::uint64_t device_used_bytes(const training_estimate& estimate,
                                std::uint64_t cuda_context_bytes) {
  return estimate.peak_reserved + estimate.unmanaged_bytes + cuda_context_bytes +
         cuda_libraries_bytes();
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
  return replay_components(estimate.peak, estimate.peak_reserved, estimate.unmanaged_bytes, metric,
                           cuda_context_bytes);
}

std::uint64_t cublas_workspace_bytes(const std::string& architecture) {
  if (architecture == "hopper" || architecture == "blackwell") return 32ULL << 20;
  return 4096ULL * 1024 * 2 + 16ULL * 1024 * 8;
}

attention_kernel kernel_run(const model_spec& spec, attention_kernel asked, bool transformers) {
  if (spec.encoder_decoder) return attention_kernel::eager;
  if (spec.attention_sinks && transformers && asked == attention_kernel::sdpa)
    return attention_kernel::eager;
  return asked;
}

std::string kernel_run_note(const model_spec& spec) {
  if (spec.encoder_decoder) {
    return "T5's attention computes its scores by hand (modeling_t5.py), whatever kernel is "
           "asked for: eager attention";
  }
  return "transformers has no SDPA path for gpt-oss's attention sinks and falls back to eager "
         "attention; workload.attention flash reads the hub's flash-attention 3 kernel "
         "(kernels-community/vllm-flash-attn3), which keeps no scores";
}

const char* attention_kernel_name(attention_kernel kernel) {
  return kernel == attention_kernel::eager   ? "eager"
         : kernel == attention_kernel::flash ? "flash"
                                             : "sdpa";
}

attention_kernel attention_kernel_named(const std::string& name) {
  return name == "eager"   ? attention_kernel::eager
         : name == "flash" ? attention_kernel::flash
                           : attention_kernel::sdpa;
}

bool sdpa_window_mask(const layer_spec& layer, std::uint64_t kv_length) {
  return layer.sliding_window_tokens > 0 && kv_length >= layer.sliding_window_tokens;
}

bool sdpa_math_kernel(const model_spec& spec, std::uint64_t compute_bytes, bool transformers) {
  if (spec.num_kv_heads >= spec.num_heads) return false;
  if (compute_bytes == 4) return true;
  return transformers && spec.model_type == "falcon" && spec.num_kv_heads == 1;
}

std::optional<error> check_tensor_parallel(const model_spec& spec, std::uint64_t tp) {
  // Expert tensor parallelism splits every routed expert's width and the shared expert's too.
  std::vector<std::pair<const char*, std::uint64_t>> widths = {
      {"the attention heads", spec.num_heads},
      {"the key/value heads", spec.num_kv_heads},
      {"the MLP width", spec.intermediate_size}};
  if (spec.moe.num_experts > 0)
    widths.push_back({"the expert width", spec.moe.expert_intermediate});
  if (spec.moe.shared_intermediate > 0)
    widths.push_back({"the shared experts' width", spec.moe.shared_intermediate});
  bool divides = tp > 0;
  for (const auto& [name, width] : widths) divides = divides && width % tp == 0;
  if (divides) return std::nullopt;
  std::string parts;
  for (std::size_t i = 0; i < widths.size(); ++i) {
    parts += i == 0 ? "" : i + 1 == widths.size() ? " and " : ", ";
    parts += std::string(widths[i].first) + " (" + std::to_string(widths[i].second) + ")";
  }
  return error{"parallel.invalid_degree", "parallel.tp",
               "[parallel.tp] tensor parallelism over " + std::to_string(tp) +
                   " ranks needs it to divide " + parts};
}

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
  if (ring &&
      kernel_run(spec, config.attention, config.framework == framework_profile::transformers) ==
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

// The unsloth profile models unsloth's fast path: LoRA (on a 16-bit or 4-bit base) with
// adapters on every block linear, its default (unsloth/models/llama.py get_peft_model patches
// the q/k/v, o and MLP forwards with LoRA_QKV, LoRA_W and LoRA_MLP only then, and only for
// bias-free Llama-style blocks), in 16-bit autocast, on one GPU or under DDP.
// A bias-free Llama-style decoder: two RMSNorms a block, before attention and before the MLP
// (per-head q/k norms allowed), a gated MLP, no mixture of experts, latent attention or soft cap:
// what unsloth's fast kernels and torchtitan's Llama run.
bool llama_style_decoder(const model_spec& spec) {
  bool llama_style = spec.norm == norm_kind::rms_norm && spec.gated_mlp && !spec.parallel_block &&
                     spec.causal && !spec.mla;
  for (const auto& layer : spec.layers) llama_style = llama_style && !layer.moe;
  // Gemma 2's extra post-norms and soft-capped attention run other kernels.
  std::vector<int> norms(spec.layers.size(), 0);
  for (const auto& t : spec.tensors) {
    llama_style = llama_style && !(t.layer >= 0 && t.is_bias);
    if (t.layer >= 0 && t.module == module_kind::norm && t.shape.size() == 1 &&
        t.shape[0] == spec.hidden_size)
      ++norms[static_cast<std::size_t>(t.layer)];
  }
  for (int n : norms) llama_style = llama_style && n == 2;
  llama_style = llama_style && spec.pre_norms && (!spec.qk_norm || spec.qk_norm_per_head);
  return llama_style && spec.attention_softcap <= 0;
}

std::optional<error> check_unsloth(const model_spec& spec, const training_config& config) {
  if (config.framework != framework_profile::unsloth) return std::nullopt;
  if (config.finetune != finetune_kind::lora || config.dora) {
    return error{"request.invalid_value", "workload.finetune",
                 "[workload.finetune] the unsloth profile models LoRA and QLoRA (its fast LoRA "
                 "kernels); use finetune lora"};
  }
  if (!llama_style_decoder(spec)) {
    return error{"request.invalid_value", "model",
                 "[model] the unsloth profile models bias-free Llama-style decoders (two RMSNorms "
                 "a block, gated MLP, no mixture of experts or soft-capped attention), where "
                 "unsloth runs its fast LoRA kernels"};
  }
  for (const auto& t : spec.tensors) {
    if (t.layer < 0 || t.module != module_kind::linear || lora_target(config, t)) continue;
    return error{"request.invalid_value", "workload.lora.targets",
                 "[workload.lora.targets] unsloth's fast LoRA kernels need adapters on every "
                 "block linear (q/k/v, o, gate/up/down: its default, or all-linear); " +
                     module_of(t.name) + " has none"};
  }
  if (config.compute == compute_precision::fp32) {
    return error{"request.invalid_value", "workload.compute",
                 "[workload.compute] unsloth's kernels run in 16 bits: use amp_bf16 or amp_fp16"};
  }
  if (lora_dropout_of(config) > 0) {
    return error{"request.invalid_value", "workload.lora.dropout",
                 "[workload.lora.dropout] unsloth's fast LoRA kernels run without dropout "
                 "(patch_peft_model skips layers with lora_dropout > 0): 0"};
  }
  if (config.attention == attention_kernel::eager || config.selective_recompute) {
    return error{"request.invalid_value",
                 config.selective_recompute ? "workload.grad_ckpt" : "workload.attention",
                 "[workload] unsloth runs fused attention (flash-attention, xformers or SDPA) "
                 "and checkpoints whole blocks: attention sdpa, grad_ckpt true or false"};
  }
  if ((config.sharding != data_parallel::none && config.sharding != data_parallel::ddp) ||
      config.tp_degree > 1 || config.pp_degree > 1 || config.cp_degree > 1 ||
      config.offload.any()) {
    return error{"request.invalid_value", "parallel.method",
                 "[parallel.method] the unsloth profile runs on one GPU or under DDP, without "
                 "tensor, pipeline or context parallelism or offload (its checkpoints go to host "
                 "memory with grad_ckpt true)"};
  }
  return std::nullopt;
}
// The torchtitan profile models torchtitan's own Llama (torchtitan/models/llama3/model.py, which
// Qwen3 follows with per-head q/k norms) trained whole, one GPU or replicated (DDP) or sharded by
// FSDP2 (fully_shard), attending with SDPA or FlexAttention over the whole sequence.
std::optional<error> check_torchtitan(const model_spec& spec, const training_config& config) {
  if (config.framework != framework_profile::torchtitan) return std::nullopt;
  if (config.finetune != finetune_kind::full) {
    return error{"request.invalid_value", "workload.finetune",
                 "[workload.finetune] torchtitan trains whole models: finetune full"};
  }
  const bool windowed = std::any_of(spec.layers.begin(), spec.layers.end(), [](const auto& l) {
    return l.attention == attention_pattern::sliding;
  });
  if (!llama_style_decoder(spec) || windowed) {
    return error{"request.invalid_value", "model",
                 "[model] the torchtitan profile models its Llama: bias-free Llama-style decoders "
                 "(two RMSNorms a block, gated MLP, no mixture of experts, sliding window or "
                 "soft-capped attention)"};
  }
  if (config.attention == attention_kernel::eager) {
    return error{"request.invalid_value", "workload.attention",
                 "[workload.attention] torchtitan attends with SDPA or FlexAttention: attention "
                 "sdpa or flash"};
  }
  if (config.offload.activations != offload_target::none) {
    return error{"request.invalid_value", "parallel.offload.activations",
                 "[parallel.offload.activations] torchtitan does not offload activations: none"};
  }
  const auto dp = config.sharding;
  if (dp != data_parallel::none && dp != data_parallel::ddp &&
      dp != data_parallel::fsdp_full_shard && dp != data_parallel::fsdp_shard_grad_op) {
    return error{"request.invalid_value", "parallel.method",
                 "[parallel.method] torchtitan shards with FSDP2 (fsdp_full_shard, "
                 "fsdp_shard_grad_op) or replicates (ddp); DeepSpeed ZeRO and Gemini are not "
                 "its"};
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
  if (config.framework != framework_profile::transformers) {
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

// Library releases the request cannot run with: torch 1.x runs neither litgpt, torchtune, unsloth
// nor torchtitan (each needs torch 2) nor SDPA (torch 2.0's F.scaled_dot_product_attention);
// PEFT is the adapter library of transformers runs; PEFT < 0.12 leaves LoRA's adapters fp16 over
// an fp16 base, whose gradients AMP's GradScaler refuses ("Attempting to unscale FP16
// gradients", PEFT's troubleshooting guide) unless a ZeRO engine keeps fp32 masters.
std::optional<error> check_software(const training_config& config) {
  const software_stack& software = config.software;
  if (!software.has_sdpa() && config.framework != framework_profile::transformers) {
    return error{"request.invalid_value", "workload.software.torch",
                 "[workload.software.torch] litgpt, torchtune, unsloth and torchtitan need torch "
                 "2; torch 1.x is modelled under framework transformers"};
  }
  if (!software.has_sdpa() && config.attention == attention_kernel::sdpa) {
    return error{"request.invalid_value", "workload.attention",
                 "[workload.attention] sdpa is torch 2's scaled_dot_product_attention; under torch "
                 "1.x transformers runs eager attention (or flash-attn's kernels: flash)"};
  }
  if (software.peft && config.framework != framework_profile::transformers) {
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
  if (config.framework != framework_profile::transformers) {
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
  if (config.framework == framework_profile::transformers) return std::nullopt;
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

namespace {

// The LM head a tied model shares with its embedding, as a tensor of its own.
tensor_spec tied_lm_head(const model_spec& spec) {
  tensor_spec head;
  head.name = "lm_head.weight";
  head.role = tensor_role::lm_head;
  head.module = module_kind::linear;
  head.shape = {spec.vocab_size, spec.embedding_dim};
  return head;
}

}  // namespace

model_spec litgpt_model(const model_spec& spec) {
  model_spec out = spec;
  if (!spec.tied_embeddings) return out;
  out.tied_embeddings = false;
  out.tensors.push_back(tied_lm_head(spec));
  return out;
}

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
  std::vector<std::string> modules;
  for (const auto& t : spec.tensors) {
    if (t.is_bias || (t.module != module_kind::linear && t.module != module_kind::conv1d) ||
        t.role == tensor_role::router)
      continue;
    const std::string module = module_of(t.name);
    if (std::find(modules.begin(), modules.end(), module) == modules.end())
      modules.push_back(module);
  }
  bool any = false;
  for (const auto& target : config.lora_targets) {
    training_config one = config;
    one.lora_targets = {target};
    bool found = target == "all-linear" || tied_head_target(spec, one);
    for (const auto& t : spec.tensors)
      found = found || adapter_target(one, t) || embedding_lora_target(spec, one, t);
    any = any || found;
    if (!found) unmatched.push_back(target);
  }
  if (any) return std::nullopt;
  // PEFT raises "Target modules ... not found in the base model" when none matches.
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
  const bool transformers = config.framework == framework_profile::transformers;
  const bool scores = kernel_run(spec, config.attention, transformers) == attention_kernel::eager ||
                      config.compute == compute_precision::fp32;
  if (auto e = check_training_size(spec, micro_batch, positions, scores)) return e;
  if (spec.encoder_decoder && config.target_len > 0)
    return check_training_size(spec, micro_batch, config.target_len, scores, "target_len");
  return std::nullopt;
}

namespace {
result<training_estimate> estimate_step(const model_spec& spec, const training_config& config,
                                        const gpu_spec& gpu);
}  // namespace

result<training_estimate> estimate_training_step(const model_spec& spec,
                                                 const training_config& config,
                                                 const gpu_spec& gpu) {
  if (config.finetune != finetune_kind::prompt_tuning) return estimate_step(spec, config, gpu);
  // PEFT's prompt tuning (peft_model.py PeftModelForCausalLM.forward) concatenates the virtual
  // tokens' embeddings before every sequence's and pads the labels with -100: every block, the
  // logits and the loss run over seq_len + num_virtual_tokens positions.
  if (config.framework != framework_profile::transformers) {
    return error{"request.invalid_value", "workload.finetune",
                 "[workload.finetune] prompt_tuning is PEFT's: framework transformers"};
  }
  if (config.virtual_tokens == 0) {
    return error{"request.invalid_value", "workload.prompt_tuning.num_virtual_tokens",
                 "[workload.prompt_tuning.num_virtual_tokens] prompt tuning needs its number of "
                 "virtual tokens, 1 or more"};
  }
  training_config run = config;
  run.seq_len += config.virtual_tokens;
  return estimate_step(spec, run, gpu);
}

namespace {
result<training_estimate> estimate_step(const model_spec& spec, const training_config& config,
                                        const gpu_spec& gpu) {
  // (Prompt tuning's virtual tokens are already in seq_len: estimate_training_step.)
  if (auto e = check_training_lengths(spec, config, config.micro_batch, config.seq_len)) return *e;
  std::vector<std::string> unmatched_targets;
  if (auto e = check_adapter_targets(spec, config, unmatched_targets)) return *e;
  if (config.framework == framework_profile::litgpt && spec.tied_embeddings)
    return estimate_training_step(litgpt_model(spec), config, gpu);
  if ((config.finetune == finetune_kind::llama_adapter_v1 ||
       config.finetune == finetune_kind::llama_adapter_v2) &&
      spec.layers.size() <= config.adapter_start_layer) {
    return error{"request.invalid_value", "workload.finetune",
                 "[workload.finetune] LLaMA-Adapter starts at block " +
                     std::to_string(config.adapter_start_layer) + "; the model has " +
                     std::to_string(spec.layers.size()) + " blocks"};
  }
  const std::uint64_t tp = std::max<std::uint64_t>(config.tp_degree, 1);
  if (auto e = check_tensor_parallel(spec, tp)) return *e;
  const std::uint64_t cp = std::max<std::uint64_t>(config.cp_degree, 1);
  if (auto e = check_context_parallel(spec, config, tp, cp)) return *e;
  if (auto e = check_unsloth(spec, config)) return *e;
  if (auto e = check_torchtitan(spec, config)) return *e;
  if (auto e = check_int8_base(config)) return *e;
  if (auto e = check_software(config)) return *e;
  if (auto e = check_peft_embedding_modules(spec, config)) return *e;
  if (auto e = check_transformers_only(spec, config)) return *e;
  if (auto e = check_encoder_decoder(spec, config)) return *e;
  if (auto e = check_latent_attention(spec, config)) return *e;
  if (config.finetune == finetune_kind::ia3 &&
      config.framework != framework_profile::transformers) {
    return error{"request.invalid_value", "workload.finetune",
                 "[workload.finetune] ia3 is PEFT's: framework transformers"};
  }
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
  if (pp > 1 && config.sharding != data_parallel::none && config.sharding != data_parallel::ddp &&
      config.sharding != data_parallel::zero1) {
    return error{"request.invalid_value", "parallel.dp_method",
                 "[parallel.dp_method] a pipeline replicates over DDP or ZeRO-1 only"};
  }
  const stage_layers stage = pipeline_stage_layers(spec.layers.size(), pp, config.pp_stage);
  const bool first_stage = config.pp_stage == 0;
  const bool last_stage = config.pp_stage + 1 == pp;
  // 1F1B: stage s has started the forward of p - s micro-batches when the first backward reaches
  // it (Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on GPU Clusters").
  const std::uint64_t micro_batches = config.pp_micro_batches ? config.pp_micro_batches : pp;
  const std::uint64_t in_flight = std::min(pp - config.pp_stage, micro_batches);
  // What a stage holds: its blocks; the first the embeddings, the last the final norm and LM
  // head (with tied embeddings its own copy of the token embedding as the head, Megatron-LM's
  // shared word embeddings).
  const auto on_stage = [&](const tensor_spec& t) {
    if (t.layer >= 0) {
      const auto l = static_cast<std::size_t>(t.layer);
      return l >= stage.first && l < stage.last;
    }
    const bool input_side =
        t.role == tensor_role::token_embedding || t.role == tensor_role::position_embedding ||
        t.role == tensor_role::vision || t.name.find("project_in") != std::string::npos;
    if (t.role == tensor_role::token_embedding && spec.tied_embeddings && last_stage) return true;
    return input_side ? first_stage : last_stage;
  };
  // Where a parameter's gradient appears in backward: in its block's backward, or, for blocks
  // that share parameters (ALBERT), in the last block that runs them, the first one stepped back.
  // (Indexed once: a per-tensor scan of every block made the replay quadratic in the blocks.)
  std::vector<int> last_runner(spec.layers.size());
  for (std::size_t l = 0; l < spec.layers.size(); ++l) last_runner[l] = static_cast<int>(l);
  for (std::size_t l = 0; l < spec.layers.size(); ++l) {
    const int runs = parameter_block(spec, static_cast<int>(l));
    if (runs >= 0 && static_cast<std::size_t>(runs) < spec.layers.size())
      last_runner[static_cast<std::size_t>(runs)] = static_cast<int>(l);
  }
  const auto gradient_block = [&](int layer) {
    return layer >= 0 && static_cast<std::size_t>(layer) < spec.layers.size()
               ? last_runner[static_cast<std::size_t>(layer)]
               : layer;
  };
  step_context ctx{spec, config};
  ctx.cp = cp;
  ctx.seq = config.seq_len / cp;
  ctx.tokens = config.micro_batch * ctx.seq;
  ctx.tp = tp;
  // Sequence parallelism splits the hidden-width tensors along the sequence (Korthikanti et al.
  // 2022, "Reducing Activation Recomputation in Large Transformer Models").
  ctx.h_tokens = config.sequence_parallel ? ceil_div(ctx.tokens, tp) : ctx.tokens;
  ctx.c = compute_bytes(config.compute);
  ctx.full = config.finetune == finetune_kind::full;
  // DeepSpeed's and Colossal-AI's mixed precision converts the module — LoRA adapters too — to
  // 16 bits and runs it without autocast (the fp32 copies of what trains live in the optimizer:
  // deepspeed/runtime/engine.py _configure_distributed_model, Colossal-AI LowLevelZeroModel and
  // GeminiDDP): its activations are all 16-bit.
  // A model stated as fp32 (`workload.weights`) is taken as not converted.
  const bool engine_16bit =
      is_amp(config.compute) && zero_engine(config.sharding) &&
      (ctx.full ? full_model_weight_bytes(config) == 2
                : config.base_weight_bytes == 0 || config.base_weight_bytes == 2);
  ctx.amp = is_amp(config.compute) && !engine_16bit;
  ctx.norms_train = ctx.full || config.finetune == finetune_kind::llama_adapter_v2;
  ctx.quantized = !ctx.full && config.quantization != base_quantization::none;
  ctx.int8_base = ctx.quantized && config.quantization == base_quantization::int8;
  // transformers and litgpt quantise to 4 bits with bitsandbytes; torchtune's QLoRA runs
  // torchao's NF4Tensor, whose LinearNF4 saves the weight alone (torchao/dtypes/nf4tensor.py),
  // and unsloth its own kernels.
  const bool bitsandbytes_4bit = ctx.quantized && !ctx.int8_base &&
                                 (config.framework == framework_profile::transformers ||
                                  config.framework == framework_profile::litgpt);
  ctx.base_keeps_input =
      ctx.int8_base || (bitsandbytes_4bit && config.software.bnb_4bit_keeps_input());
  ctx.fp16_quant_state = ctx.quantized && config.framework == framework_profile::litgpt &&
                         (config.compute == compute_precision::amp_bf16 ||
                          config.compute == compute_precision::pure_bf16);
  const bool pure = config.compute == compute_precision::pure_bf16 ||
                    config.compute == compute_precision::pure_fp16;
  const std::uint64_t full_bytes = full_model_weight_bytes(config);
  const std::uint64_t base_bytes =
      ctx.full ? full_bytes
               : (config.base_weight_bytes ? config.base_weight_bytes : (ctx.c == 4 ? 4 : 2));
  // PEFT upcasts adapters to fp32 under mixed precision (autocast_adapter_dtype=True); before
  // 0.12 they took the dtype of a 16-bit or fp32 base layer (a quantised one's adapters stay
  // fp32: nn.Linear's default dtype, and PEFT's kbit preparation casts to fp32 anyway).
  ctx.adapter_bytes = pure || engine_16bit ? 2 : 4;
  const bool adapters_in_base_dtype = config.software.peft_adapters_in_base_dtype() &&
                                      config.finetune == finetune_kind::lora && !ctx.quantized &&
                                      !engine_16bit && ctx.adapter_bytes != base_bytes;
  if (adapters_in_base_dtype) ctx.adapter_bytes = base_bytes;
  ctx.r = base_bytes;
  // transformers keeps the modules a model lists in _keep_in_fp32_modules (T5's `wo`) fp32 when
  // it is loaded in fp16 or quantised by bitsandbytes (modeling_utils.py from_pretrained); a
  // 16-bit engine converts the whole module again (DeepSpeed's module.half()).
  const bool fp16_load = (config.compute == compute_precision::amp_fp16 ||
                          config.compute == compute_precision::pure_fp16) &&
                         base_bytes == 2;
  ctx.fp32_kept = (fp16_load || ctx.quantized) && !engine_16bit &&
                  std::any_of(spec.tensors.begin(), spec.tensors.end(),
                              [](const tensor_spec& t) { return t.kept_fp32; });

  // Data parallelism: which states each rank keeps a 1/n share of.
  const auto dp = config.sharding;
  const std::uint64_t n = std::max<std::uint64_t>(config.dp_degree, 1);
  const bool params_sharded = shards_parameters(dp);
  // A vision tower that text-only batches never run gets no gradient on one GPU or under FSDP
  // (its units never run), so AdamW makes no states for it (torch.optim skips a None grad); DDP
  // zero-fills unused parameters' gradients (find_unused_parameters, which the unused tower
  // needs), and DeepSpeed ZeRO and Gemini flatten every parameter that requires grad into their
  // fp32 groups and states.
  const bool idle_tower_steps = dp == data_parallel::ddp || dp == data_parallel::zero1 ||
                                dp == data_parallel::zero2 || dp == data_parallel::zero3 ||
                                dp == data_parallel::gemini;
  // Whether the optimizer steps `t` (and so keeps its gradient and states).
  const auto stepped = [&](const tensor_spec& t) {
    return t.role != tensor_role::vision || idle_tower_steps;
  };
  const bool grads_sharded = params_sharded || dp == data_parallel::zero2;
  // PEFT's prepare_model_for_kbit_training, which the transformers QLoRA recipes run on an
  // unsharded 4-bit model (TRL SFTTrainer, the QLoRA paper's qlora.py; FSDP / ZeRO-3 QLoRA skip
  // it), casts every weight that is not 4-bit to fp32 (peft/utils/other.py); under bf16 TRL and
  // qlora.py cast the embeddings and LM head back to bf16 and keep the norms fp32
  // (trl peft_module_casting_to_bf16; the adapters stay as PEFT made them, fp32 under autocast
  // — qlora.py and older TRL also cast them to bf16, which is not modelled). Where the norms
  // multiply in their weight's dtype, they hand fp32 to the 4-bit linears, whose outputs come
  // back fp32, and the residual stream turns fp32 at the first block's MLP (modelled from the
  // first block on).
  const bool kbit_prepared = config.kbit_preparation && ctx.quantized &&
                             config.framework == framework_profile::transformers &&
                             !params_sharded && !pure;
  ctx.kbit_fp32_norms = kbit_prepared && !spec.norm_keeps_input_dtype;
  if (ctx.kbit_fp32_norms) ctx.r = 4;
  const std::uint64_t kbit_head_bytes =
      config.compute == compute_precision::amp_bf16 ? base_bytes : 4;
  const bool states_sharded = grads_sharded || dp == data_parallel::zero1;
  const offload_placement& off = config.offload;
  const bool states_on_host = off.optimizer != offload_target::none;
  const bool params_on_host = off.params != offload_target::none;
  const bool grads_to_host = states_on_host || off.gradients != offload_target::none;
  const bool acts_to_host = off.activations != offload_target::none;
  if (params_on_host && !params_sharded) {
    return error{"request.invalid_value", "parallel.offload.params",
                 "[parallel.offload.params] parameters are offloaded under ZeRO-3, FSDP or Gemini "
                 "(zero3, fsdp_full_shard, fsdp_shard_grad_op, gemini)"};
  }
  if (grads_to_host && (dp == data_parallel::none || dp == data_parallel::ddp)) {
    return error{"request.invalid_value", "parallel.offload.optimizer",
                 "[parallel.offload.optimizer] optimizer and gradient offload run under ZeRO, FSDP "
                 "or Gemini (a single GPU: zero2 or zero3 with one GPU)"};
  }
  const auto share = [n](std::uint64_t bytes, bool sharded) {
    return sharded ? (bytes + n - 1) / n : bytes;
  };
  // Mixed precision over a 16-bit model keeps fp32 master weights in the optimizer.
  const bool master = (ctx.full && is_amp(config.compute) && full_bytes == 2) || engine_16bit;
  // Gathered (unsharded) parameters arrive in the compute dtype (FSDP MixedPrecision
  // param_dtype, DeepSpeed's 16-bit parameters).
  const std::uint64_t gathered_bytes =
      ctx.full ? (is_amp(config.compute) ? ctx.c : full_bytes) : base_bytes;
  // FSDP's MixedPrecision gathers every parameter, the embeddings' included, in param_dtype, "the
  // dtype for forward and backward computation" (torch.distributed.fsdp.MixedPrecision docs): the
  // residual stream of an fp32 model runs in the compute dtype.
  if (dp == data_parallel::fsdp_full_shard || dp == data_parallel::fsdp_shard_grad_op)
    ctx.r = gathered_bytes;
  // Autocast copies fp32 weights to 16 bits; gathered (FSDP MixedPrecision) and 16-bit models
  // are already in the compute dtype.
  ctx.autocast_copies = ctx.amp && ctx.full && full_bytes == 4 && !params_sharded;

  training_estimate out;
  // What the stated library releases change, and which bitsandbytes a 4-bit base assumes.
  const software_stack& software = config.software;
  if (adapters_in_base_dtype) {
    out.notes.push_back("peft " + release_name(*software.peft) +
                        ": the adapters take the base weights' 16-bit dtype, as do their "
                        "gradients and optimizer states (PEFT 0.12 upcasts them to fp32)");
  }
  if (bitsandbytes_4bit) {
    const std::string keeps = ctx.base_keeps_input
                                  ? "the 4-bit linears keep their inputs in ctx.tensors"
                                  : "the 4-bit linears keep no input (0.45 and later)";
    out.notes.push_back(software.bitsandbytes
                            ? "bitsandbytes " + release_name(*software.bitsandbytes) + ": " +
                                  keeps + (ctx.base_keeps_input ? " (before 0.45)" : "")
                            : keeps +
                                  ", as bitsandbytes before 0.45 does (assumed; "
                                  "workload.software.bitsandbytes 0.45 or later keeps none)");
  }
  for (const auto& target : unmatched_targets)
    out.notes.push_back(std::string(config.finetune == finetune_kind::ia3 ? "IA3" : "LoRA") +
                        " target '" + target +
                        "' names no linear module of this model; PEFT skips it");
  memory_timeline tl;
  if (config.timeline_samples > 0) tl.record();
  // What the allocator's segments may take of the device (CUDA context and libraries aside).
  const std::uint64_t context =
      config.cuda_context_bytes.value_or(default_cuda_context_bytes(gpu.architecture));
  const std::uint64_t outside = context + cuda_libraries_bytes();
  if (gpu.memory_bytes > outside) tl.limit(gpu.memory_bytes - outside);
  tl.phase("load");
  // cuBLAS and cuBLASLt (1 MiB) workspaces of the forward thread.
  tl.allocate(cublas_workspace_bytes(gpu.architecture), cat::cuda_workspace);
  tl.allocate(1ULL << 20, cat::cuda_workspace);

  // Parameters as loaded (one allocation each), the trainable ones, and LoRA adapters.
  struct trainable {
    std::uint64_t numel;
    std::uint64_t bytes;
    int layer;
    std::uint64_t cols;  // last dimension; rows = numel / cols (1-D tensors: cols = numel)
    bool matrix;
  };
  std::vector<trainable> params;
  // Lightning's BitsandbytesPrecision (litgpt's --quantize) converts every nn.Linear, the LM
  // head's included (lightning/fabric/plugins/precision/bitsandbytes.py convert_module).
  const bool quantized_head = ctx.quantized && config.framework == framework_profile::litgpt;
  std::uint64_t head_dequantised = 0;  // its 16-bit weight, made for every matmul
  for (const auto& t : spec.tensors) {
    if (quantized_head && t.role == tensor_role::lm_head && !t.is_bias)
      head_dequantised += t.numel() * ctx.c * (ctx.fp16_quant_state ? 2 : 1);
  }
  for (const auto& t : spec.tensors) {
    if (!on_stage(t)) continue;
    // QLoRA quantises the blocks' linear layers; embeddings, norms and the LM head stay 16-bit
    // (transformers BitsAndBytesConfig skips the output layer).
    const bool quantize = ctx.quantized && !t.is_bias && !(ctx.fp32_kept && t.kept_fp32) &&
                          (t.module == module_kind::linear || t.module == module_kind::conv1d) &&
                          (t.layer >= 0 || (quantized_head && t.role == tensor_role::lm_head));
    const std::uint64_t local = tensor_parallel_numel(t, tp);
    const bool head_or_embedding = t.role == tensor_role::token_embedding ||
                                   t.role == tensor_role::position_embedding ||
                                   t.role == tensor_role::lm_head;
    const bool kept_fp32 = ctx.fp32_kept && t.kept_fp32;
    const std::uint64_t stored_bytes = kept_fp32 || kbit_prepared
                                           ? (head_or_embedding && !t.is_bias ? kbit_head_bytes : 4)
                                           : base_bytes;
    if (!params_on_host) {
      tl.allocate(share(quantize ? quantized_weight_bytes(t, tp, config.quantization)
                                 : local * stored_bytes,
                        params_sharded),
                  cat::weights);
    }
    if (ctx.full && stepped(t))
      params.push_back({local, kept_fp32 ? 4 : base_bytes, gradient_block(t.layer),
                        local_last_dim(t, tp), t.shape.size() >= 2});
  }
  // The linears LoRA adapts: the targets, and a tied LM head named lm_head (the embedding's
  // weight, on the last stage).
  std::vector<tensor_spec> adapted;
  for (const auto& t : spec.tensors) {
    if (lora_target(config, t) && on_stage(t)) adapted.push_back(t);
  }
  if (tied_head_target(spec, config) && last_stage) adapted.push_back(tied_lm_head(spec));
  for (const auto& t : adapted) {
    // A [r, in] and B [out, r], split with their layer's split dimension.
    const std::uint64_t in_features = local_in(t, tp);
    const std::uint64_t out_features = local_out(t, tp);
    for (std::uint64_t cols : {in_features, config.lora_rank}) {
      const std::uint64_t numel =
          cols == config.lora_rank ? out_features * cols : config.lora_rank * cols;
      tl.allocate(numel * ctx.adapter_bytes, cat::adapters);
      if (stepped(t))
        params.push_back({numel, ctx.adapter_bytes, gradient_block(t.layer), cols, true});
    }
    if (config.dora) {
      // DoRA's magnitude: one trainable value per output feature (PEFT lora_magnitude_vector).
      tl.allocate(out_features * ctx.adapter_bytes, cat::adapters);
      if (stepped(t)) {
        params.push_back(
            {out_features, ctx.adapter_bytes, gradient_block(t.layer), out_features, false});
      }
    }
  }
  // LoRA on the token embedding (PEFT lora.Embedding): A [r, vocab] and B [dim, r] in the
  // adapter dtype, stepped back with the embeddings; PEFT's modules_to_save: a trainable copy of
  // the embedding or the LM head (copy.deepcopy of the module, so in its dtype once the kbit
  // preparation and TRL's casts ran) beside the frozen original, which no longer runs.
  bool embedding_lora = false;
  for (const auto& t : spec.tensors) {
    if (!first_stage || !embedding_lora_target(spec, config, t) || embedding_lora) continue;
    embedding_lora = true;
    for (const std::uint64_t numel :
         {config.lora_rank * t.shape[0], t.shape[1] * config.lora_rank}) {
      tl.allocate(numel * ctx.adapter_bytes, cat::adapters);
      params.push_back({numel, ctx.adapter_bytes, -1, numel / config.lora_rank, true});
    }
  }
  std::vector<tensor_spec> copied;
  for (const auto& t : spec.tensors) {
    if ((config.save_embeddings && first_stage && token_table(spec, t)) ||
        (config.save_lm_head && last_stage && t.role == tensor_role::lm_head))
      copied.push_back(t);
  }
  if (config.save_lm_head && last_stage && spec.tied_embeddings)
    copied.push_back(tied_lm_head(spec));
  for (const auto& t : copied) {
    const std::uint64_t bytes = kbit_prepared ? kbit_head_bytes : base_bytes;
    tl.allocate(t.numel() * bytes, cat::adapters);
    params.push_back({t.numel(), bytes, -1, t.shape.back(), t.shape.size() >= 2});
  }
  for (const auto& t : spec.tensors) {
    // IA3's vector: one value per input feature of a feedforward target, per output feature of
    // any other (PEFT: ia3_l of shape [1, in] or [out, 1]).
    if (!ia3_target(config, t) || !on_stage(t)) continue;
    const std::uint64_t features = ia3_scales_input(t) ? local_in(t, tp) : local_out(t, tp);
    tl.allocate(features * ctx.adapter_bytes, cat::adapters);
    if (stepped(t))
      params.push_back({features, ctx.adapter_bytes, gradient_block(t.layer), features, false});
  }
  if (config.finetune == finetune_kind::prompt_tuning && first_stage) {
    // PEFT's PromptEmbedding: num_virtual_tokens rows of the token embedding's width, stepped
    // back with the embeddings.
    const std::uint64_t prompt = config.virtual_tokens * spec.embedding_dim;
    tl.allocate(prompt * ctx.adapter_bytes, cat::adapters);
    params.push_back({prompt, ctx.adapter_bytes, -1, spec.embedding_dim, true});
  }
  const bool llama_adapter = config.finetune == finetune_kind::llama_adapter_v1 ||
                             config.finetune == finetune_kind::llama_adapter_v2;
  const bool adapter_v2 = config.finetune == finetune_kind::llama_adapter_v2;
  for (std::size_t l = stage.first; llama_adapter && l < stage.last; ++l) {
    if (l < config.adapter_start_layer) continue;
    // adapter_wte [prompt, hidden] and gating_factor [1, 1, heads, 1].
    const int layer = static_cast<int>(l);
    const std::uint64_t prompt = config.adapter_prompt_length * spec.hidden_size;
    tl.allocate(prompt * ctx.adapter_bytes, cat::adapters);
    params.push_back({prompt, ctx.adapter_bytes, layer, spec.hidden_size, true});
    tl.allocate(spec.num_heads * ctx.adapter_bytes, cat::adapters);
    params.push_back({spec.num_heads, ctx.adapter_bytes, layer, spec.num_heads, false});
  }
  for (const auto& t : spec.tensors) {
    if (!adapter_v2 || !on_stage(t) || t.is_bias) continue;
    const std::uint64_t local = tensor_parallel_numel(t, tp);
    if (t.role == tensor_role::norm) {
      params.push_back({local, base_bytes, t.layer, local, false});  // trains in place
    } else if (t.module == module_kind::linear || t.module == module_kind::conv1d) {
      // adapter_scale and adapter_bias per output feature (the LM head's too).
      const std::uint64_t features = t.layer >= 0 ? local_out(t, tp) : tensor_out(t);
      for (int k = 0; k < 2; ++k) {
        tl.allocate(features * ctx.adapter_bytes, cat::adapters);
        params.push_back({features, ctx.adapter_bytes, t.layer, features, false});
      }
    }
  }
  for (const auto& p : params) out.trainable_params += p.numel;
  // The trained parameters of each block (index layer + 1; 0: outside the blocks), in order.
  std::vector<std::vector<const trainable*>> params_of(spec.layers.size() + 1);
  for (const auto& p : params) {
    if (p.layer >= -1 && static_cast<std::size_t>(p.layer + 1) < params_of.size())
      params_of[static_cast<std::size_t>(p.layer + 1)].push_back(&p);
  }
  const auto layer_params = [&](int layer) -> const std::vector<const trainable*>& {
    static const std::vector<const trainable*> none;
    return layer >= -1 && static_cast<std::size_t>(layer + 1) < params_of.size()
               ? params_of[static_cast<std::size_t>(layer + 1)]
               : none;
  };
  std::uint64_t trainable_bytes = 0;
  for (const auto& p : params) trainable_bytes += p.numel * p.bytes;
  if (master && !states_on_host) {
    // The optimizer's fp32 copy of its (share of the) parameters, made when it is built.
    for (const auto& p : params)
      tl.allocate(share(4 * p.numel, states_sharded), cat::master_weights);
  }
  if (dp == data_parallel::ddp) {
    // DDP's Reducer keeps every gradient again in flat buckets (gradient_as_bucket_view=False).
    tl.allocate(trainable_bytes, cat::communication_buffers);
  }
  // Unsharded parameters of one block (or of what lives outside the blocks: embeddings, final
  // norm, LM head) in the dtype they are gathered in.
  std::vector<std::uint64_t> block_params(spec.layers.size(), 0);
  std::uint64_t root_params = 0;
  for (const auto& t : spec.tensors) {
    if (!on_stage(t)) continue;
    const std::uint64_t bytes = tensor_parallel_numel(t, tp) * gathered_bytes;
    if (t.layer >= 0) {
      block_params[static_cast<std::size_t>(t.layer)] += bytes;
    } else if (t.role != tensor_role::vision) {
      // (A vision tower's layers are units of their own, gathered only to run images.)
      root_params += bytes;
    }
  }

  // torchtitan's per-op selective checkpointing checkpoints every block (block_memory::op_cache).
  const bool torchtitan = config.framework == framework_profile::torchtitan;
  const bool checkpointed = config.grad_ckpt || (torchtitan && config.selective_recompute);
  // DeepSpeed ZeRO-3 gathers module by module (deepspeed/runtime/zero/
  // partitioned_param_coordinator.py): a module's parameters before it runs plus up to
  // prefetch_bucket_elements ahead of it, released after it ran; parameters of at most
  // persistence_threshold elements stay gathered for good (parameter_offload.py
  // mark_persistent_parameters). A block gathered again for checkpointing's recomputation stays
  // gathered through its backward, which follows within stage3_max_reuse_distance.
  const bool deepspeed3 = dp == data_parallel::zero3;
  std::uint64_t persistent_params = 0;
  std::uint64_t input_root = 0;   // the largest embedding, gathered for the forward's start
  std::uint64_t output_root = 0;  // the LM head (the tied embedding) and what else sits there
  std::vector<std::uint64_t> largest_module(spec.layers.size(), 0);
  if (deepspeed3) {
    std::vector<std::pair<std::string, std::uint64_t>> modules;  // block modules, in order
    for (const auto& t : spec.tensors) {
      if (!on_stage(t)) continue;
      const std::uint64_t bytes = tensor_parallel_numel(t, tp) * gathered_bytes;
      if (tensor_parallel_numel(t, tp) <= config.persistence_threshold) {
        persistent_params += bytes;
        if (t.layer >= 0) {
          block_params[static_cast<std::size_t>(t.layer)] -= bytes;
        } else if (t.role != tensor_role::vision) {
          root_params -= bytes;
        }
        continue;
      }
      if (t.layer >= 0) {
        const std::string path = t.name.substr(0, t.name.rfind('.'));
        if (modules.empty() || modules.back().first != path) modules.push_back({path, 0});
        modules.back().second += bytes;
        auto& largest = largest_module[static_cast<std::size_t>(t.layer)];
        largest = std::max(largest, modules.back().second);
      } else if (t.role == tensor_role::token_embedding ||
                 t.role == tensor_role::position_embedding) {
        input_root = std::max(input_root, bytes);
        if (t.role == tensor_role::token_embedding && spec.tied_embeddings) output_root += bytes;
      } else if (t.role != tensor_role::vision) {
        output_root += bytes;
      }
    }
  }
  // A block that shares another's parameters gathers them again to run.
  for (std::size_t l = 0; l < spec.layers.size(); ++l) {
    const auto own = static_cast<std::size_t>(parameter_block(spec, static_cast<int>(l)));
    block_params[l] = block_params[own];
    largest_module[l] = largest_module[own];
  }
  const std::uint64_t prefetch_limit = config.prefetch_bucket_elements * gathered_bytes;
  // What ZeRO-3 holds gathered while block l runs (forward or backward), with what it
  // prefetches of the block that follows (`next` bytes).
  const auto deepspeed_working_set = [&](std::size_t l, bool backward, std::uint64_t next) {
    const std::uint64_t own = backward && checkpointed ? block_params[l] : largest_module[l];
    return own + std::min(prefetch_limit, next);
  };
  const std::uint64_t bucket_bytes =
      config.reduce_bucket_elements * (ctx.full ? full_bytes : ctx.adapter_bytes);
  if (deepspeed3) {
    if (persistent_params > 0) tl.allocate(persistent_params, cat::gathered_params);
    // Made when the optimizer is built (stage3.py _setup_for_real_optimizer): the reduce bucket
    // (on the GPU even when the optimizer is offloaded) and, unless the gradients go to the
    // host, the flat buffer of this rank's gradient partitions in the model dtype.
    if (bucket_bytes > 0) tl.allocate(bucket_bytes, cat::communication_buffers);
    if (!grads_to_host) {
      std::uint64_t partitions = 0;
      for (const auto& p : params) partitions += share(p.numel * p.bytes, true);
      tl.allocate(partitions, cat::gradients);
    }
  }

  // An encoder-decoder's decoder blocks run over the labels' tokens and read the encoder's.
  step_context decoder_ctx = ctx;
  std::size_t first_decoder = spec.layers.size();
  if (spec.encoder_decoder) {
    decoder_ctx.seq = decoder_len(config);
    decoder_ctx.tokens = config.micro_batch * decoder_ctx.seq;
    decoder_ctx.h_tokens = decoder_ctx.tokens;
    decoder_ctx.memory_seq = ctx.seq;
    decoder_ctx.memory_tokens = ctx.tokens;
    for (std::size_t l = spec.layers.size(); l-- > 0;) {
      if (spec.layers[l].stack == stack_kind::decoder) first_decoder = l;
    }
  }
  if (kernel_run(spec, config.attention, config.framework == framework_profile::transformers) !=
      config.attention)
    out.notes.push_back(kernel_run_note(spec));
  std::vector<block_memory> blocks;
  for (std::size_t l = 0; l < spec.layers.size(); ++l) {
    const step_context& at = l >= first_decoder ? decoder_ctx : ctx;
    blocks.push_back(block_memory_of(at, static_cast<int>(l)));
    blocks.back().residual = at.r * at.h_tokens * spec.hidden_size;
  }
  // What a block keeps for its backward: its input under checkpointing, else its saved tensors
  // (and autocast's weight copies).
  const auto saved_bytes = [&](const block_memory& b) {
    if (!b.graph) return std::vector<std::uint64_t>{};
    if (checkpointed) {
      std::vector<std::uint64_t> out_bytes{b.residual};
      out_bytes.insert(out_bytes.end(), b.op_cache.begin(), b.op_cache.end());
      return out_bytes;
    }
    std::vector<std::uint64_t> out_bytes = b.weight_copies;
    out_bytes.insert(out_bytes.end(), b.saved.begin(), b.saved.end());
    return out_bytes;
  };
  for (std::size_t l = stage.first; l < stage.last; ++l) {
    for (auto bytes : saved_bytes(blocks[l])) out.saved_activation_bytes += bytes;
  }
  // (the LM head's: the decoder's)
  const std::uint64_t t_tokens = decoder_ctx.tokens;
  const std::uint64_t th = decoder_ctx.h_tokens;
  const std::uint64_t h = spec.hidden_size;
  const std::uint64_t v = ceil_div(spec.vocab_size, tp);  // vocabulary-parallel LM head
  const output_shape output = output_of(spec, config, v, t_tokens);
  const std::uint64_t e = spec.embedding_dim;

  // torchtune's single-device full fine-tuning recipes step each parameter inside backward
  // (optimizer_in_bwd: its gradient is freed right after) with a paged bitsandbytes optimizer,
  // whose states live in CUDA unified memory outside PyTorch's allocator
  // (recipes/full_finetune_single_device.py, configs *_full_single_device.yaml).
  const bool in_backward = config.framework == framework_profile::torchtune && ctx.full &&
                           dp == data_parallel::none && config.optimizer_step;
  // DeepSpeed ZeRO steps with its FusedAdam, Colossal-AI's LowLevelZero and Gemini with
  // HybridAdam: multi-tensor kernels that update in place (deepspeed/ops/adam/fused_adam.py,
  // colossalai/nn/optimizer/hybrid_adam.py).
  const bool in_place_adam = zero_engine(dp);
  // Optimizer states: the stated dtype, else fp32 beside master weights, else the parameters'.
  const auto state_bytes = [&](std::uint64_t param_bytes) -> std::uint64_t {
    if (config.optimizer_state_bytes) return config.optimizer_state_bytes;
    return master ? 4 : param_bytes;
  };
  std::vector<int> states;
  bool backward_workspace = false;
  const int steps = config.optimizer_step ? 2 : 1;  // step 2 runs with the optimizer states
  // Gradient accumulation: micro-batches before the last of a step leave their gradients
  // alive through the next forward; replaying two per step shows every such moment.
  const int micro_steps = config.grad_accumulation > 1 && !in_backward ? 2 : 1;
  // FSDP skips its reduce-scatter while accumulating (no_sync, which litgpt's
  // fabric.no_backward_sync and accelerate's accumulate() use), so each unit's unsharded
  // gradient is kept until the last micro-batch (torch FullyShardedDataParallel.no_sync docs).
  // torchtune's recipes call backward() on every micro-batch without it, reduce-scattering
  // each time into the shard.
  const bool no_sync =
      (dp == data_parallel::fsdp_full_shard || dp == data_parallel::fsdp_shard_grad_op) &&
      config.framework != framework_profile::torchtune;
  std::vector<std::vector<int>> unsynced(spec.layers.size() + 1);  // by layer + 1
  std::vector<int> grads;
  // torch < 2.0's zero_grad zeroes the gradients in place (set_to_none=False): those the loop's
  // optimizer owns stay allocated into the next step, whose backward accumulates into them.
  // DeepSpeed's and Colossal-AI's engines set theirs to None whatever the release
  // (deepspeed/runtime/zero/stage_1_and_2.py zero_grad(set_to_none=True)).
  const bool grads_outlive_step = config.software.zero_grad_keeps_gradients() && !zero_engine(dp) &&
                                  !grads_to_host && !in_backward;
  bool grads_kept = false;          // the last step's gradients, zeroed, are still allocated
  std::vector<std::string> torch1;  // what torch 1.x's defaults change here
  if (grads_outlive_step)
    torch1.push_back("zero_grad keeps the gradients, zeroed, into the next step");
  if (software.adamw_loops_by_default() && config.optimizer == optimizer_kind::adamw &&
      !config.adamw_impl && !in_place_adam)
    torch1.push_back("AdamW steps one parameter at a time");
  if (!torch1.empty()) {
    out.notes.push_back("torch " + release_name(*software.torch) + ": " + torch1.front() +
                        (torch1.size() > 1 ? "; " + torch1.back() : "") +
                        " (PyTorch 2.0 changed the defaults)");
  }
  // litgpt's fit loop keeps the last iteration's logits and loss (and so its graph) until the
  // next forward returns (finetune/lora.py: `logits = model(...)`), as a transformers loop that
  // keeps its `outputs` does (training_config::keep_outputs); bitsandbytes' MatMul4Bit holds its
  // input in ctx.tensors, outside the saved tensors autograd frees in backward (bitsandbytes <
  // 0.45 autograd/_functions.py; later versions keep (None, B)), so the inputs of every 4-bit
  // linear stay alive from their backward until the next forward has run.
  const bool litgpt = config.framework == framework_profile::litgpt;
  const bool keep_outputs =
      config.keep_outputs && config.framework == framework_profile::transformers;
  const bool inputs_outlive_backward = ctx.quantized && (litgpt || keep_outputs);
  std::vector<int> previous_graph;  // the inputs held by the last iteration's graph
  int previous_logits = -1;         // the last iteration's logits, until the next forward
  // The loop's variable is reassigned: the last iteration's logits and graph die.
  const auto drop_previous_iteration = [&] {
    tl.free(previous_logits);
    previous_logits = -1;
    for (int id : previous_graph) tl.free(id);
    previous_graph.clear();
  };
  const bool unsloth = config.framework == framework_profile::unsloth;
  // unsloth dequantises a 4-bit base for its forward matmuls into one buffer per GPU, grown to
  // the largest linear (unsloth/kernels/utils.py WEIGHT_BUFFERS, ABSMAX_BUFFERS).
  if (unsloth && ctx.quantized)
    tl.allocate(unsloth_dequantised_bytes(spec, ctx.c, -1), cat::weights);
  // unsloth's gradient checkpointing copies each block's input to pinned host memory, all but
  // the last block's and those of at most 2^20 elements (unsloth_zoo/gradient_checkpointing.py
  // UnslothCheckpointFunction, MINIMUM_SIZE), and copies them back for the recomputation into
  // two GPU buffers it sizes in the first forward and keeps (GPU_BUFFERS, GPU_BUFFERS_B).
  const bool inputs_to_host = unsloth_host_checkpoint_bytes(spec, config) > 0;
  std::vector<int> host_copy_buffers;
  std::uint64_t unsloth_chunks = 0;  // its loss's chunk count, sized once (functools.cache)
  for (int pass = 0; pass < steps * micro_steps; ++pass) {
    const int step = pass / micro_steps + 1;
    const bool first_micro = pass % micro_steps == 0;
    const bool last_micro = pass % micro_steps == micro_steps - 1;
    tl.phase("forward");
    std::vector<std::vector<int>> saved(blocks.size());
    std::vector<std::vector<int>> cached(blocks.size());  // block_memory::op_cache
    std::vector<bool> offloaded(blocks.size(), false);
    std::vector<int> copies;
    // ZeRO-3 / FSDP: the root (embeddings, final norm, LM head) stays gathered for the step;
    // each block is gathered before it runs, the next one prefetched, and (FULL_SHARD) freed
    // after it ran.
    std::vector<int> gathered(blocks.size(), -1);
    const int root =
        params_sharded && !deepspeed3 ? tl.allocate(root_params, cat::gathered_params) : -1;
    const auto next_block = [&](std::size_t l) {
      return l + 1 < stage.last ? block_params[l + 1] : output_root;
    };
    if (deepspeed3 && stage.first < stage.last) {
      tl.free(tl.allocate(input_root + std::min(prefetch_limit, block_params[stage.first]),
                          cat::gathered_params));
    } else if (params_sharded && stage.first < stage.last) {
      gathered[stage.first] = tl.allocate(block_params[stage.first], cat::gathered_params);
    }
    // Pipeline stages run the forward of the micro-batches ahead of the one stepped back first;
    // their saved tensors wait for their own backward.
    std::vector<int> waiting;
    int residual = -1;
    const bool stage_masked = std::any_of(blocks.begin() + static_cast<std::ptrdiff_t>(stage.first),
                                          blocks.begin() + static_cast<std::ptrdiff_t>(stage.last),
                                          [](const block_memory& b) { return b.masked_attention; });
    while (inputs_to_host && host_copy_buffers.size() < 2)
      host_copy_buffers.push_back(tl.allocate(ctx.r * th * h, cat::activations));
    // Encoder-decoders (modeling_t5.py T5Stack): each stack's first block makes the position
    // bias every block of the stack adds to its scores, [B, heads, q, k] once the padding mask
    // is added, and cross-attention's (zeros plus the encoder's mask) in the embeddings' dtype;
    // checkpointed blocks take them as inputs, kept to their backward. The encoder's final norm
    // (its fp32 input kept, as the decoder's) and dropout (its mask) make the memory that every
    // cross-attention reads, alive until the model returns, or to the decoder's backward when a
    // block keeps it (checkpointing passes it to every block).
    std::vector<int> encoder_bias;
    std::vector<int> decoder_bias;
    std::vector<int> encoder_end;
    int memory = -1;
    const bool memory_kept =
        checkpointed || std::any_of(blocks.begin(), blocks.end(),
                                    [](const block_memory& b) { return b.keeps_memory; });
    const std::uint64_t memory_bytes = norm_output_bytes(ctx, ctx.r) * ctx.tokens * h;
    // A position bias (or its gradient) over q_len queries and k_len keys, [B, heads, q, k].
    const auto bias_bytes = [&](std::uint64_t q_len, std::uint64_t k_len) {
      return ctx.r * config.micro_batch * spec.num_heads * q_len * k_len;
    };
    const auto end_encoder = [&] {
      encoder_end.push_back(tl.allocate(4 * ctx.tokens * h, cat::activations));
      if (spec.hidden_dropout > 0)
        encoder_end.push_back(tl.allocate(ctx.tokens * h, cat::activations));
      memory = tl.allocate(memory_bytes, cat::activations);
      tl.free(residual);
      if (!checkpointed) {
        for (int id : encoder_bias) tl.free(id);
        encoder_bias.clear();
      }
      decoder_bias.push_back(
          tl.allocate(bias_bytes(decoder_ctx.seq, decoder_ctx.seq), cat::activations));
      decoder_bias.push_back(tl.allocate(bias_bytes(decoder_ctx.seq, ctx.seq), cat::activations));
    };
    for (std::uint64_t mb = 0; mb < in_flight; ++mb) {
      const bool stepped_back = mb + 1 == in_flight;
      // The embedding output, or the activation received from the previous stage.
      residual = tl.allocate(blocks[stage.first].residual, cat::activations);
      // The embeddings' dropout mask (model_spec::embedding_dropout_features), kept for the
      // embeddings' backward, the step's last.
      const std::uint64_t embedding_mask = spec.embedding_dropout_features;
      if (stage.first == 0 && embedding_mask > 0) {
        (stepped_back ? saved[0] : waiting)
            .push_back(tl.allocate(ctx.h_tokens * embedding_mask, cat::activations));
      }
      if (embedding_lora) {
        // PEFT lora.Embedding: result + (F.embedding(x, A.T) @ B) * scaling; the matmul keeps
        // the looked-up [tokens, r] rows for B's gradient (16-bit under autocast); the product
        // and its scaled copy [tokens, dim] live until the sum is made.
        (stepped_back ? saved[0] : waiting)
            .push_back(tl.allocate(ctx.tokens * config.lora_rank * ctx.c, cat::activations));
        tl.free(tl.allocate(2 * ctx.tokens * spec.embedding_dim * ctx.c, cat::activations));
      }
      // The boolean mask transformers builds for windowed layers once a forward, [B, 1, s, s]
      // (masking_utils.sdpa_mask): alive through the forward, or, checkpointed, as every block's
      // input until the first block's backward.
      int bool_mask = -1;
      if (stage_masked) {
        const std::uint64_t bytes = config.micro_batch * ctx.seq * ctx.seq;
        if (checkpointed)
          (stepped_back ? saved[stage.first] : waiting)
              .push_back(tl.allocate(bytes, cat::activations));
        else
          bool_mask = tl.allocate(bytes, cat::activations);
      }
      if (spec.encoder_decoder)
        encoder_bias.push_back(tl.allocate(bias_bytes(ctx.seq, ctx.seq), cat::activations));
      for (std::size_t l = stage.first; l < stage.last; ++l) {
        const auto& b = blocks[l];
        std::vector<int>& keep = stepped_back ? saved[l] : waiting;
        if (l == first_decoder) {
          end_encoder();
          residual = tl.allocate(b.residual, cat::activations);  // the decoder's embedding
          if (embedding_mask > 0)
            keep.push_back(tl.allocate(decoder_ctx.h_tokens * embedding_mask, cat::activations));
        }
        if (deepspeed3) {
          gathered[l] =
              tl.allocate(deepspeed_working_set(l, false, next_block(l)), cat::gathered_params);
        } else if (params_sharded && l + 1 < stage.last) {
          gathered[l + 1] = tl.allocate(block_params[l + 1], cat::gathered_params);
        }
        if (checkpointed) {
          // Non-reentrant checkpointing keeps only the block input; autocast still caches the
          // weight copies until it exits.
          if (b.graph && !(inputs_to_host && l + 1 < stage.last))
            keep.push_back(tl.allocate(b.residual, cat::activations));
          for (auto bytes : b.weight_copies)
            copies.push_back(tl.allocate(bytes, cat::autocast_weight_copies));
          std::vector<int> live;
          for (auto bytes : b.saved) live.push_back(tl.allocate(bytes, cat::activations));
          for (auto bytes : b.op_cache)
            (stepped_back ? cached[l] : keep).push_back(tl.allocate(bytes, cat::activations));
          for (int id : live) tl.free(id);
        } else {
          for (auto bytes : b.weight_copies)
            keep.push_back(tl.allocate(bytes, cat::autocast_weight_copies));
          for (auto bytes : b.saved) keep.push_back(tl.allocate(bytes, cat::activations));
        }
        const int busy = tl.allocate(b.transient, cat::activations);
        tl.free(busy);
        // Offloaded activations leave two blocks behind the forward (the copy overlaps the
        // next block's compute).
        if (acts_to_host && stepped_back && l >= stage.first + 2) {
          for (int id : saved[l - 2]) tl.free(id);
          saved[l - 2].clear();
          offloaded[l - 2] = true;
        }
        const int next = tl.allocate(b.residual, cat::activations);
        tl.free(residual);
        residual = next;
        // torchtitan leaves its last block gathered after the forward, whose backward comes next
        // (parallelize.py apply_fsdp: reshard_after_forward for all blocks but the last).
        const bool kept_gathered = torchtitan && l + 1 == spec.layers.size();
        if (dp != data_parallel::fsdp_shard_grad_op && !kept_gathered) {
          tl.free(gathered[l]);
          gathered[l] = -1;
        }
      }
      tl.free(bool_mask);
      if (!checkpointed) {
        for (int id : decoder_bias) tl.free(id);
        decoder_bias.clear();
      }
      if (!last_stage) {
        tl.free(residual);  // sent to the next stage
        residual = -1;
      }
      if (checkpointed && !stepped_back) {
        // Each micro-batch's forward exits its own autocast region, which clears the cache.
        for (int id : copies) tl.free(id);
        copies.clear();
      }
    }
    // Final norm, LM head (16-bit copy of its weight under autocast) and the loss: transformers
    // upcasts the logits to fp32 and cross-entropy keeps log-softmax's fp32 output.
    std::vector<int> head;
    int log_softmax = -1;
    int kept_logits = -1;  // logits the framework keeps referenced into the backward
    const std::uint64_t tv = output.rows * output.cols;
    // The largest of the chunks whose cross-entropy is a graph of its own (taken back one after
    // another); the whole output when the loss is not chunked.
    std::uint64_t chunk_elements = tv;
    // A plain cross-entropy (training_config::loss) keeps the log-softmax in the logits' dtype
    // outside autocast; every other loss takes it in fp32.
    const bool transformers = config.framework == framework_profile::transformers;
    // T5ForConditionalGeneration and the Gemma 3 and Llama 4 wrappers take their own
    // (model_spec::loss); T5's labels are already aligned with its logits (the decoder's inputs
    // are the labels shifted right); Gemma 3's upcasts the logits first.
    const bool plain_loss = transformers && (config.loss == loss_kind::plain_cross_entropy ||
                                             spec.loss != model_loss::causal_lm);
    const bool shifted = plain_loss && spec.causal && !spec.encoder_decoder;
    const std::uint64_t logit_bytes =
        spec.logits_fp32 || (transformers && spec.loss == model_loss::plain_fp32) ? 4 : ctx.c;
    const std::uint64_t loss_bytes = plain_loss && !ctx.amp ? logit_bytes : 4;
    if (last_stage) {
      tl.phase("loss");
      if (deepspeed3) head.push_back(tl.allocate(output_root, cat::gathered_params));
      // The final norm keeps its input in fp32 (transformers), or its 16-bit input and an fp32
      // inverse RMS a row (unsloth's Fast_RMS_Layernorm).
      head.push_back(tl.allocate(unsloth ? ctx.r * th * h + 4 * th : 4 * th * h, cat::activations));
      // T5Stack's final dropout after the decoder's final norm: its mask.
      if (spec.encoder_decoder && spec.hidden_dropout > 0)
        head.push_back(tl.allocate(th * h, cat::activations));
      if (ctx.autocast_copies) {
        head.push_back(tl.allocate(v * e * ctx.c, cat::autocast_weight_copies));
        head.push_back(tl.allocate(t_tokens * e * ctx.c, cat::activations));
      } else if (kbit_prepared && ctx.amp && kbit_head_bytes != ctx.c) {
        // A frozen fp32 LM head: autocast's 16-bit copy, kept for the input's gradient.
        head.push_back(tl.allocate(v * e * ctx.c, cat::autocast_weight_copies));
      }
      // A trained copy of the LM head (modules_to_save) keeps its 16-bit input for its weight's
      // gradient.
      if (config.save_lm_head) head.push_back(tl.allocate(t_tokens * e * ctx.c, cat::activations));
      // LLaMA-Adapter v2's LM head keeps linear(x) + adapter_bias for its scale's gradient.
      if (adapter_v2) head.push_back(tl.allocate(ctx.c * tv, cat::logits_and_loss));
      if (unsloth) {
        // unsloth's fused loss (UnslothFusedLoss) projects the final norm's output a chunk of
        // tokens at a time, upcasts the chunk's logits to fp32 and takes its cross-entropy back
        // at once (torch.func.grad_and_value): bf16 logits, fp32 copy, log-softmax's output and
        // its gradient, 14 bytes a logit. It keeps only the hidden states' gradient.
        const std::uint64_t hidden = ctx.c * t_tokens * e;
        const int normed = tl.allocate(hidden, cat::activations);
        kept_logits = tl.allocate(hidden, cat::logits_and_loss);
        if (unsloth_chunks == 0) {
          const double cap = 4.0 * static_cast<double>(1ULL << 30);
          double target = cap;
          if (gpu.memory_bytes > 0) {
            const std::uint64_t used = outside + tl.reserved();
            const double free =
                gpu.memory_bytes > used ? static_cast<double>(gpu.memory_bytes - used) : 0.0;
            target = std::max(std::min(cap, free / 2), 1.0);
          }
          unsloth_chunks =
              unsloth_loss_chunks(t_tokens, output.cols, target, static_cast<double>(hidden));
        }
        tl.free(tl.allocate(14 * ceil_div(t_tokens, unsloth_chunks) * output.cols,
                            cat::logits_and_loss));
        tl.free(normed);
      } else if (litgpt) {
        // litgpt projects in 128-token chunks (GPT.forward lm_head_chunk_size=128); once
        // model() returns them all, Fabric casts each to fp32 (_FabricModule.forward
        // convert_output), and the loop's `logits` holds them until the next model() returns.
        tl.free(tl.allocate(head_dequantised, cat::activations));  // for the last chunk
        const int chunks = ctx.c == 4 ? -1 : tl.allocate(ctx.c * tv, cat::logits_and_loss);
        kept_logits = tl.allocate(4 * tv, cat::logits_and_loss);
        tl.free(chunks);
        drop_previous_iteration();  // `logits` is reassigned
        // chunked_cross_entropy takes each chunk's loss apart and keeps its fp32 log-softmax.
        // (A pooled classifier head's output is smaller than one chunk.)
        chunk_elements =
            std::min(tv, config.micro_batch *
                             std::min<std::uint64_t>(ctx.seq, litgpt_chunk_tokens) * output.cols);
        log_softmax = tl.allocate(4 * tv, cat::logits_and_loss);
      } else if (config.framework == framework_profile::torchtune) {
        // torchtune: 8 output chunks in the compute dtype, each upcast to fp32 for
        // cross-entropy (CEWithChunkedOutputLoss), logits deleted before backward.
        const int chunks = tl.allocate(ctx.c * tv, cat::logits_and_loss);
        // torch.chunk along the sequence: chunks of ceil(seq / 8) tokens per sequence.
        chunk_elements =
            config.micro_batch * ceil_div(ctx.seq, torchtune_output_chunks) * output.cols;
        log_softmax = tl.allocate(4 * tv, cat::logits_and_loss);
        const int upcast = ctx.c == 4 ? -1 : tl.allocate(4 * chunk_elements, cat::logits_and_loss);
        tl.free(upcast);
        tl.free(chunks);
      } else {
        // transformers: the logits, their fp32 upcast (ForCausalLMLoss), log-softmax's output.
        // A plain cross-entropy first copies a causal LM's logits shifted by one position
        // (B (s - 1) rows), and casts only under autocast.
        const int logits = tl.allocate(logit_bytes * tv, cat::logits_and_loss);
        // model() returns the logits alone: the loop's variable takes them before the loss.
        if (keep_outputs && plain_loss) drop_previous_iteration();
        const int shifted_copy =
            shifted ? tl.allocate(logit_bytes * (tv - config.micro_batch * output.cols),
                                  cat::logits_and_loss)
                    : -1;
        const int upcast =
            loss_bytes == logit_bytes ? -1 : tl.allocate(4 * tv, cat::logits_and_loss);
        log_softmax = tl.allocate(loss_bytes * tv, cat::logits_and_loss);
        tl.free(upcast);
        tl.free(shifted_copy);
        if (keep_outputs) {
          // The loop's `outputs` is reassigned once model() returns.
          drop_previous_iteration();
          kept_logits = logits;
        } else {
          tl.free(logits);
        }
      }
    }
    tl.free(residual);
    if (checkpointed) {
      for (int id : copies) tl.free(id);  // autocast's cache is cleared when it exits
    }
    if (!memory_kept) {
      tl.free(memory);
      memory = -1;
    }

    tl.phase("backward");
    if (!backward_workspace) {
      tl.allocate(cublas_workspace_bytes(gpu.architecture),
                  cat::cuda_workspace);  // autograd thread
      backward_workspace = true;
    }
    // FSDP1 with use_orig_params=True lets frozen and trainable tensors share a flat parameter,
    // whose gradient then covers the frozen ones too ("equivalent to not freezing those
    // parameters", torch.distributed.fsdp FullyShardedDataParallel docs). litgpt's LoRA wraps
    // whole blocks (Lightning FSDPStrategy: auto_wrap_policy={Block}, use_orig_params=True);
    // PEFT's and torchtune's FSDP wrapping put the adapters in units of their own.
    const bool frozen_in_flat_params =
        !ctx.full && config.framework == framework_profile::litgpt &&
        (dp == data_parallel::fsdp_full_shard || dp == data_parallel::fsdp_shard_grad_op);
    auto grads_for_layer = [&](int layer) {
      if (!grads_sharded) {
        if (!first_micro || grads_kept) return;  // accumulated in place
        for (const trainable* p : layer_params(layer))
          grads.push_back(tl.allocate(p->numel * p->bytes, cat::gradients));
        return;
      }
      std::vector<int>& kept = unsynced[static_cast<std::size_t>(layer + 1)];
      if (no_sync && !last_micro) {
        if (!kept.empty()) return;  // accumulated into
        std::uint64_t unit = 0;
        for (const trainable* p : layer_params(layer))
          unit += p->numel * (params_sharded ? gathered_bytes : p->bytes);
        if (unit > 0 && frozen_in_flat_params)
          unit += layer >= 0 ? block_params[static_cast<std::size_t>(layer)] : root_params;
        if (unit > 0) kept.push_back(tl.allocate(unit, cat::gradients));
        return;
      }
      // The block's full gradients exist until they are reduce-scattered into this rank's
      // shard (FSDP, ZeRO-2/3); the shard stays.
      // Gemini writes the reduced shard into the parameters' own fp16 chunk slots
      // (ZeroDDP grad_handle: copy_tensor_to_chunk_slice), so nothing stays.
      if (frozen_in_flat_params) {
        // A flat parameter holding frozen and trainable tensors gets a gradient for all of it.
        std::uint64_t trainable_in_unit = 0;
        for (const trainable* p : layer_params(layer)) trainable_in_unit += p->numel * p->bytes;
        if (trainable_in_unit == 0) return;  // an all-frozen unit has no gradient
        const std::uint64_t unit =
            (layer >= 0 ? block_params[static_cast<std::size_t>(layer)] : root_params) +
            trainable_in_unit;
        const int whole = kept.empty() ? tl.allocate(unit, cat::gradients) : -1;
        if (!grads_kept) grads.push_back(tl.allocate(share(unit, true), cat::gradients));
        tl.free(whole);
        for (int id : kept) tl.free(id);  // reduce-scattered at last
        kept.clear();
        return;
      }
      if (deepspeed3) {
        // Each gradient is copied into the reduce bucket as it is made, and a full bucket is
        // reduce-scattered from a flat copy of it (stage3.py __add_grad_to_ipg_bucket,
        // comm/coalesced_collectives.py reduce_scatter_coalesced) into the partition buffer.
        std::uint64_t largest = 0;
        std::uint64_t total = 0;
        for (const trainable* p : layer_params(layer)) {
          const std::uint64_t bytes = p->numel * (ctx.full ? gathered_bytes : p->bytes);
          largest = std::max(largest, bytes);
          total += bytes;
        }
        if (total == 0) return;
        const int fresh = tl.allocate(largest, cat::gradients);
        tl.free(tl.allocate(std::min(bucket_bytes, total), cat::communication_buffers));
        tl.free(fresh);
        return;
      }
      // DeepSpeed ZeRO-2 accumulates into the shard it keeps.
      // Offloaded, the reduced shard is written to the host instead (nothing stays).
      const bool keep_shard =
          dp != data_parallel::gemini && (first_micro || no_sync) && !grads_to_host;
      std::vector<int> full;
      std::uint64_t unsharded = 0;
      for (const trainable* p : layer_params(layer)) {
        if (kept.empty()) {
          full.push_back(
              tl.allocate(p->numel * (params_sharded ? gathered_bytes : p->bytes), cat::gradients));
          unsharded += p->numel;
        }
        if (keep_shard && !grads_kept) {
          grads.push_back(tl.allocate(share(p->numel * p->bytes, true), cat::gradients));
        }
      }
      // torchtitan's FSDP2 copies a unit's gradients into one flat reduce-scatter input in its
      // reduce dtype, fp32 under mixed precision (MixedPrecisionPolicy reduce_dtype: its
      // mixed_precision_reduce "float32"; torch/distributed/fsdp/_fully_shard/
      // _fsdp_collectives.py foreach_reduce), before the gradients go.
      if (torchtitan && params_sharded && unsharded > 0)
        tl.free(
            tl.allocate((ctx.amp ? 4 : gathered_bytes) * unsharded, cat::communication_buffers));
      for (int id : full) tl.free(id);
      for (int id : kept) tl.free(id);  // reduce-scattered at last
      kept.clear();
    };
    // Reduced gradient shards go to the host (ZeRO-Offload's pinned fp32 partition, FSDP
    // CPUOffload): nothing of them stays on the GPU.
    auto grads_out = [&](std::size_t before) {
      if (!grads_to_host) return;
      for (std::size_t i = before; i < grads.size(); ++i) tl.free(grads[i]);
      grads.resize(before);
    };
    auto grads_for = [&](int layer) {
      const std::size_t before = grads.size();
      grads_for_layer(layer);
      grads_out(before);
    };
    if (dp == data_parallel::zero2 && config.reduce_bucket_elements > 0 && step == 1 &&
        first_micro) {
      // The reduce bucket gradients are copied into before their reduce-scatter.
      tl.allocate(config.reduce_bucket_elements * (ctx.full ? full_bytes : ctx.adapter_bytes),
                  cat::communication_buffers);
    }
    // A stage before the last receives the gradient of its output from the next stage.
    const int received = last_stage ? -1 : tl.allocate(ctx.r * th * h, cat::activations);
    if (last_stage && unsloth) {
      // The loss's gradient was made in its forward; its backward scales it out of place
      // (grad_inputs * scale_factor, beside the saved one) and hands it on.
      const int scaled = tl.allocate(ctx.c * t_tokens * e, cat::logits_and_loss);
      tl.free(kept_logits);
      grads_for(-1);
      tl.free(scaled);
      for (int id : head) tl.free(id);
    } else if (last_stage) {
      // nll_loss's backward writes a dense [tokens, vocab] fp32 gradient; log_softmax's backward
      // makes another while that one and its saved output are alive; then the gradient is cast
      // back to the logits' dtype (aten nll_loss_backward, _log_softmax_backward_data). Chunked,
      // autograd runs each chunk's nll, log_softmax and upcast backward before the next (a
      // chunk's nodes are younger than the previous chunk's: the engine takes the highest
      // sequence number first), so only the gradients of all chunks in the logits' dtype pile up
      // (in fp32 the upcast is no node and each chunk's fp32 gradient waits for the head).
      const int grad_nll = tl.allocate(loss_bytes * chunk_elements, cat::logits_and_loss);
      int grad_logits = tl.allocate(loss_bytes * chunk_elements, cat::logits_and_loss);
      tl.free(grad_nll);
      tl.free(log_softmax);
      if (litgpt) {
        // Fabric's fp32 casts are older than every chunk's loss, so the fp32 gradients of all
        // chunks pile up before the first is cast back, each then giving way to its 16-bit one.
        tl.free(tl.allocate(4 * (tv - chunk_elements), cat::logits_and_loss));
        tl.free(grad_logits);
        grad_logits = -1;
      }
      // The gradient in the head's dtype: cast back, gathered from the chunks, or (a plain
      // cross-entropy of shifted logits) put into a zeroed tensor of all positions.
      int grad_c = loss_bytes == ctx.c && chunk_elements == tv && !shifted
                       ? -1
                       : tl.allocate(ctx.c * tv, cat::logits_and_loss);
      tl.free(tl.allocate(head_dequantised, cat::activations));  // the head's input gradient
      tl.free(grad_logits);
      if (shifted && loss_bytes != ctx.c) {
        // The cast back is of the shifted positions; the slice's backward fills another.
        const int unshifted = tl.allocate(ctx.c * tv, cat::logits_and_loss);
        tl.free(grad_c);
        grad_c = unshifted;
      }
      if (litgpt || keep_outputs) {
        previous_logits = kept_logits;
      } else {
        tl.free(kept_logits);
      }
      grads_for(-1);  // LM head and embeddings (outside the blocks)
      tl.free(grad_c);
      for (int id : head) tl.free(id);
    }
    // Encoder-decoders: the memory's gradient, summed over the cross-attentions, lives through the
    // decoder's backward; a trained position bias (full fine-tuning) gathers its [B, heads, q, k]
    // gradient from every block of its stack.
    int memory_grad = -1;
    int bias_grad = -1;
    if (spec.encoder_decoder) {
      memory_grad = tl.allocate(memory_bytes, cat::activations);
      if (ctx.full) {
        bias_grad = tl.allocate(bias_bytes(decoder_ctx.seq, decoder_ctx.seq), cat::activations);
      }
    }
    for (std::size_t l = stage.last; l-- > stage.first;) {
      const auto& b = blocks[l];
      if (offloaded[l]) {  // brought back before the block's backward
        for (auto bytes : saved_bytes(b)) saved[l].push_back(tl.allocate(bytes, cat::activations));
      }
      // The recomputation takes the per-op checkpoint's outputs over as what it would have made.
      for (int id : cached[l]) tl.free(id);
      cached[l].clear();
      std::vector<int> recomputed;
      if (checkpointed && b.graph) {
        for (auto bytes : b.weight_copies)
          recomputed.push_back(tl.allocate(bytes, cat::autocast_weight_copies));
        for (auto bytes : b.saved) recomputed.push_back(tl.allocate(bytes, cat::activations));
      }
      if (deepspeed3) {
        gathered[l] = tl.allocate(
            deepspeed_working_set(l, true, l > stage.first ? block_params[l - 1] : input_root),
            cat::gathered_params);
      } else if (params_sharded && gathered[l] < 0) {
        gathered[l] = tl.allocate(block_params[l], cat::gathered_params);
      }
      // FSDP2 gathers the block stepped back next while this one is ("always follows
      // backward_prefetch=BACKWARD_PRE": torchtitan docs/fsdp.md).
      if (torchtitan && params_sharded && l > stage.first && gathered[l - 1] < 0)
        gathered[l - 1] = tl.allocate(block_params[l - 1], cat::gathered_params);
      const int busy = tl.allocate(b.backward_transient, cat::activations);
      grads_for(static_cast<int>(l));
      if (in_backward) {
        for (int id : grads) tl.free(id);  // stepped and zeroed in its hook
        grads.clear();
      }
      tl.free(busy);
      for (int id : recomputed) tl.free(id);
      for (int id : saved[l]) tl.free(id);
      if (inputs_outlive_backward && b.retained > 0)
        previous_graph.push_back(tl.allocate(b.retained, cat::activations));
      tl.free(gathered[l]);
      gathered[l] = -1;
      if (l == first_decoder) {  // the decoder stepped back: on into the encoder
        for (int id : decoder_bias) tl.free(id);
        for (int id : encoder_end) tl.free(id);
        decoder_bias.clear();
        encoder_end.clear();
        tl.free(memory_grad);
        tl.free(memory);
        tl.free(bias_grad);
        memory = -1;
        bias_grad = ctx.full ? tl.allocate(bias_bytes(ctx.seq, ctx.seq), cat::activations) : -1;
      }
    }
    tl.free(bias_grad);
    for (int id : encoder_bias) tl.free(id);
    encoder_bias.clear();
    tl.free(received);
    if (!last_stage) grads_for(-1);      // the first stage's embeddings, stepped back last
    for (int id : waiting) tl.free(id);  // (their backward follows, with the gradients alive)
    tl.free(root);

    if (!last_micro) continue;
    if (!config.optimizer_step) break;
    if (states_on_host) continue;  // CPU Adam steps in host memory
    if (in_backward) {
      for (int id : grads) tl.free(id);
      grads.clear();
      if (out.unmanaged_bytes == 0) {
        for (const auto& p : params) {
          const bool eight_bit = config.optimizer == optimizer_kind::adamw_8bit && p.numel >= 4096;
          out.unmanaged_bytes +=
              eight_bit ? 2 * p.numel + 8 * ((p.numel + 255) / 256) : 8 * p.numel;
        }
      }
      continue;
    }
    tl.phase("optimizer step");
    // Mixed-precision optimizers with master weights step on fp32 gradients: the (shard of the)
    // 16-bit gradients is converted first (DeepSpeed single_partition_of_fp32_groups grads).
    std::vector<int> fp32_grads;
    if (master && deepspeed3) {
      // ZeRO-3 steps sub-group by sub-group (sub_group_size 1e9 elements): its gradient
      // partitions flattened, then converted to fp32 (stage3.py _prepare_fp32_grad_for_sub_group).
      std::uint64_t partition = 0;
      for (const auto& p : params) partition += share(p.numel, true);
      const std::uint64_t sub_group = std::min<std::uint64_t>(partition, 1000000000);
      const int flat = tl.allocate(2 * sub_group, cat::optimizer_temporaries);
      fp32_grads.push_back(tl.allocate(4 * sub_group, cat::optimizer_temporaries));
      tl.free(flat);
    } else if (master && dp != data_parallel::gemini) {  // HybridAdam reads the fp16 slots
      for (const auto& p : params) {
        fp32_grads.push_back(
            tl.allocate(share(4 * p.numel, states_sharded), cat::optimizer_temporaries));
      }
    }
    if (states.empty() && (config.optimizer == optimizer_kind::adamw ||
                           config.optimizer == optimizer_kind::sgd_momentum)) {
      // torch.optim creates the states at the first step, in the parameters' dtype: AdamW's
      // exp_avg and exp_avg_sq, SGD's momentum buffer.
      for (const auto& p : params) {
        const std::uint64_t bytes = state_bytes(p.bytes);
        states.push_back(
            tl.allocate(share(p.numel * bytes, states_sharded), cat::optimizer_states));
        if (config.optimizer == optimizer_kind::adamw) {
          states.push_back(
              tl.allocate(share(p.numel * bytes, states_sharded), cat::optimizer_states));
        }
      }
    }
    if (config.optimizer == optimizer_kind::adamw_8bit && states.empty()) {
      // bitsandbytes AdamW8bit: both moments as uint8 with an fp32 absmax per 256-value block;
      // tensors under min_8bit_size (4096) keep fp32 moments (bitsandbytes optim/optimizer.py
      // Optimizer2State.init_state). Its blockwise kernel updates in place.
      for (const auto& p : params) {
        const std::uint64_t bytes =
            p.numel < 4096 ? 8 * p.numel : 2 * p.numel + 8 * ((p.numel + 255) / 256);
        states.push_back(tl.allocate(share(bytes, states_sharded), cat::optimizer_states));
      }
    }
    if (config.optimizer == optimizer_kind::adafactor) {
      // transformers.optimization.Adafactor (beta1 None: no first moment): fp32 factored
      // second moments, a row and a column vector for matrices, a full vector for 1-D
      // tensors; created at the first step.
      if (states.empty()) {
        for (const auto& p : params) {
          const std::uint64_t elems = p.matrix ? p.numel / p.cols + p.cols : p.numel;
          states.push_back(tl.allocate(4 * elems, cat::optimizer_states));
        }
      }
      // It steps one parameter at a time: the fp32 gradient (a copy when it is 16-bit),
      // grad^2 + eps, the factored estimate replacing it, and an fp32 copy of a 16-bit
      // parameter are alive together.
      for (const auto& p : params) {
        std::vector<int> temps;
        if (p.bytes != 4) temps.push_back(tl.allocate(4 * p.numel, cat::optimizer_temporaries));
        temps.push_back(tl.allocate(4 * p.numel, cat::optimizer_temporaries));
        temps.push_back(tl.allocate(4 * p.numel, cat::optimizer_temporaries));
        if (p.bytes != 4) temps.push_back(tl.allocate(4 * p.numel, cat::optimizer_temporaries));
        for (int id : temps) tl.free(id);
      }
    }
    // torchtune's recipes fuse; so does torchtitan since 2025 (optimizer.implementation
    // "fused"; its December 2024 code ran foreach, optimizer.fused false). torch < 2.0 loops.
    const adamw_implementation impl = config.adamw_impl.value_or(
        config.framework == framework_profile::torchtune || torchtitan
            ? adamw_implementation::fused
            : (config.software.adamw_loops_by_default() ? adamw_implementation::for_loop
                                                        : adamw_implementation::foreach));
    if (config.optimizer == optimizer_kind::adamw && !in_place_adam &&
        impl != adamw_implementation::fused) {
      // (The fused kernel, which torchtune's recipes use, has no such temporaries, nor do the
      // engines' in-place kernels.) torch.optim's foreach implementation (default on CUDA)
      // materialises sqrt(exp_avg_sq) for every parameter at once (torch/optim/adamw.py
      // _multi_tensor_adamw: torch._foreach_sqrt); the for-loop one (_single_tensor_adamw) one
      // parameter's at a time, as exp_avg_sq.sqrt() and its quotient by the bias correction,
      // alive together.
      std::vector<int> temps;
      for (const auto& p : params) {
        const std::uint64_t bytes = share(p.numel * state_bytes(p.bytes), states_sharded);
        temps.push_back(tl.allocate(bytes, cat::optimizer_temporaries));
        if (impl != adamw_implementation::for_loop) continue;
        const int quotient = tl.allocate(bytes, cat::optimizer_temporaries);
        tl.free(temps.back());
        tl.free(quotient);
        temps.pop_back();
      }
      for (int id : temps) tl.free(id);
    }
    for (int id : fp32_grads) tl.free(id);
    if (grads_outlive_step) {
      grads_kept = true;
    } else {
      for (int id : grads) tl.free(id);  // zero_grad(set_to_none=True)
      grads.clear();
    }
  }
  out.peak = tl.peak();
  out.peak_reserved = tl.peak_reserved();
  if (config.timeline_samples > 0) out.timeline = tl.series(config.timeline_samples);
  return out;
}
}  // namespace

}  // namespace gpumem
