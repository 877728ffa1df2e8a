// torchtune: PyTorch's recipes (recipes/*.py with configs/*.yaml).
#include "training/framework.hpp"

namespace gpumem {

namespace {

// Its offloads: fsdp_cpu_offload moves parameters, gradients and the optimizer step to the host
// together (FSDP2's CPUOffloadPolicy), enable_activation_offloading the saved activations
// (torchtune/training/_activation_offloading.py); nothing goes to NVMe.
std::optional<error> torchtune_refusals(const model_spec&, const training_config& config) {
  const offload_placement& o = config.offload;
  const auto cpu = offload_target::cpu;
  const auto none = offload_target::none;
  const bool states_on_host = o.params == cpu && o.gradients == cpu && o.optimizer == cpu;
  const bool states_here = o.params == none && o.gradients == none && o.optimizer == none;
  const bool fsdp = config.sharding == data_parallel::fsdp_full_shard ||
                    config.sharding == data_parallel::fsdp_shard_grad_op;
  if ((states_on_host && fsdp) || states_here) {
    if (o.activations != offload_target::nvme) return std::nullopt;
  }
  return error{"request.invalid_value", "parallel.offload",
               "[parallel.offload] torchtune offloads parameters, gradients and optimizer states "
               "together under FSDP (fsdp_cpu_offload) and activations to the host "
               "(enable_activation_offloading), never to NVMe"};
}

}  // namespace

const framework_traits& torchtune_framework() {
  static const framework_traits traits = [] {
    framework_traits t;
    t.name = "torchtune";
    // CEWithChunkedOutputLoss: 8 output chunks, each upcast for its cross-entropy
    // (torchtune/modules/loss/ce_chunked_output_loss.py).
    t.loss = loss_path::chunked_output;
    // Its QLoRA runs torchao's NF4Tensor (LinearNF4 saves the weight alone).
    t.bitsandbytes_4bit = false;
    // full_finetune_single_device.py: optimizer_in_bwd with a paged bitsandbytes optimizer.
    t.steps_in_backward = true;
    // Its recipes build AdamW with fused=True.
    t.default_adamw = adamw_implementation::fused;
    // Its recipes call backward() on every micro-batch without no_sync.
    t.fsdp_no_sync = false;
    // recipes/full_finetune_distributed.py: tensor_parallel_dim (torchtune 0.6); its LoRA
    // recipes and every recipe's context are data-parallel only.
    t.tensor_parallel = parallel_support::full_fine_tuning;
    // Its *_single_device recipes run one device, its *_distributed ones FSDP2's fully_shard,
    // resharding after forward unless fsdp_reshard_after_forward is False
    // (recipes/*_distributed.py, torchtune/training/_distributed.py shard_model, 0.6.1).
    t.refusals = torchtune_refusals;
    t.data_parallel_methods = {data_parallel::none, data_parallel::fsdp_full_shard,
                               data_parallel::fsdp_shard_grad_op};
    return t;
  }();
  return traits;
}

}  // namespace gpumem
