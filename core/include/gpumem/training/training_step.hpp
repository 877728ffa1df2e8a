#pragma once
// The detailed estimator for a training step on one GPU: what plain PyTorch + transformers (+
// PEFT) allocate, tensor by tensor and in order, replayed through the caching allocator
// (memory_timeline). See docs/methodology.md for every term and its source.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gpumem/model/attention_kernel.hpp"
#include "gpumem/model/model_spec.hpp"
#include "gpumem/parallel/data_parallel.hpp"
#include "gpumem/parallel/model_split.hpp"
#include "gpumem/result.hpp"
#include "gpumem/runtime/component.hpp"
#include "gpumem/runtime/hardware.hpp"
#include "gpumem/runtime/memory_timeline.hpp"
#include "gpumem/runtime/software_stack.hpp"

namespace gpumem {

// Full fine-tuning; LoRA; litgpt's LLaMA-Adapter (litgpt/adapter.py: per block from
// adapter_start_layer, a learned prompt of adapter_prompt_length vectors attended through the
// block's own q/k/v projection, added with a zero-initialised gate per head) and LLaMA-Adapter v2
// (litgpt/adapter_v2.py: also a trainable scale and bias on every linear's output, the LM head's
// included, and trainable norms).
// What trains: everything; LoRA (or DoRA) adapters; PEFT's IA3 scaling vectors; PEFT's prompt
// tuning (virtual token embeddings prepended to every sequence); litgpt's LLaMA-Adapter prompts.
enum class finetune_kind { full, lora, ia3, prompt_tuning, llama_adapter_v1, llama_adapter_v2 };
// fp32; autocast mixed precision (fp32 trainable weights and states, 16-bit matmuls); pure
// 16-bit (weights, gradients and states all 16-bit, no master copy).
enum class compute_precision { fp32, amp_fp16, amp_bf16, pure_fp16, pure_bf16 };
enum class optimizer_kind { adamw, adamw_8bit, adafactor, sgd, sgd_momentum, none };
// torch.optim AdamW's implementation: foreach (multi-tensor, PyTorch's default on CUDA), a
// Python loop over the parameters (foreach=False), or the fused kernel (fused=True).
enum class adamw_implementation { foreach, for_loop, fused };
// How a transformers run takes its loss: the model's own from labels (a causal LM's
// ForCausalLMLoss, transformers >= 4.46: the logits upcast to fp32, the labels shifted rather
// than the logits), or a plain cross-entropy on the logits in their own dtype — a causal LM's
// shifted first (`logits[..., :-1, :].contiguous()`), as Lightning modules, hand-written loops
// and transformers' GPT-2 before 4.46 do; autocast still runs it in fp32 (cross_entropy is on its
// fp32 list: PyTorch's AMP op reference), a 16-bit engine does not.
enum class loss_kind { model, plain_cross_entropy };
// How a frozen LoRA base stores its block linear layers: 16/32-bit, or bitsandbytes 4-bit
// (QLoRA) with fp32 absmax per 64-weight block, or with those absmax quantised to 8 bits and a
// second fp32 absmax per 256 of them (double quantisation), or bitsandbytes LLM.int8 (int8
// weights and an fp32 absmax per output row: PEFT's 8-bit LoRA, load_in_8bit).
enum class base_quantization { none, nf4, nf4_double_quant, int8 };

// The method's name in requests (single, ddp, zero1, zero2, zero3, gemini, fsdp_full_shard,
// fsdp_shard_grad_op), if it is one.
std::optional<data_parallel> data_parallel_named(const std::string& name);
// Whether the method shards the parameters themselves (ZeRO-3, Gemini, FSDP), gathering each
// block for its use.
bool shards_parameters(data_parallel dp);

// The fine-tuning kind named in requests and validation points: full, lora, dora (LoRA with
// `dora` set), llama_adapter_v1, llama_adapter_v2.
std::optional<finetune_kind> finetune_kind_named(const std::string& name);
// The precision's name in requests and validation points (fp32, amp_fp16, amp_bf16, pure_fp16,
// pure_bf16), if it is one.
std::optional<compute_precision> compute_precision_named(const std::string& name);
// Autocast over fp32 weights (AMP fp16 or bf16).
bool is_amp(compute_precision c);
// Bytes of the 16-bit or 32-bit compute dtype: what matmul outputs and saved 16-bit inputs hold.
std::uint64_t compute_bytes(compute_precision c);

// Context parallelism: each sequence split over cp ranks along its tokens. Ring attention
// (Megatron-LM / TransformerEngine, torchtitan) keeps each rank's queries and passes the K/V
// chunks from rank to rank; DeepSpeed-Ulysses all-to-alls q/k/v so each rank attends over the
// whole sequence with heads / cp of the heads (deepspeed/sequence/layer.py).
enum class context_parallel_kind { ring, ulysses };
// The kind's name in requests (ring, ulysses), and back.
std::optional<context_parallel_kind> context_parallel_kind_named(const std::string& name);
const char* context_parallel_kind_name(context_parallel_kind kind);

// Whose training code runs the step, where it differs in what it keeps (docs/methodology.md):
// transformers + PEFT in a plain loop, HF Trainer or accelerate (the default); litgpt; torchtune;
// unsloth; torchtitan (PyTorch's pre-training trainer: its own Llama, FSDP2).
enum class framework_profile { transformers, litgpt, torchtune, unsloth, torchtitan };

// Where a kind of training state lives: on the GPU, in host RAM, or on NVMe (staged through
// pinned host buffers).
enum class offload_target { none, cpu, nvme };

// What a run offloads (DeepSpeed offload_optimizer / offload_param, FSDP CPUOffload,
// Colossal-AI's cpu placement, SSDTrain/Fuyou activation swapping):
// - optimizer: the states, the fp32 master weights and the step itself (CPU Adam) on the host;
//   the gradients then go to the host as well;
// - params: the (sharded) parameters on the host, gathered to the GPU block by block (needs
//   ZeRO-3, FSDP or Gemini);
// - gradients: gradient shards copied to the host once reduced;
// - activations: the tensors saved for backward (the block inputs under checkpointing) moved
//   out two blocks behind the forward and brought back before their backward.
// "none", "cpu" or "nvme", as requests and validation points name them.
std::optional<offload_target> offload_target_named(const std::string& name);
const char* offload_target_name(offload_target target);

struct offload_placement {
  offload_target optimizer = offload_target::none;
  offload_target params = offload_target::none;
  offload_target gradients = offload_target::none;
  offload_target activations = offload_target::none;
  bool any() const {
    return optimizer != offload_target::none || params != offload_target::none ||
           gradients != offload_target::none || activations != offload_target::none;
  }
};

struct training_config {
  finetune_kind finetune = finetune_kind::full;
  std::uint64_t lora_rank = 8;
  // LoRA's dropout on each adapter's input (PEFT lora_dropout, litgpt and torchtune
  // lora_dropout), in [0, 1); unset: the framework's default (lora_dropout_of).
  std::optional<double> lora_dropout;
  // LoRA's, or IA3's, target modules: names (q_proj, ...) or "all-linear"; IA3 scales the
  // outputs of its targets, and the inputs of MLP output projections (PEFT's feedforward
  // modules, down_proj).
  std::vector<std::string> lora_targets;
  // PEFT modules_to_save: the token embedding and/or the LM head train as full copies made beside
  // the frozen originals (ModulesToSaveWrapper), e.g. when new tokens were added.
  bool save_embeddings = false;
  bool save_lm_head = false;
  // DoRA (PEFT use_dora): each adapted linear also trains a magnitude vector and renormalises
  // its weight in every forward.
  bool dora = false;
  // LLaMA-Adapter: litgpt adapter.py Config defaults.
  std::uint64_t adapter_prompt_length = 10;
  // Prompt tuning: PEFT's num_virtual_tokens, prepended to each sequence (the model runs and the
  // loss spans seq_len + virtual_tokens positions).
  std::uint64_t virtual_tokens = 0;
  std::uint64_t adapter_start_layer = 2;
  compute_precision compute = compute_precision::amp_bf16;
  std::uint64_t base_weight_bytes = 0;  // frozen LoRA base: 2 (16-bit) or 4; 0: from compute
  base_quantization quantization = base_quantization::none;  // LoRA only
  // Whether a transformers QLoRA run prepares its unsharded 4-bit model with PEFT's
  // prepare_model_for_kbit_training (TRL's SFTTrainer and the QLoRA recipes do): fp32 norms,
  // and the activations they feed in fp32 (docs/methodology.md).
  bool kbit_preparation = true;
  std::uint64_t optimizer_state_bytes = 0;  // 0: the parameters' dtype (torch.optim)
  optimizer_kind optimizer = optimizer_kind::adamw;
  // torch.optim AdamW's implementation; unset: the framework's (torchtune's recipes fuse, the
  // rest take PyTorch's foreach default).
  std::optional<adamw_implementation> adamw_impl;
  bool optimizer_step = true;  // false: forward and backward only
  std::uint64_t micro_batch = 1;
  std::uint64_t seq_len = 512;
  // Encoder-decoders (T5): the decoder's tokens per sequence, the labels' padded length; 0: as
  // many as seq_len, the encoder's.
  std::uint64_t target_len = 0;
  bool grad_ckpt = false;
  // Selective activation recomputation (Korthikanti et al. 2022; Megatron-LM
  // --recompute-granularity selective): the attention core's tensors as large as the scores are
  // recomputed in backward, the rest kept. Changes nothing for fused attention kernels, which
  // keep no scores. Under torchtitan: its per-op policy (selective_ac_option "op"), which
  // checkpoints every block and keeps only the outputs of its attention kernel and of every
  // other matmul.
  bool selective_recompute = false;
  // Micro-batches per optimizer step (gradient accumulation); gradients of the earlier ones
  // stay alive through the next forward.
  std::uint64_t grad_accumulation = 1;
  attention_kernel attention = attention_kernel::sdpa;
  loss_kind loss = loss_kind::model;  // transformers only (litgpt, torchtune, unsloth chunk theirs)
  // transformers only: the training loop holds the model's output, its logits, from one forward
  // until the next returns (`outputs = model(**batch)`, as accelerate's, PEFT's and
  // DeepSpeed-Chat's loops write it); the HF Trainer and Lightning drop it before the backward.
  bool keep_outputs = false;
  // Full fine-tuning: the stored parameter dtype (0: the method's own, full_model_weight_bytes).
  // A 16-bit model under AMP (DeepSpeed, Colossal-AI, Megatron) gets fp32 master weights.
  std::uint64_t full_weight_bytes = 0;
  framework_profile framework = framework_profile::transformers;
  data_parallel sharding = data_parallel::none;
  // The ranks ZeRO / FSDP / Gemini shard the model states over: the data-parallel ranks times
  // the context-parallel ones (DeepSpeed's sequence-data-parallel group, Megatron-LM's
  // data-parallel-with-context-parallel group), or one node's under hybrid sharding.
  std::uint64_t dp_degree = 1;
  // Context parallelism over cp_degree ranks (estimate_training_step checks the split).
  std::uint64_t cp_degree = 1;
  context_parallel_kind cp_kind = context_parallel_kind::ring;
  // Megatron-style tensor parallelism over tp_degree ranks (estimate_training_step checks the
  // model divides), optionally with sequence parallelism for the hidden-width activations.
  std::uint64_t tp_degree = 1;
  bool sequence_parallel = false;
  // Pipeline parallelism over pp_degree stages with the 1F1B schedule: this replay is stage
  // pp_stage, which holds the activations of min(pp_degree - pp_stage, pp_micro_batches)
  // micro-batches at once (0: as many micro-batches as stages).
  std::uint64_t pp_degree = 1;
  std::uint64_t pp_stage = 0;
  std::uint64_t pp_micro_batches = 0;
  // ZeRO-2/3's gradient reduce bucket in elements (DeepSpeed reduce_bucket_size, default 5e8:
  // deepspeed/runtime/zero/config.py; Lightning's DeepSpeedStrategy 2e8; Colossal-AI
  // LowLevelZero 12 Mi); 0: none.
  std::uint64_t reduce_bucket_elements = 500000000;
  // DeepSpeed ZeRO-3: parameters gathered ahead of their use, in elements
  // (stage3_prefetch_bucket_size, default 5e7), and the size up to which a parameter stays
  // gathered for good (stage3_param_persistence_threshold, default 1e5).
  std::uint64_t prefetch_bucket_elements = 50000000;
  std::uint64_t persistence_threshold = 100000;
  offload_placement offload;
  // The CUDA context's device memory, beside PyTorch's pool (unset: the GPU architecture's
  // default, default_cuda_context_bytes): what the allocator's segments cannot take.
  std::optional<std::uint64_t> cuda_context_bytes;
  // The torch, bitsandbytes and PEFT releases, where one changes what the step keeps.
  software_stack software;
  // Samples of the step's memory over time to report (0: none; options.timeline).
  std::size_t timeline_samples = 0;
};

// The AdamW implementation a run steps with: the request's, else its framework's default (torch
// 1.x loops over the parameters).
adamw_implementation resolved_adamw(const training_config& config);

// An encoder-decoder's decoder tokens per sequence: target_len, else as many as seq_len.
std::uint64_t decoder_len(const training_config& config);

// LoRA's dropout: the stated one, else the framework's default (litgpt's finetune/lora.py 0.05;
// PEFT's LoraConfig and torchtune's LoRA builders 0).
double lora_dropout_of(const training_config& config);

// The name of `config`'s fine-tuning kind (dora for DoRA).
const char* finetune_name(const training_config& config);

// PEFT's default target modules for Llama (TRANSFORMERS_MODELS_TO_LORA_TARGET_MODULES_MAPPING and
// its IA3 counterpart), read by role in other families: q_proj and v_proj for LoRA; k_proj,
// v_proj and down_proj for IA3. Empty for the other kinds.
std::vector<std::string> peft_default_targets(finetune_kind kind);

// Whether a PEFT module name (a LoRA target or a modules_to_save entry) names the model's token
// embedding: embed_tokens by role, or the model's own module name for it (wte, word_embeddings).
bool names_token_embedding(const model_spec& spec, const std::string& name);

struct training_estimate {
  timeline_peak peak;  // allocated peak, its phase and what was alive
  std::uint64_t peak_reserved = 0;
  // Device memory outside PyTorch's allocator: paged (unified-memory) optimizer states.
  std::uint64_t unmanaged_bytes = 0;
  // NCCL's buffers for the job's communicators (runtime/nccl_buffers.hpp), in device_used.
  std::uint64_t nccl_bytes = 0;
  std::uint64_t trainable_params = 0;
  // Bytes the GPU moved out under `offload` at the step's largest (offload.cpp sizes the host
  // side from these): the saved activations of all blocks.
  std::uint64_t saved_activation_bytes = 0;
  // memory_timeline's activations_high and peak_with_activations (for batch_growth_of).
  std::uint64_t activations_high = 0;
  std::uint64_t peak_with_activations = 0;
  std::vector<std::string> notes;
  timeline_series timeline;  // when config.timeline_samples > 0
};

// The largest micro-batch of `seq_len`-token sequences whose training step stays below 2^53
// bytes by a rough upper bound of every tensor (weights and states at 40 bytes a parameter, 64
// bytes per token, layer and widest feature, 32 per logit, and with `quadratic_attention` 16
// per attention score), so that no byte count wraps or loses exactness; 0 when not even one
// sequence does.
std::uint64_t largest_sized_micro_batch(const model_spec& spec, std::uint64_t seq_len,
                                        bool quadratic_attention);
// LoRA or IA3 targets: fails (request.invalid_value) when none names a linear module of the model,
// as PEFT does; the ones that match nothing are added to `unmatched`.
std::optional<error> check_adapter_targets(const model_spec& spec, const training_config& config,
                                           std::vector<std::string>& unmatched);
// request.too_large beyond largest_sized_micro_batch, naming `length` (seq_len, or an
// encoder-decoder's target_len) when one sequence is too long.
std::optional<error> check_training_size(const model_spec& spec, std::uint64_t micro_batch,
                                         std::uint64_t seq_len, bool quadratic_attention,
                                         const std::string& length = "seq_len");
// check_training_size for every length a run's blocks see: `positions` tokens a sequence
// (seq_len, and prompt tuning's virtual tokens), and an encoder-decoder's target_len, whose
// cross-attention scores the longer of the two bounds. Scores count where the attention may
// materialise them (eager attention as kernel_run gives it, or fp32, which SDPA can send to its
// math kernel).
std::optional<error> check_training_lengths(const model_spec& spec, const training_config& config,
                                            std::uint64_t micro_batch, std::uint64_t positions);

// Fails with parallel.invalid_degree when tp_degree does not divide the heads, KV heads and MLP
// width or pp_degree exceeds the layers, and with request.invalid_value for what a model's
// profile does not run (T5 or DeepSeek's latent attention outside transformers, or split by
// tensor or context parallelism).
result<training_estimate> estimate_training_step(const model_spec& spec,
                                                 const training_config& config,
                                                 const gpu_spec& gpu);
// The refusal estimate_training_step would answer, without replaying the step (nothing when
// it would replay it). The planner reuses a replay for a candidate whose step is the same on
// the GPU (an offload to NVMe instead of host RAM) once the candidate's own checks pass.
std::optional<error> training_refusal(const model_spec& spec, const training_config& config);

// Bytes per parameter of a fully fine-tuned model as it is stored on the GPU: the stated
// full_weight_bytes, else 16-bit under pure precision and under DeepSpeed ZeRO or Colossal-AI
// Gemini with mixed precision (their engines convert the module to fp16/bf16 and keep fp32
// master copies: deepspeed/runtime/engine.py _configure_distributed_model, Gemini's fp16 chunks),
// else fp32 (torch autocast over fp32 weights: DDP, FSDP, a single GPU).
std::uint64_t full_model_weight_bytes(const training_config& config);
// Bytes a quantised base stores for one of `tp` ranks' part of a weight matrix, as inference
// stores the same format (quantized_matrix_bytes: bitsandbytes 4-bit codes with their absmax per
// 64 weights, double-quantised or not; LLM.int8 codes with an fp32 absmax per output row).
std::uint64_t quantized_weight_bytes(const tensor_spec& tensor, std::uint64_t tp,
                                     base_quantization quantization);

// Bytes of block inputs unsloth's gradient checkpointing copies to pinned host memory, one
// buffer per block (unsloth_zoo/gradient_checkpointing.py CPU_BUFFERS; every block's on the
// first step, before it knows which is last); 0 when it keeps them on the GPU.
std::uint64_t unsloth_host_checkpoint_bytes(const model_spec& spec, const training_config& config);

// What nvidia-smi shows for the process at the step's peak: the allocator's reserved pool,
// paged optimizer states, the CUDA context and the cuBLAS kernels.
std::uint64_t device_used_bytes(const training_estimate& estimate,
                                std::uint64_t cuda_context_bytes);

// Where a search for the largest micro-batch that fits starts (plan/boundary_search.hpp), judged
// from a replay at one sequence whose footprint is `footprint` bytes: the part of the footprint
// that grows with the micro-batch (the footprint less how far the step's peak lies above the most
// allocated while activations were alive: a full fine-tuning's peak at one sequence is its
// optimizer step, which stays as the micro-batch grows until the forward and backward pass it),
// and what one more sequence is expected to add (the most activations and logits alive at once;
// the whole footprint when there were none).
struct batch_growth {
  std::uint64_t growing_bytes = 0;
  std::uint64_t per_sequence = 0;
};
batch_growth batch_growth_of(const training_estimate& at_one_sequence, std::uint64_t footprint);

// A replay's peak in `metric`: "allocated", "reserved" or (anything else) "device_used".
std::uint64_t peak_in_metric(const std::string& metric, std::uint64_t allocated,
                             std::uint64_t reserved, std::uint64_t device_used);

// The peak of any replay by component as reported for `metric` ("allocated", "reserved" or
// "device_used"): what was alive, the allocator's cache, then paged (unified-memory) bytes, the
// CUDA context and the CUDA libraries. They sum to the peak in that metric.
std::vector<component> replay_components(const timeline_peak& peak, std::uint64_t peak_reserved,
                                         std::uint64_t paged_bytes, const std::string& metric,
                                         std::uint64_t cuda_context_bytes);

// The peak by component as reported for `metric` ("allocated", "reserved" or "device_used"):
// what was alive, then the allocator's cache, then what lies outside the allocator. They sum to
// the peak in that metric.
std::vector<component> peak_components(const training_estimate& estimate, const std::string& metric,
                                       std::uint64_t cuda_context_bytes);

}  // namespace gpumem
