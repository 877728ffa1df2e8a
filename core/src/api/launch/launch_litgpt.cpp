// litgpt's command line: `litgpt finetune lora|qlora|full|adapter|adapter_v2 CHECKPOINT_DIR
// --flags` (litgpt 0.3: litgpt/__main__.py registers the subcommands, finetune/lora.py setup()
// takes precision, quantize, devices, the lora_* switches and train.*). Several devices run
// Lightning's FSDPStrategy over whole blocks, with every block checkpointed
// (activation_checkpointing_policy={Block}); a quantised base trains on one device only.
#include <string>
#include <vector>

#include "api/launch/launch.hpp"

namespace gpumem {

namespace {

const char* precision_flag(compute_precision p) {
  switch (p) {
    case compute_precision::pure_bf16:
      return "bf16-true";
    case compute_precision::amp_bf16:
      return "bf16-mixed";
    case compute_precision::pure_fp16:
      return "16-true";
    case compute_precision::amp_fp16:
      return "16-mixed";
    default:
      return "32-true";
  }
}

// litgpt's LoRA switches by role: the attention's query, key, value and projection, the MLP as
// a whole, the head. A target list that splits the MLP is not one of them.
std::optional<error> lora_switches(const training_config& c, std::vector<std::string>& words) {
  bool q = false, k = false, v = false, o = false, mlp = false, head = false;
  int mlp_parts = 0;
  for (const auto& t : c.lora_targets) {
    if (t == "all-linear") q = k = v = o = mlp = true, mlp_parts = 3;
    if (t == "q_proj") q = true;
    if (t == "k_proj") k = true;
    if (t == "v_proj") v = true;
    if (t == "o_proj") o = true;
    if (t == "gate_proj" || t == "up_proj" || t == "down_proj") mlp = true, ++mlp_parts;
    if (t == "lm_head") head = true;
  }
  if (mlp && mlp_parts < 3) {
    return launch_refusal("workload.lora.targets",
                          "litgpt adapts the MLP as a whole (lora_mlp): name "
                          "gate_proj, up_proj and down_proj together");
  }
  for (const auto& [flag, on] : {std::pair<const char*, bool>{"--lora_query", q},
                                 {"--lora_key", k},
                                 {"--lora_value", v},
                                 {"--lora_projection", o},
                                 {"--lora_mlp", mlp},
                                 {"--lora_head", head}}) {
    words.push_back(flag);
    words.push_back(on ? "true" : "false");
  }
  return std::nullopt;
}

const char* quantize_flag(base_quantization q) {
  switch (q) {
    case base_quantization::nf4:
      return "bnb.nf4";
    case base_quantization::nf4_double_quant:
      return "bnb.nf4-dq";
    case base_quantization::int8:
      return "bnb.int8-training";
    default:
      return nullptr;
  }
}

}  // namespace

result<launch_output> export_litgpt(const launch_setup& s) {
  const training_config& c = s.training;
  if (c.framework != framework_profile::litgpt) {
    return launch_refusal("workload.framework",
                          "a litgpt export runs litgpt's own model and loops: set "
                          "workload.framework litgpt and estimate again");
  }
  const bool several = s.cluster.gpus > 1;
  if ((several && s.method != "fsdp_full_shard") || (!several && s.method != "single")) {
    return launch_refusal("parallel.method",
                          "litgpt's finetune scripts run one device, or FSDP over "
                          "several (fsdp_full_shard)");
  }
  if (several != c.grad_ckpt || c.selective_recompute) {
    return launch_refusal("workload.grad_ckpt",
                          "litgpt checkpoints every block under FSDP and none on "
                          "one device");
  }
  if (s.parallel.offload.any())
    return launch_refusal("parallel.offload", "litgpt's FSDP does not offload");
  if (c.optimizer != optimizer_kind::adamw) {
    return launch_refusal("workload.optimizer",
                          "litgpt's finetune scripts step AdamW (PagedAdamW over a "
                          "quantised base)");
  }
  const char* sub = c.finetune == finetune_kind::full               ? "full"
                    : c.finetune == finetune_kind::lora && !c.dora  ? "lora"
                    : c.finetune == finetune_kind::llama_adapter_v1 ? "adapter"
                    : c.finetune == finetune_kind::llama_adapter_v2 ? "adapter_v2"
                                                                    : nullptr;
  if (!sub)
    return launch_refusal("workload.finetune", "litgpt fine-tunes full, LoRA or LLaMA-Adapter");
  std::vector<std::string> words = {"litgpt", "finetune", sub,
                                    "checkpoints/" + (s.model_id.empty() ? "MODEL" : s.model_id)};
  words.insert(words.end(), {"--devices", std::to_string(s.cluster.gpus)});
  const char* quantize = quantize_flag(c.quantization);
  const bool mixed =
      c.compute == compute_precision::amp_bf16 || c.compute == compute_precision::amp_fp16;
  if (c.quantization != base_quantization::none && (!quantize || several || mixed)) {
    return launch_refusal("workload.weights",
                          "litgpt quantises with bitsandbytes (nf4, nf4-dq, int8) on "
                          "one device, under a -true precision");
  }
  words.insert(words.end(), {"--precision", precision_flag(c.compute)});
  if (quantize) words.insert(words.end(), {"--quantize", quantize});
  if (c.finetune == finetune_kind::lora) {
    words.insert(words.end(), {"--lora_r", std::to_string(c.lora_rank)});
    words.insert(words.end(), {"--lora_dropout", decimal_text(lora_dropout_of(c))});
    if (auto e = lora_switches(c, words)) return *e;
  }
  words.insert(words.end(), {"--train.micro_batch_size", std::to_string(c.micro_batch),
                             "--train.global_batch_size",
                             std::to_string(c.micro_batch * c.grad_accumulation * s.cluster.gpus),
                             "--train.max_seq_length", std::to_string(c.seq_len)});
  launch_output out;
  out.command = shell_line(words);
  out.not_expressed.push_back(
      {"model", "litgpt reads its own checkpoint format: `litgpt download " +
                    (s.model_id.empty() ? std::string("MODEL") : s.model_id) +
                    "` fetches and converts it first"});
  return out;
}

}  // namespace gpumem
