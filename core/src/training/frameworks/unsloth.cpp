// unsloth: its own Triton kernels and loss around transformers' models.
#include <algorithm>

#include "training/adapter_targets.hpp"
#include "training/framework.hpp"

namespace gpumem {

namespace {
// The unsloth profile models unsloth's fast path: LoRA (on a 16-bit or 4-bit base) with
// adapters on every block linear, its default (unsloth/models/llama.py get_peft_model patches
// the q/k/v, o and MLP forwards with LoRA_QKV, LoRA_W and LoRA_MLP only then, and only for
// bias-free Llama-style blocks), in 16-bit autocast, on one GPU or under DDP.
std::optional<error> unsloth_refusals(const model_spec& spec, const training_config& config) {
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
}  // namespace

const framework_traits& unsloth_framework() {
  static const framework_traits traits = [] {
    framework_traits t;
    t.name = "unsloth";
    // UnslothFusedLoss: the head and cross-entropy a chunk of tokens at a time
    // (unsloth_zoo/fused_losses/cross_entropy_loss.py).
    t.loss = loss_path::fused_chunks;
    // Its own 4-bit kernels dequantise into per-GPU buffers (unsloth/kernels/utils.py
    // WEIGHT_BUFFERS, ABSMAX_BUFFERS).
    t.dequantise_buffer = true;
    // UnslothCheckpointFunction copies block inputs to pinned host memory
    // (unsloth_zoo/gradient_checkpointing.py).
    t.host_checkpointing = true;
    // Fast_RMS_Layernorm, fast_lora and its RoPE and cross-entropy kernels.
    t.own_kernels = true;
    t.refusals = unsloth_refusals;
    // One GPU, or DDP (its refusals below say the rest).
    t.data_parallel_methods = {data_parallel::none, data_parallel::ddp};
    return t;
  }();
  return traits;
}

}  // namespace gpumem
