// axolotl's YAML config, written and read back. Keys as axolotl reads them (its config reference,
// docs/config.qmd, axolotl 0.6; the QLoRA base as src/axolotl/utils/models.py builds it: NF4 with
// double quantisation, compute in torch_dtype; bnb_config_kwargs over it). Every sequence is
// padded to sequence_len
// (pad_to_sequence_len), as the estimate assumes.
#include <string>

#include "api/launch/launch.hpp"

namespace gpumem {

using json = nlohmann::ordered_json;

namespace {

// The precision keys: under axolotl bf16/fp16 also load the model in that dtype, so a fully
// trained model trains in 16 bits (pure), unless DeepSpeed keeps fp32 masters (amp under ZeRO).
std::optional<error> precision(const launch_setup& s, json& config) {
  const training_config& c = s.training;
  const bool full = c.finetune == finetune_kind::full;
  const bool zero = zero_sharding(s.parallel.sharding);
  const bool bf16 =
      c.compute == compute_precision::amp_bf16 || c.compute == compute_precision::pure_bf16;
  const bool fp16 =
      c.compute == compute_precision::amp_fp16 || c.compute == compute_precision::pure_fp16;
  const bool pure =
      c.compute == compute_precision::pure_bf16 || c.compute == compute_precision::pure_fp16;
  if (full && !zero && (bf16 || fp16) && !pure) {
    return launch_refusal("workload.compute",
                          "axolotl's bf16/fp16 load a fully trained model in 16 bits "
                          "(pure_bf16, pure_fp16 here); autocast over fp32 weights is "
                          "not one of its settings");
  }
  if ((!full || zero) && pure) {
    return launch_refusal("workload.compute",
                          "axolotl keeps fp32 adapters (and DeepSpeed fp32 masters): "
                          "pure 16-bit is not one of its settings here");
  }
  config["bf16"] = bf16;
  config["fp16"] = fp16;
  return std::nullopt;
}

void adapter_keys(const training_config& c, json& config) {
  if (c.finetune == finetune_kind::full) return;
  const bool nf4 = c.quantization == base_quantization::nf4_double_quant ||
                   c.quantization == base_quantization::nf4;
  config["adapter"] = nf4 ? "qlora" : "lora";
  // axolotl's QLoRA quantises with double quantisation; its bnb_config_kwargs (axolotl 0.4.1's
  // config schema) override that for plain NF4.
  if (c.quantization == base_quantization::nf4) {
    config["bnb_config_kwargs"] = {{"bnb_4bit_use_double_quant", false}};
  }
  config["lora_r"] = c.lora_rank;
  config["lora_dropout"] = lora_dropout_of(c);
  if (c.lora_targets.size() == 1 && c.lora_targets.front() == "all-linear") {
    config["lora_target_linear"] = true;
  } else {
    config["lora_target_modules"] = c.lora_targets;
  }
  json saved = json::array();
  if (c.save_embeddings) saved.push_back("embed_tokens");
  if (c.save_lm_head) saved.push_back("lm_head");
  if (!saved.empty()) config["lora_modules_to_save"] = std::move(saved);
  if (c.dora) config["peft_use_dora"] = true;
}

}  // namespace

result<launch_output> export_axolotl(const launch_setup& s) {
  const training_config& c = s.training;
  if (c.framework != framework_profile::transformers) {
    return launch_refusal("workload.framework",
                          "axolotl runs transformers models; this setup runs "
                          "another framework");
  }
  if (s.parallel.tp > 1 || s.parallel.cp > 1 || s.parallel.pp > 1 || s.method == "gemini") {
    return launch_refusal("parallel.method",
                          "axolotl runs data parallelism, ZeRO and FSDP here, not " + s.method +
                              " with these degrees");
  }
  if (c.finetune != finetune_kind::full && c.finetune != finetune_kind::lora) {
    return launch_refusal("workload.finetune", "axolotl's adapters here: LoRA, QLoRA, DoRA");
  }
  if (s.parallel.offload.activations != offload_target::none) {
    return launch_refusal("parallel.offload.activations",
                          "axolotl does not move saved activations");
  }
  auto optimizer = trainer_optim(c);  // axolotl hands its optimizer to TrainingArguments
  if (!optimizer.ok()) return optimizer.failure();
  json config = json::object();
  config["base_model"] = s.model_id.empty() ? "MODEL_ID" : s.model_id;
  config["load_in_8bit"] = c.quantization == base_quantization::int8;
  config["load_in_4bit"] = c.quantization == base_quantization::nf4_double_quant ||
                           c.quantization == base_quantization::nf4;
  adapter_keys(c, config);
  // A placeholder: the user's data.
  config["datasets"] = json::array({{{"path", "DATASET"}, {"type", "alpaca"}}});
  config["output_dir"] = "./out";
  config["sequence_len"] = c.seq_len;
  config["sample_packing"] = false;
  config["pad_to_sequence_len"] = true;
  config["micro_batch_size"] = c.micro_batch;
  config["gradient_accumulation_steps"] = c.grad_accumulation;
  config["optimizer"] = optimizer.value();
  if (auto e = precision(s, config)) return *e;
  const bool fsdp = s.method.rfind("fsdp_", 0) == 0;
  config["gradient_checkpointing"] = c.grad_ckpt && !fsdp;
  if (c.attention == attention_kernel::flash) config["flash_attention"] = true;
  if (c.attention == attention_kernel::sdpa) config["sdp_attention"] = true;
  if (zero_sharding(s.parallel.sharding))
    config["deepspeed"] = "ds_config.json";  // DeepSpeed's export
  if (fsdp) {
    json modes = {fsdp_strategy(s.method), "auto_wrap"};
    const auto host = fsdp_host_offload(s.parallel.offload);
    if (!host.ok()) return host.failure();
    if (host.value()) modes.push_back("offload");
    config["fsdp"] = std::move(modes);
    config["fsdp_config"] = {{"fsdp_offload_params", host.value()},
                             {"fsdp_auto_wrap_policy", "TRANSFORMER_BASED_WRAP"},
                             {"fsdp_state_dict_type", "SHARDED_STATE_DICT"},
                             {"fsdp_use_orig_params", true},
                             {"fsdp_activation_checkpointing", c.grad_ckpt}};
  } else if (s.parallel.offload.any() && !zero_sharding(s.parallel.sharding)) {
    return launch_refusal("parallel.offload", "offloading needs ZeRO or FSDP, not " + s.method);
  }
  launch_output out;
  out.files.push_back({"axolotl.yaml", "yaml", std::move(config)});
  out.command = s.cluster.gpus > 1 ? "accelerate launch -m axolotl.cli.train axolotl.yaml"
                                   : "python -m axolotl.cli.train axolotl.yaml";
  if (zero_sharding(s.parallel.sharding)) {
    out.not_expressed.push_back({"parallel.method",
                                 "the ZeRO stage and offload are in the DeepSpeed config it "
                                 "names (the DeepSpeed format)"});
  }
  return out;
}

namespace {

const json* member(const json& config, const char* key) {
  const auto it = config.find(key);
  return it == config.end() || it->is_null() ? nullptr : &*it;
}

bool truthy(const json& config, const char* key) {
  const json* v = member(config, key);
  return v && ((v->is_boolean() && v->get<bool>()) || (v->is_string() && *v == "true") ||
               (v->is_string() && *v == "auto"));
}

std::optional<std::uint64_t> count(const json& config, const char* key) {
  const json* v = member(config, key);
  if (v && v->is_number_unsigned()) return v->get<std::uint64_t>();
  if (v && v->is_number_integer() && v->get<std::int64_t>() > 0)
    return static_cast<std::uint64_t>(v->get<std::int64_t>());
  return std::nullopt;
}

void import_adapter(const json& config, json& workload, launch_import& out) {
  const json* adapter = member(config, "adapter");
  if (!adapter || !adapter->is_string()) {
    workload["finetune"] = "full";
    return;
  }
  workload["finetune"] = truthy(config, "peft_use_dora") ? "dora" : "lora";
  if (*adapter == "qlora") {
    const json* kwargs = member(config, "bnb_config_kwargs");
    const bool plain = kwargs && kwargs->is_object() &&
                       kwargs->value("bnb_4bit_use_double_quant", json(true)) == json(false);
    workload["weights"] = plain ? "nf4" : "nf4_double_quant";
  }
  if (truthy(config, "load_in_8bit")) workload["weights"] = "int8";
  json lora = json::object();
  if (auto r = count(config, "lora_r")) lora["r"] = *r;
  const json* dropout = member(config, "lora_dropout");
  if (dropout && dropout->is_number()) lora["dropout"] = *dropout;
  const json* targets = member(config, "lora_target_modules");
  if (truthy(config, "lora_target_linear")) {
    lora["targets"] = "all-linear";
  } else if (targets && targets->is_array()) {
    lora["targets"] = *targets;
  }
  const json* saved = member(config, "lora_modules_to_save");
  if (saved && saved->is_array()) lora["modules_to_save"] = *saved;
  if (!lora.empty()) workload["lora"] = std::move(lora);
  if (*adapter != "lora" && *adapter != "qlora") {
    out.ignored.push_back({"adapter", "only lora and qlora are read"});
  }
}

}  // namespace

result<launch_import> import_axolotl(const json& config) {
  if (!config.is_object()) return launch_refusal("file", "an axolotl config is a YAML mapping");
  launch_import out;
  json workload = json::object();
  json parallel = json::object();
  if (const json* id = member(config, "base_model"); id && id->is_string())
    out.fields["model"] = *id;
  import_adapter(config, workload, out);
  if (auto n = count(config, "sequence_len")) workload["seq_len"] = *n;
  if (auto n = count(config, "micro_batch_size")) workload["micro_batch"] = *n;
  if (auto n = count(config, "gradient_accumulation_steps")) workload["grad_accumulation"] = *n;
  const bool full = workload.value("finetune", "full") == "full";
  const bool bf16 = truthy(config, "bf16");
  const bool fp16 = truthy(config, "fp16");
  workload["compute"] = bf16   ? (full ? "pure_bf16" : "amp_bf16")
                        : fp16 ? (full ? "pure_fp16" : "amp_fp16")
                               : "fp32";
  workload["grad_ckpt"] = truthy(config, "gradient_checkpointing");
  if (truthy(config, "flash_attention"))
    workload["attention"] = "flash";
  else if (truthy(config, "sdp_attention"))
    workload["attention"] = "sdpa";
  if (const json* opt = member(config, "optimizer"); opt && opt->is_string()) {
    const std::string name = opt->get<std::string>();
    if (name == "adamw_torch" || name == "adamw_hf")
      workload["optimizer"] = "adamw";
    else if (name == "adamw_torch_fused") {
      workload["optimizer"] = "adamw";
      workload["optimizer_impl"] = "fused";
    } else if (name == "adamw_bnb_8bit" || name == "adamw_8bit")
      workload["optimizer"] = "adamw_8bit";
    else if (name == "adafactor")
      workload["optimizer"] = "adafactor";
    else
      out.ignored.push_back({"optimizer", name + " is not one gpumem estimates"});
  }
  if (member(config, "deepspeed")) {
    out.assumed.push_back({"deepspeed",
                           "names a DeepSpeed config: its ZeRO stage and offload are "
                           "read from that file (import it as deepspeed and give "
                           "the method)"});
  }
  if (const json* fsdp = member(config, "fsdp"); fsdp && fsdp->is_array()) {
    std::string method = "fsdp_full_shard";
    bool host = false;
    for (const auto& mode : *fsdp) {
      if (mode == "shard_grad_op") method = "fsdp_shard_grad_op";
      if (mode == "hybrid_shard") method = "fsdp_hybrid_shard";
      if (mode == "offload") host = true;
    }
    const json* fc = member(config, "fsdp_config");
    if (fc && fc->is_object() && truthy(*fc, "fsdp_offload_params")) host = true;
    if (fc && fc->is_object() && truthy(*fc, "fsdp_activation_checkpointing"))
      workload["grad_ckpt"] = true;
    parallel["method"] = method;
    if (host) parallel["offload"] = {{"optimizer", "cpu"}, {"params", "cpu"}, {"gradients", "cpu"}};
  }
  if (truthy(config, "sample_packing")) {
    out.assumed.push_back({"sample_packing",
                           "packed sequences fill sequence_len each, as padded "
                           "ones do"});
  }
  for (const auto& item : config.items()) {
    static const char* read[] = {"base_model",
                                 "adapter",
                                 "lora_r",
                                 "lora_dropout",
                                 "lora_target_linear",
                                 "lora_target_modules",
                                 "lora_modules_to_save",
                                 "peft_use_dora",
                                 "load_in_4bit",
                                 "bnb_config_kwargs",
                                 "load_in_8bit",
                                 "sequence_len",
                                 "micro_batch_size",
                                 "gradient_accumulation_steps",
                                 "bf16",
                                 "fp16",
                                 "gradient_checkpointing",
                                 "flash_attention",
                                 "sdp_attention",
                                 "optimizer",
                                 "deepspeed",
                                 "fsdp",
                                 "fsdp_config",
                                 "sample_packing",
                                 "pad_to_sequence_len",
                                 "datasets",
                                 "output_dir"};
    bool known = false;
    for (const char* k : read) known = known || item.key() == k;
    if (!known) out.ignored.push_back({item.key(), "not modelled (no effect on the estimate)"});
  }
  out.fields["workload"] = std::move(workload);
  if (!parallel.empty()) out.fields["parallel"] = std::move(parallel);
  return out;
}

}  // namespace gpumem
