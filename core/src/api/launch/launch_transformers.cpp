// The training script's own arguments under transformers: the model's loading
// (from_pretrained), bitsandbytes' quantisation of the base, PEFT's adapter config and the HF
// Trainer's TrainingArguments (TRL's SFTConfig takes the same). Keys as in transformers 4.46
// (training_args.py, utils/quantization_config.py) and PEFT 0.13 (tuners/lora/config.py).
#include <string>

#include "api/launch/launch.hpp"

namespace gpumem {

using json = nlohmann::ordered_json;

namespace {

const char* torch_dtype(std::uint64_t bytes, compute_precision compute) {
  if (bytes == 4) return "float32";
  const bool fp16 =
      compute == compute_precision::amp_fp16 || compute == compute_precision::pure_fp16;
  return fp16 ? "float16" : "bfloat16";
}

const char* attn_implementation(attention_kernel a) {
  if (a == attention_kernel::eager) return "eager";
  if (a == attention_kernel::flash) return "flash_attention_2";
  return "sdpa";
}

json lora_config(const training_config& c) {
  json lora = json::object();
  lora["r"] = c.lora_rank;
  lora["lora_dropout"] = lora_dropout_of(c);
  if (c.lora_targets.size() == 1 && c.lora_targets.front() == "all-linear") {
    lora["target_modules"] = "all-linear";
  } else {
    lora["target_modules"] = c.lora_targets;
  }
  json saved = json::array();
  if (c.save_embeddings) saved.push_back("embed_tokens");
  if (c.save_lm_head) saved.push_back("lm_head");
  if (!saved.empty()) lora["modules_to_save"] = std::move(saved);
  if (c.dora) lora["use_dora"] = true;
  lora["task_type"] = "CAUSAL_LM";
  return lora;
}

json bitsandbytes_config(const training_config& c) {
  if (c.quantization == base_quantization::int8) return {{"load_in_8bit", true}};
  json q = json::object();
  q["load_in_4bit"] = true;
  q["bnb_4bit_quant_type"] = "nf4";
  q["bnb_4bit_use_double_quant"] = c.quantization == base_quantization::nf4_double_quant;
  q["bnb_4bit_compute_dtype"] = torch_dtype(2, c.compute);
  return q;
}

}  // namespace

result<launch_output> export_transformers(const launch_setup& s) {
  const training_config& c = s.training;
  if (c.framework != framework_profile::transformers) {
    return launch_refusal("workload.framework",
                          "these are transformers' arguments; this setup runs "
                          "another framework");
  }
  if (s.parallel.tp > 1 || s.parallel.cp > 1 || s.parallel.pp > 1 || s.method == "gemini") {
    return launch_refusal("parallel.method",
                          "the HF Trainer runs data parallelism, ZeRO and FSDP; " + s.method +
                              " with these degrees needs another framework");
  }
  if (c.finetune != finetune_kind::full && c.finetune != finetune_kind::lora) {
    return launch_refusal("workload.finetune",
                          "written for full fine-tuning, LoRA and DoRA so far");
  }
  auto optim = trainer_optim(c);
  if (!optim.ok()) return optim.failure();
  json content = json::object();
  json load = json::object();
  // The stored dtype the estimate assumed (step_setup.cpp): a full model's, or the frozen base's
  // (16-bit unless compute is fp32).
  const std::uint64_t base =
      c.base_weight_bytes ? c.base_weight_bytes : (c.compute == compute_precision::fp32 ? 4 : 2);
  load["torch_dtype"] =
      torch_dtype(c.finetune == finetune_kind::full ? full_model_weight_bytes(c) : base, c.compute);
  load["attn_implementation"] = attn_implementation(c.attention);
  if (c.quantization != base_quantization::none) {
    load["quantization_config"] = "BitsAndBytesConfig";
    content["BitsAndBytesConfig"] = bitsandbytes_config(c);
  }
  content["AutoModelForCausalLM.from_pretrained"] = std::move(load);
  if (c.finetune == finetune_kind::lora) content["LoraConfig"] = lora_config(c);
  json args = json::object();
  args["per_device_train_batch_size"] = c.micro_batch;
  args["gradient_accumulation_steps"] = c.grad_accumulation;
  if (c.compute == compute_precision::amp_bf16) args["bf16"] = true;
  if (c.compute == compute_precision::amp_fp16) args["fp16"] = true;
  const bool fsdp = s.method.rfind("fsdp_", 0) == 0;
  if (c.grad_ckpt && !fsdp) args["gradient_checkpointing"] = true;
  args["optim"] = optim.value();
  const data_parallel d = s.parallel.sharding;
  if (d == data_parallel::zero1 || d == data_parallel::zero2 || d == data_parallel::zero3) {
    args["deepspeed"] = "ds_config.json";  // the DeepSpeed export
  }
  if (fsdp) {
    std::string how = fsdp_strategy(s.method);
    if (s.parallel.offload.params == offload_target::cpu) how += " offload";
    args["fsdp"] = how + " auto_wrap";
    args["fsdp_config"] = {{"activation_checkpointing", c.grad_ckpt}};
  }
  content["TrainingArguments"] = std::move(args);
  launch_output out;
  out.files.push_back({"train_args.py", "python", std::move(content)});
  if (c.selective_recompute) {
    out.not_expressed.push_back({"workload.grad_ckpt",
                                 "transformers checkpoints whole blocks; "
                                 "selective recomputation is Megatron-LM's "
                                 "and torchtitan's"});
  }
  return out;
}

}  // namespace gpumem
