// litgpt (Lightning Fabric): its own GPT module and fit loops (finetune/lora.py, adapter.py).
#include "training/framework.hpp"

namespace gpumem {

namespace {

// Its finetune scripts' FSDPStrategy keeps everything on the GPU (cpu_offload=False).
std::optional<error> litgpt_refusals(const model_spec&, const training_config& config) {
  if (!config.offload.any()) return std::nullopt;
  return error{"request.invalid_value", "parallel.offload",
               "[parallel.offload] litgpt's finetune scripts offload nothing "
               "(FSDPStrategy cpu_offload=False): none"};
}

}  // namespace

const framework_traits& litgpt_framework() {
  static const framework_traits traits = [] {
    framework_traits t;
    t.name = "litgpt";
    // GPT.forward projects in 128-token chunks (lm_head_chunk_size=128), Fabric casts the
    // outputs to fp32 (_FabricModule.forward convert_output) and chunked_cross_entropy takes
    // 128-token chunks (litgpt/utils.py).
    t.loss = loss_path::chunked_fp32;
    // --quantize bnb.nf4 runs Lightning's BitsandbytesPrecision, which converts every nn.Linear,
    // the LM head's included (lightning/fabric/plugins/precision/bitsandbytes.py), quantising
    // from fp16 weights computed in bf16.
    t.bitsandbytes_4bit = true;
    t.quantizes_lm_head = true;
    t.bf16_from_fp16_quant_state = true;
    // litgpt's GPT keeps lm_head and wte as separate weights (litgpt/model.py).
    t.unties_lm_head = true;
    // finetune/lora.py: lora_dropout 0.05.
    t.lora_dropout = 0.05;
    // The fit loop's `logits = model(...)` lives until the next forward returns.
    t.keeps_last_logits = true;
    // Lightning FSDPStrategy wraps whole blocks (auto_wrap_policy={Block}) with
    // use_orig_params=True, so a LoRA block's flat parameter mixes frozen and trained tensors.
    t.frozen_in_flat_params = true;
    // litgpt/model.py: CausalSelfAttention's one qkv linear (LoRAQKVLinear in litgpt/lora.py),
    // RMSNorm computing and returning fp32 before its weight, the MLP's GELU as one F.gelu, and
    // scaled_dot_product_attention computing soft-capped scores by hand.
    t.fused_qkv = true;
    t.fp32_norm_output = true;
    t.fused_gelu = true;
    t.softcap_by_hand = true;
    // No tensor or context parallelism: its finetune scripts shard with FSDPStrategy only
    // (litgpt/finetune/*.py; tensor parallelism is in its generate/tp.py, for inference).
    // Its finetune scripts run one device, or Lightning's FSDPStrategy over several
    // (litgpt/finetune/*.py setup: FSDPStrategy(auto_wrap_policy={Block}, cpu_offload=False)).
    t.refusals = litgpt_refusals;
    t.data_parallel_methods = {data_parallel::none, data_parallel::fsdp_full_shard};
    return t;
  }();
  return traits;
}

}  // namespace gpumem
