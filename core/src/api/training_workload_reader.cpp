// Detailed mode's `workload` for a training step: what is trained and how (finetune and its
// adapters, precisions, optimizer, framework, loss), its sizes, and the library releases, read
// in a fixed order: the first refusal is the answer.
#include <nlohmann/json.hpp>

#include "api/request_fields.hpp"
#include "api/request_reader.hpp"
#include "model/config_reader.hpp"

namespace gpumem {

using json = nlohmann::ordered_json;

namespace {

// A list of module names in a request: PEFT's lists name a handful of modules, so a few hundred,
// each of a few hundred characters, bound the work of matching them against every module of the
// model (30,000 names took tens of seconds).
inline constexpr std::size_t max_module_names = 256;
inline constexpr std::size_t max_module_name_length = 256;

std::optional<error> check_module_names(const std::vector<std::string>& names,
                                        const std::string& field) {
  if (names.size() > max_module_names) {
    return error{"request.invalid_value", field,
                 "[" + field + "] must name at most " + std::to_string(max_module_names) +
                     " modules, got " + std::to_string(names.size())};
  }
  for (const auto& name : names) {
    if (name.size() > max_module_name_length) {
      return error{"request.invalid_value", field,
                   "[" + field + "] module names must be at most " +
                       std::to_string(max_module_name_length) + " characters long, got one of " +
                       std::to_string(name.size())};
    }
  }
  return std::nullopt;
}

// An adapter's target modules (`targets` of workload.lora or workload.ia3): module names, or
// "all-linear" as a string or a list (PEFT takes both); `fallback`, PEFT's default, when absent.
result<std::vector<std::string>> read_targets(const json& adapter, config_reader& in,
                                              const std::string& field,
                                              const std::vector<std::string>& fallback) {
  const bool stated = adapter.is_object() && adapter.contains("targets");
  const bool all_linear = stated && adapter.at("targets") == "all-linear";
  auto targets = all_linear ? std::vector<std::string>{"all-linear"} : in.text_list("targets");
  if (auto problem = in.problem("")) return *problem;
  if (auto e = check_module_names(targets, field + ".targets")) return *e;
  if (stated && targets.empty()) {
    std::string defaults;
    for (std::size_t i = 0; i < fallback.size(); ++i)
      defaults += (i == 0 ? "" : i + 1 == fallback.size() ? " and " : ", ") + fallback[i];
    return error{"request.invalid_value", field + ".targets",
                 "[" + field +
                     ".targets] must name at least one module (or all-linear); leave it out for " +
                     defaults};
  }
  return targets.empty() ? fallback : targets;
}

// workload.software: the torch, bitsandbytes, PEFT and transformers releases, each a version
// string.
std::optional<error> read_software(const json& workload, software_stack& out) {
  return read_library_releases(workload,
                               {{"torch", &out.torch},
                                {"bitsandbytes", &out.bitsandbytes},
                                {"peft", &out.peft},
                                {"transformers", &out.transformers}},
                               "{\"torch\": \"2.4.1\", \"bitsandbytes\": \"0.44.1\", \"peft\": "
                               "\"0.11.1\", \"transformers\": \"4.44.2\"}",
                               "2.4.1");
}

// PEFT's modules_to_save: embed_tokens (or the model's own name of its token embedding) and
// lm_head, the modules modelled as trained copies.
std::optional<error> read_modules_to_save(config_reader& in, const model_spec& model,
                                          training_config& out) {
  const auto names = in.text_list("modules_to_save");
  if (auto e = check_module_names(names, "workload.lora.modules_to_save")) return *e;
  if (auto problem = in.problem("")) return *problem;
  for (const auto& name : names) {
    if (name == "lm_head") {
      out.save_lm_head = true;
    } else if (names_token_embedding(model, name)) {
      out.save_embeddings = true;
    } else {
      return error{"request.invalid_value", "workload.lora.modules_to_save",
                   "[workload.lora.modules_to_save] trained copies of embed_tokens and lm_head "
                   "are modelled, got \"" +
                       name + "\""};
    }
  }
  return std::nullopt;
}

// The names the workload chooses among, each read in turn: a bad one is recorded in the reader,
// reported with the sizes' problems (read_detailed_workload).
struct workload_choices {
  std::optional<std::string> phase;
  std::optional<std::string> finetune;
  std::optional<std::string> compute;
  std::optional<std::string> optimizer;
  std::optional<std::string> attention;
  std::optional<std::string> framework;
  std::optional<std::string> loss;
};

workload_choices read_workload_choices(config_reader& in, const software_stack& software) {
  workload_choices out;
  auto choice = [&](const char* key, const std::string& fallback,
                    std::initializer_list<const char*> accepted) {
    return choose(in, key, fallback, accepted);
  };
  out.phase = choice("phase", "train", {"train", "forward_backward"});
  out.finetune = choice(
      "finetune", "full",
      {"full", "lora", "dora", "ia3", "prompt_tuning", "llama_adapter_v1", "llama_adapter_v2"});
  out.compute =
      choice("compute", "amp_bf16", {"fp32", "amp_fp16", "amp_bf16", "pure_fp16", "pure_bf16"});
  out.optimizer =
      choice("optimizer", out.phase && *out.phase == "forward_backward" ? "none" : "adamw",
             {"adamw", "adam", "adamw_8bit", "adafactor", "sgd", "sgd_momentum", "none"});
  // torch 1.x has no SDPA: transformers runs eager attention there.
  out.attention =
      choice("attention", software.has_sdpa() ? "sdpa" : "eager", {"eager", "sdpa", "flash"});
  out.framework = choice("framework", "transformers",
                         {"transformers", "litgpt", "torchtune", "unsloth", "torchtitan"});
  out.loss = choice("loss", "model", {"model", "plain_cross_entropy"});
  return out;
}

// micro_batch, seq_len, target_len, grad_ckpt, the flags and grad_accumulation.
std::optional<error> read_workload_sizes(const json& workload, config_reader& in, bool for_plan,
                                         training_config& out) {
  // A plan (or a solve) chooses the micro-batch unless the request fixes it: 0 then.
  out.micro_batch = for_plan ? in.optional({"micro_batch"}, 0, 1ULL << 20)
                             : in.required({"micro_batch"}, 1ULL << 20);
  out.seq_len = in.optional({"seq_len"}, out.seq_len, max_positions);
  out.target_len = in.optional({"target_len"}, 0, max_positions);  // 0: not given
  // grad_ckpt: true (every block recomputed), false, or "selective" (the attention core only;
  // torchtitan's per-op policy under torchtitan).
  const json& ckpt = workload.value("grad_ckpt", json(false));
  if (!ckpt.is_boolean() && !ckpt.is_null() && ckpt != json("selective")) {
    return error{"request.invalid_value", "workload.grad_ckpt",
                 "[workload.grad_ckpt] must be true, false or \"selective\", got " + ckpt.dump()};
  }
  out.selective_recompute = ckpt.is_string();
  out.grad_ckpt = ckpt == json(true);
  out.kbit_preparation = in.flag("kbit_preparation", true);
  out.keep_outputs = in.flag("keep_outputs", false);
  out.grad_accumulation = in.optional({"grad_accumulation"}, 1, 65536);
  return std::nullopt;
}

// The choices as the step's settings.
void apply_workload_choices(const workload_choices& choices, training_config& out) {
  const std::string& phase = *choices.phase;
  const std::string& finetune = *choices.finetune;
  const std::string& optimizer = *choices.optimizer;
  out.optimizer_step = phase == "train" && optimizer != "none";
  out.finetune = *finetune_kind_named(finetune);  // `choice` accepted only these names
  out.dora = finetune == "dora";
  out.compute = *compute_precision_named(*choices.compute);  // `choice` accepted only these names
  out.optimizer = optimizer == "adamw_8bit"     ? optimizer_kind::adamw_8bit
                  : optimizer == "adafactor"    ? optimizer_kind::adafactor
                  : optimizer == "sgd"          ? optimizer_kind::sgd
                  : optimizer == "sgd_momentum" ? optimizer_kind::sgd_momentum
                  : optimizer == "none"         ? optimizer_kind::none
                                                : optimizer_kind::adamw;
  out.attention = attention_kernel_named(*choices.attention);
}

// workload.optimizer_impl: torch.optim AdamW's implementation.
std::optional<error> read_optimizer_impl(config_reader& in, training_config& out) {
  if (in.has("optimizer_impl")) {
    const auto impl = choose(in, "optimizer_impl", "foreach", {"foreach", "for_loop", "fused"});
    if (auto problem = in.problem("")) return *problem;
    if (out.optimizer != optimizer_kind::adamw) {
      return error{"request.invalid_value", "workload.optimizer_impl",
                   "[workload.optimizer_impl] chooses torch.optim AdamW's implementation: "
                   "optimizer adamw or adam"};
    }
    out.adamw_impl = *impl == "fused"      ? adamw_implementation::fused
                     : *impl == "for_loop" ? adamw_implementation::for_loop
                                           : adamw_implementation::foreach;
  }
  return std::nullopt;
}

// The training loop's framework, and what only a transformers loop takes (loss, keep_outputs).
std::optional<error> read_framework_and_loss(const workload_choices& choices,
                                             training_config& out) {
  const std::string& framework = *choices.framework;
  out.framework = framework == "litgpt"       ? framework_profile::litgpt
                  : framework == "torchtune"  ? framework_profile::torchtune
                  : framework == "unsloth"    ? framework_profile::unsloth
                  : framework == "torchtitan" ? framework_profile::torchtitan
                                              : framework_profile::transformers;
  out.loss =
      *choices.loss == "plain_cross_entropy" ? loss_kind::plain_cross_entropy : loss_kind::model;
  if (out.loss != loss_kind::model && out.framework != framework_profile::transformers) {
    return error{"request.invalid_value", "workload.loss",
                 "[workload.loss] chooses how a transformers run takes its loss; litgpt, "
                 "torchtune, unsloth and torchtitan take their own: leave it out or \"model\""};
  }
  if (out.keep_outputs && out.framework != framework_profile::transformers) {
    return error{"request.invalid_value", "workload.keep_outputs",
                 "[workload.keep_outputs] describes a transformers training loop; litgpt, "
                 "torchtune, unsloth and torchtitan run their own: leave it out or false"};
  }
  return std::nullopt;
}

// workload.weights of a fully fine-tuned model.
std::optional<error> read_full_weights(config_reader& in, const std::string& compute,
                                       training_config& out) {
  if (out.finetune == finetune_kind::full && in.has("weights")) {
    // The stored dtype of a fully fine-tuned model (default: full_model_weight_bytes): 16-bit
    // or fp32 under autocast, what the model computes in otherwise.
    const auto weights = choose(in, "weights", "bf16", {"fp32", "bf16", "fp16"});
    if (auto problem = in.problem("")) return *problem;
    out.full_weight_bytes = *weights == "fp32" ? 4 : 2;
    if (!is_amp(out.compute) && out.full_weight_bytes != compute_bytes(out.compute)) {
      return error{"request.invalid_value", "workload.weights",
                   "[workload.weights] a fully fine-tuned model computing in " + compute +
                       " is stored in " +
                       (out.compute == compute_precision::fp32 ? "fp32" : "16 bits") +
                       "; mixed precision (amp_bf16, amp_fp16) takes either"};
    }
  }
  return std::nullopt;
}

// Which finetune methods the adapter fields (lora, ia3, prompt_tuning) and framework allow.
std::optional<error> check_adapter_fields(const json& workload, const std::string& finetune,
                                          const training_config& out) {
  if (out.finetune == finetune_kind::llama_adapter_v1 ||
      out.finetune == finetune_kind::llama_adapter_v2) {
    if (out.framework != framework_profile::litgpt) {
      return error{"request.invalid_value", "workload.finetune",
                   "[workload.finetune] " + finetune +
                       " is litgpt's (adapter.py, adapter_v2.py): set workload.framework "
                       "\"litgpt\""};
    }
  }
  if (out.finetune != finetune_kind::lora && workload.contains("lora")) {
    return error{"request.invalid_value", "workload.lora",
                 "[workload.lora] applies to finetune lora or dora"};
  }
  if (out.finetune != finetune_kind::ia3 && workload.contains("ia3")) {
    return error{"request.invalid_value", "workload.ia3", "[workload.ia3] applies to finetune ia3"};
  }
  if (out.finetune != finetune_kind::prompt_tuning && workload.contains("prompt_tuning")) {
    return error{"request.invalid_value", "workload.prompt_tuning",
                 "[workload.prompt_tuning] applies to finetune prompt_tuning"};
  }
  return std::nullopt;
}

// workload.prompt_tuning: PEFT's num_virtual_tokens.
std::optional<error> read_prompt_tuning(const json& workload, training_config& out) {
  if (out.finetune == finetune_kind::prompt_tuning) {
    const json& prompt = member(workload, "prompt_tuning");
    if (auto e = unknown_keys(prompt, "workload.prompt_tuning", {"num_virtual_tokens"})) return *e;
    config_reader prompt_in(prompt, "workload.prompt_tuning", "request");
    out.virtual_tokens = prompt_in.required({"num_virtual_tokens"}, max_positions);
    if (auto problem = prompt_in.problem("for prompt tuning (PEFT's num_virtual_tokens)"))
      return *problem;
  }
  return std::nullopt;
}

// workload.lora: its rank, dropout, targets and modules_to_save.
std::optional<error> read_lora(const json& workload, const model_spec& model,
                               training_config& out) {
  const json& lora = member(workload, "lora");
  if (auto e = unknown_keys(lora, "workload.lora",
                            {"r", "alpha", "dropout", "targets", "modules_to_save"}))
    return *e;
  config_reader lora_in(lora, "workload.lora", "request");
  out.lora_rank = lora_in.optional({"r"}, 8, 65536);
  if (lora_in.has("dropout")) out.lora_dropout = lora_in.number("dropout", 0, 0, 1);
  auto targets =
      read_targets(lora, lora_in, "workload.lora", peft_default_targets(finetune_kind::lora));
  if (!targets.ok()) return targets.failure();
  out.lora_targets = targets.value();
  if (auto e = read_modules_to_save(lora_in, model, out)) return *e;
  return std::nullopt;
}

// workload.ia3: its targets.
std::optional<error> read_ia3(const json& workload, training_config& out) {
  const json& ia3 = member(workload, "ia3");
  if (auto e = unknown_keys(ia3, "workload.ia3", {"targets"})) return *e;
  config_reader ia3_in(ia3, "workload.ia3", "request");
  auto targets =
      read_targets(ia3, ia3_in, "workload.ia3", peft_default_targets(finetune_kind::ia3));
  if (!targets.ok()) return targets.failure();
  out.lora_targets = targets.value();
  return std::nullopt;
}

// workload.weights of an adapter's frozen base: 16-bit or fp32, or quantised block linears.
std::optional<error> read_base_weights(config_reader& in, training_config& out) {
  const std::string weights = in.text("weights", "bf16");
  if (auto problem = in.problem("")) return *problem;
  if (weights == "nf4" || weights == "fp4" || weights == "nf4_double_quant") {
    // QLoRA: bitsandbytes 4-bit block linears, the rest 16-bit.
    out.quantization = weights == "nf4_double_quant" ? base_quantization::nf4_double_quant
                                                     : base_quantization::nf4;
  } else if (weights == "int8") {
    out.quantization = base_quantization::int8;  // LLM.int8 block linears, the rest 16-bit
  } else if (weights != "fp32" && weights != "bf16" && weights != "fp16") {
    return error{"request.invalid_value", "workload.weights",
                 "[workload.weights] must be fp32, bf16, fp16, int8, nf4, fp4 or nf4_double_quant"};
  }
  out.base_weight_bytes = weights == "fp32" ? 4 : 2;
  return std::nullopt;
}

// A quantised checkpoint (its config.json's quantization_config): FP8 and MXFP4 checkpoints train
// dequantised to 16 bits (transformers' FineGrainedFP8Config and Mxfp4Config with
// dequantize=True, as the gpt-oss and DeepSeek fine-tuning recipes load them); of the others, full
// fine-tuning needs the 16-bit model, an adapter's frozen base is the checkpoint's bitsandbytes
// format (unstated weights take it, stated ones must agree), and adapters over GPTQ or AWQ bases
// are not modelled.
std::optional<error> checkpoint_base(const json& workload, const model_spec& model,
                                     training_config& out) {
  if (!model.quantized_checkpoint) return std::nullopt;
  const checkpoint_quantization& q = model.checkpoint;
  const std::string as_stated = " (quant_method " + q.method + ", " + q.weights + ")";
  if (q.weights == "fp8" || q.weights == "mxfp4") return std::nullopt;
  if (out.finetune == finetune_kind::full) {
    return error{"request.invalid_value", "workload.finetune",
                 "[workload.finetune] the checkpoint is quantised" + as_stated +
                     ": full fine-tuning trains 16-bit weights; use LoRA, or the 16-bit "
                     "model's config.json"};
  }
  const base_quantization wanted =
      q.weights == "int8"                        ? base_quantization::int8
      : q.weights == "nf4_double_quant"          ? base_quantization::nf4_double_quant
      : q.weights == "nf4" || q.weights == "fp4" ? base_quantization::nf4
                                                 : base_quantization::none;
  if (q.method != "bitsandbytes" || wanted == base_quantization::none) {
    return error{"request.invalid_value", "model",
                 "[model] training adapters over a quantised checkpoint" + as_stated +
                     " is modelled for bitsandbytes bases only: use the 16-bit model's "
                     "config.json with weights nf4 or int8"};
  }
  if (workload.contains("weights") && out.quantization != wanted) {
    return error{"request.invalid_value", "workload.weights",
                 "[workload.weights] the checkpoint stores its weights as " + q.weights +
                     " (its config.json's quantization_config); leave weights out or state " +
                     q.weights};
  }
  out.quantization = wanted;
  out.base_weight_bytes = 2;
  return std::nullopt;
}

// workload.kbit_preparation: PEFT's prepare_model_for_kbit_training, for a quantised base only.
std::optional<error> check_kbit_preparation(const json& workload, const training_config& out) {
  const bool pure =
      out.compute == compute_precision::pure_bf16 || out.compute == compute_precision::pure_fp16;
  if (workload.contains("kbit_preparation") &&
      (out.quantization == base_quantization::none ||
       out.framework != framework_profile::transformers || (out.kbit_preparation && pure))) {
    return error{"request.invalid_value", "workload.kbit_preparation",
                 "[workload.kbit_preparation] applies to a quantised LoRA base (weights int8, nf4, "
                 "fp4 or nf4_double_quant) under the transformers framework, computing in fp32 "
                 "or mixed precision"};
  }
  return std::nullopt;
}

// seq_len, with prompt tuning's virtual tokens, against the model's positions.
std::optional<error> check_workload_lengths(const model_spec& model, const training_config& out,
                                            std::vector<std::string>& warnings) {
  if (auto e = check_seq_len(model, out.seq_len, warnings)) return *e;
  // Prompt tuning's virtual tokens take positions too (PEFT prepends them to every sequence).
  std::vector<std::string> ignored;  // the rotary case was warned about above
  if (out.virtual_tokens > 0 && check_seq_len(model, out.seq_len + out.virtual_tokens, ignored)) {
    return error{"request.invalid_value", "workload.prompt_tuning.num_virtual_tokens",
                 "[workload.prompt_tuning.num_virtual_tokens] seq_len " +
                     std::to_string(out.seq_len) + " + " + std::to_string(out.virtual_tokens) +
                     " virtual tokens exceed the model's " + std::to_string(model.max_positions) +
                     " learned positions"};
  }
  return std::nullopt;
}

}  // namespace

result<training_config> read_detailed_workload(const json& request, const model_spec& model,
                                               bool for_plan, std::vector<std::string>& warnings) {
  if (auto e = check_object(request, "workload")) return *e;
  const json& workload = member(request, "workload");
  if (auto e = unknown_keys(workload, "workload",
                            {"phase",
                             "finetune",
                             "lora",
                             "ia3",
                             "prompt_tuning",
                             "weights",
                             "compute",
                             "optimizer",
                             "optimizer_impl",
                             "micro_batch",
                             "seq_len",
                             "target_len",
                             "grad_ckpt",
                             "grad_accumulation",
                             "attention",
                             "loss",
                             "keep_outputs",
                             "framework",
                             "kbit_preparation",
                             "software",
                             "train_tokens",
                             "global_batch"})) {
    return *e;
  }
  config_reader in(workload, "workload", "request");
  training_config out;
  if (auto e = read_software(workload, out.software)) return *e;
  const workload_choices choices = read_workload_choices(in, out.software);
  if (auto e = read_workload_sizes(workload, in, for_plan, out)) return *e;
  if (auto problem = in.problem("required for an estimate")) return *problem;
  apply_workload_choices(choices, out);
  if (auto e = read_optimizer_impl(in, out)) return *e;
  if (auto e = read_framework_and_loss(choices, out)) return *e;
  if (auto e = read_full_weights(in, *choices.compute, out)) return *e;
  if (auto e = check_adapter_fields(workload, *choices.finetune, out)) return *e;
  if (auto e = read_prompt_tuning(workload, out)) return *e;
  if (out.finetune != finetune_kind::full) {
    if (out.finetune == finetune_kind::lora) {
      if (auto e = read_lora(workload, model, out)) return *e;
    }
    if (out.finetune == finetune_kind::ia3) {
      if (auto e = read_ia3(workload, out)) return *e;
    }
    if (auto e = read_base_weights(in, out)) return *e;
  }
  if (auto e = checkpoint_base(workload, model, out)) return *e;
  if (auto e = check_kbit_preparation(workload, out)) return *e;
  if (auto e = check_workload_lengths(model, out, warnings)) return *e;
  return out;
}

}  // namespace gpumem
