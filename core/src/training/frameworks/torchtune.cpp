// torchtune: PyTorch's recipes (recipes/*.py with configs/*.yaml).
#include "training/framework.hpp"

namespace gpumem {

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
    return t;
  }();
  return traits;
}

}  // namespace gpumem
