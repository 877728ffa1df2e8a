#pragma once
// What a training framework does differently, as data: one profile per framework, each in a file
// of its own under training/frameworks/ with the source of every fact beside it. The step's
// replay, its checks and the block descriptions ask the profile; none tests a framework's name.
// Adding a framework: an enum value (training_step.hpp framework_profile), a file here, and its
// line in framework.cpp.

#include <optional>
#include <string>
#include <vector>

#include "gpumem/training/training_step.hpp"

namespace gpumem {

// How the LM head and the loss run after the last block (step_loss.cpp).
enum class loss_path {
  upcast_logits,   // transformers: whole logits, an fp32 upcast, fp32 log-softmax
  chunked_fp32,    // litgpt: 128-token head chunks, all cast to fp32, chunked cross-entropy
  chunked_output,  // torchtune: 8 output chunks, each upcast for its cross-entropy
  fused_chunks,    // unsloth: head and loss fused a chunk of tokens at a time
};

// Which fine-tuning a parallelism is offered with (the planner's candidates).
enum class parallel_support {
  none,
  full_fine_tuning,  // not with adapters
  any,
};

struct framework_traits {
  const char* name;  // as workload.framework names it
  loss_path loss = loss_path::upcast_logits;
  // --- Adapters and quantisation ---
  bool peft = false;  // PEFT's methods and options (IA3, prompt tuning, modules_to_save, releases)
  // Its 4-bit base is bitsandbytes' Linear4bit (MatMul4Bit), whose input-keeping follows the
  // bitsandbytes release; otherwise torchao's NF4 or the framework's own kernels.
  bool bitsandbytes_4bit = false;
  bool quantizes_lm_head = false;           // the LM head is quantised with the blocks
  bool bf16_from_fp16_quant_state = false;  // 4-bit weights quantised from fp16, run in bf16
  bool kbit_preparation = false;            // PEFT's prepare_model_for_kbit_training can run
  bool unties_lm_head = false;              // a tied head becomes a weight of its own
  double lora_dropout = 0.0;                // the LoRA dropout its recipes default to
  // --- The loop ---
  bool keeps_last_logits = false;    // the loop's variable holds them until the next forward
  bool keep_outputs_option = false;  // workload.keep_outputs can say the loop keeps `outputs`
  bool model_losses = false;         // the model's own loss wrappers and workload.loss (plain CE)
  // Full fine-tuning on one GPU steps each parameter inside backward with a paged optimizer.
  bool steps_in_backward = false;
  adamw_implementation default_adamw = adamw_implementation::foreach;
  // --- Sharding ---
  bool fsdp_no_sync = true;            // FSDP accumulation skips the reduce-scatter until the last
  bool frozen_in_flat_params = false;  // FSDP1 units mix frozen and trained tensors (LoRA)
  bool keeps_last_block_gathered = false;  // after the forward, for the backward that follows
  bool prefetches_backward = false;        // gathers the next block stepped back early
  bool flat_reduce_copy = false;           // a unit's gradients copied flat in the reduce dtype
  // --- Activations ---
  bool per_op_selective_recompute = false;  // selective_recompute keeps some ops' outputs
  bool host_checkpointing = false;          // checkpointed block inputs go to pinned host memory
  bool dequantise_buffer = false;           // one buffer per GPU for dequantised 4-bit weights
  bool own_kernels = false;                 // its own fused block kernels (block_activations)
  // Its own transformer module rather than transformers' modelling code (block_activations):
  bool fused_qkv = false;          // one q/k/v linear (its LoRA drops the input out once)
  bool fp32_norm_output = false;   // RMSNorm hands on its fp32 product when its weight trains
  bool fused_gelu = false;         // one F.gelu, keeping only its input
  bool softcap_by_hand = false;    // soft-capped attention by hand, whatever the kernel asked
  bool all_architectures = false;  // encoder-decoders, latent attention, dense-dispatch MoE
  bool torch1 = false;             // torch 1.x releases (no SDPA) are modelled under it
  // It runs transformers' modelling code as is: its attention dispatch (no SDPA path for
  // attention sinks), its masks and dtype handling.
  bool transformers_modelling = false;
  // --- Parallelism its training recipes run (what the planner offers) ---
  parallel_support tensor_parallel = parallel_support::none;
  parallel_support context_parallel = parallel_support::none;
  parallel_support pipeline_parallel = parallel_support::none;  // stages that overlap (1F1B)
  // The data-parallel methods its training recipes run, one GPU (none) included; empty: every
  // one (transformers runs them through accelerate and DeepSpeed).
  std::vector<data_parallel> data_parallel_methods;
  // ZeRO-3 can move its 4-bit base weights to host memory.
  bool offloads_4bit_params = false;
  // What its profile does not model (step_checks.cpp runs it with the other refusals).
  std::optional<error> (*refusals)(const model_spec& spec, const training_config& config) = nullptr;
};

// A bias-free Llama-style decoder: what unsloth's fast kernels and torchtitan's Llama run.
bool llama_style_decoder(const model_spec& spec);

const framework_traits& framework_of(framework_profile framework);
// "<name>'s training recipes run one GPU, fsdp_full_shard, ..." (its data_parallel_methods).
std::string data_parallel_methods_text(const framework_traits& fw);
// Why the framework's recipes do not run `dp` ("<name> runs one GPU, ...: not <method>"), or
// nothing when they do.
std::optional<std::string> data_parallel_refusal(const framework_traits& fw, data_parallel dp);
// The framework workload.framework names, if it is one.
std::optional<framework_profile> framework_named(const std::string& name);
inline const framework_traits& framework_of(const training_config& config) {
  return framework_of(config.framework);
}
// Whether `support` covers the run's fine-tuning (adapters: LoRA, QLoRA, IA3, ...).
inline bool offered(parallel_support support, const training_config& config) {
  return support == parallel_support::any ||
         (support == parallel_support::full_fine_tuning && config.finetune == finetune_kind::full);
}

const framework_traits& transformers_framework();
const framework_traits& litgpt_framework();
const framework_traits& torchtune_framework();
const framework_traits& unsloth_framework();
const framework_traits& torchtitan_framework();

}  // namespace gpumem
