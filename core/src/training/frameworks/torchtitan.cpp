// torchtitan: PyTorch's pre-training and fine-tuning stack on FSDP2 (torchtitan/).
#include <algorithm>

#include "training/framework.hpp"

namespace gpumem {

namespace {
// The torchtitan profile models torchtitan's own Llama (torchtitan/models/llama3/model.py, which
// Qwen3 follows with per-head q/k norms) trained whole, one GPU or replicated (DDP) or sharded by
// FSDP2 (fully_shard), attending with SDPA or FlexAttention over the whole sequence.
std::optional<error> torchtitan_refusals(const model_spec& spec, const training_config& config) {
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
}  // namespace

const framework_traits& torchtitan_framework() {
  static const framework_traits traits = [] {
    framework_traits t;
    t.name = "torchtitan";
    // optimizer.implementation "fused" since 2025 (its December 2024 code ran foreach).
    t.default_adamw = adamw_implementation::fused;
    // parallelize.py apply_fsdp: reshard_after_forward for every block but the last.
    t.keeps_last_block_gathered = true;
    // "always follows backward_prefetch=BACKWARD_PRE" (torchtitan docs/fsdp.md).
    t.prefetches_backward = true;
    // MixedPrecisionPolicy reduce_dtype float32 (mixed_precision_reduce): each unit's gradients
    // copied into one flat reduce-scatter input (torch/distributed/fsdp/_fully_shard/
    // _fsdp_collectives.py foreach_reduce).
    t.flat_reduce_copy = true;
    // activation_checkpoint.mode "selective", selective_ac_option "op": its per-op policy
    // (torchtitan/models/llama3/parallelize.py
    // _apply_ac_to_transformer_block).
    t.per_op_selective_recompute = true;
    t.refusals = torchtitan_refusals;
    // Its 2D/3D parallelism: tensor_parallel_degree and context_parallel_degree
    // (torchtitan/config/job_config.py Parallelism).
    t.tensor_parallel = parallel_support::any;
    t.context_parallel = parallel_support::any;
    t.pipeline_parallel = parallel_support::any;  // pipeline_parallel_degree, 1F1B schedules
    // DDP (data_parallel_replicate_degree) or FSDP2 (data_parallel_shard_degree).
    t.data_parallel_methods = {data_parallel::none, data_parallel::ddp,
                               data_parallel::fsdp_full_shard, data_parallel::fsdp_shard_grad_op};
    return t;
  }();
  return traits;
}

}  // namespace gpumem
