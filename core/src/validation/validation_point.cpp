#include "validation/validation_point.hpp"

#include <algorithm>
#include <cctype>
#include <cstdlib>
#include <nlohmann/json.hpp>

#include "gpumem/runtime/software_stack.hpp"
#include "inference/autoawq_fused.hpp"
#include "model/config_reader.hpp"
#include "training/framework.hpp"
#include "training/step_checks.hpp"
#include "validation/release_dates.hpp"

namespace gpumem {

using json = nlohmann::ordered_json;

namespace {

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

}  // namespace

// The member `key` of a point when it is an object, else an empty one (the format's objects may
// be malformed in a file; a point is then skipped, never thrown on).
json object_at(const json& point, const char* key) {
  auto it = point.find(key);
  return it != point.end() && it->is_object() ? *it : json::object();
}

// A string member, or `fallback` when it is missing, null or not a string.
const char* text_or(const json& object, const char* key, const char* fallback) {
  auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get_ref<const std::string&>().c_str()
                                               : fallback;
}

// Whether `value` is an integer in [low, high].
bool whole_in(const json& value, std::uint64_t low, std::uint64_t high) {
  if (value.is_number_unsigned()) {
    const auto v = value.get<std::uint64_t>();
    return v >= low && v <= high;
  }
  if (value.is_number_integer()) {
    const auto v = value.get<std::int64_t>();
    return v >= 0 && static_cast<std::uint64_t>(v) >= low && static_cast<std::uint64_t>(v) <= high;
  }
  return false;
}

// A flag member, or `fallback` when it is missing or not a boolean.
bool flag_or(const json& object, const char* key, bool fallback) {
  auto it = object.find(key);
  return it != object.end() && it->is_boolean() ? it->get<bool>() : fallback;
}

// A degree or GPU count (an integer in 1..65536), or 1 when it is missing or not one.
std::uint64_t count_or_one(const json& object, const char* key) {
  auto it = object.find(key);
  return it != object.end() && whole_in(*it, 1, 65536) ? it->get<std::uint64_t>() : 1;
}

// Why a stated GPU count or degree is unusable ("" when each is null or an integer in 1..65536).
std::string malformed_degree(const json& parallel) {
  for (const char* key : {"gpus", "dp", "tp", "pp", "cp"}) {
    const json& value = parallel.value(key, json());
    if (!value.is_null() && !whole_in(value, 1, 65536))
      return std::string("parallel.") + key + " must be an integer in 1..65536";
  }
  return "";
}

// The GPU preset a point's free-text GPU name describes, or "" when it names none. Only speed
// figures matter here, so an A100 whose memory is not stated reads as the 80 GB part (same
// FLOP/s and NVLink).
std::string gpu_preset_for(const json& gpu) {
  const std::string name = lower(text_or(gpu, "name", ""));
  const double memory = gpu.contains("memory_gib") && gpu.at("memory_gib").is_number()
                            ? gpu.at("memory_gib").get<double>()
                            : 0.0;
  const bool pcie = name.find("pcie") != std::string::npos;
  if (name.find("unspecified") != std::string::npos) return "";
  if (name.find("h200") != std::string::npos) return "h200";
  if (name.find("h100") != std::string::npos) return pcie ? "h100-pcie" : "h100-sxm";
  if (name.find("a100") != std::string::npos) {
    if (memory > 0 && memory <= 40) return "a100-sxm4-40gb";
    return pcie ? "a100-pcie-80gb" : "a100-sxm4-80gb";
  }
  if (name.find("v100") != std::string::npos)
    return memory > 16 ? "v100-sxm2-32gb" : "v100-sxm2-16gb";
  for (const char* id : {"4090", "3090", "a10g", "l40s", "a6000", "t4", "l4"}) {
    if (name.find(id) != std::string::npos) {
      const std::string s = id;
      if (s == "4090" || s == "3090") return "rtx-" + s;
      if (s == "a6000") return "rtx-a6000";
      return s;
    }
  }
  return "";
}

namespace {

// Details the format has no field for travel in gpumem's own points as
// "measure option: KEY=VALUE" assumptions (validation/README.md): the VALUE of `key` (up to the
// first space), if one is stated.
std::optional<std::string> measure_option(const json& p, const std::string& key) {
  const std::string option = "measure option: " + key + "=";
  for (const auto& a : p.value("assumptions", json::array())) {
    if (!a.is_string()) continue;
    const std::string text = a.get<std::string>();
    if (text.rfind(option, 0) == 0)
      return text.substr(option.size(), text.find(' ', option.size()) - option.size());
  }
  return std::nullopt;
}

// A measure option's value as a count of 1 to `max_digits` digits, if it is one.
std::optional<std::uint64_t> count_option(const json& p, const std::string& key,
                                          std::size_t max_digits) {
  const auto digits = measure_option(p, key);
  if (!digits || digits->empty() || digits->size() > max_digits ||
      digits->find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;
  return std::stoull(*digits);
}

// A count the source's own description states under a framework argument's name: "NAME=N",
// "NAME: N" or "NAME N" in original_notes (up to 5 digits), else nothing.
std::optional<std::uint64_t> argument_in_notes(const json& p, const std::string& name) {
  const json& notes = p.value("original_notes", json());
  if (!notes.is_string()) return std::nullopt;
  const std::string text = notes.get<std::string>();
  const auto at = text.find(name);
  if (at == std::string::npos) return std::nullopt;
  std::size_t i = at + name.size();
  while (i < text.size() && (text[i] == ' ' || text[i] == '=' || text[i] == ':')) ++i;
  std::size_t end = i;
  while (end < text.size() && end - i < 5 && std::isdigit(static_cast<unsigned char>(text[end])))
    ++end;
  if (end == i) return std::nullopt;
  return std::stoull(text.substr(i, end - i));
}

// The offload placement, the pipeline and tensor-parallel degrees and the sharding method.
std::string read_parallel_layout(const json& parallel, training_config& config,
                                 std::string& defaults_note) {
  // Offloading: the point's placement of each state (none / cpu / nvme).
  const json& offload = parallel.value("offload", json());
  if (offload.is_object()) {
    auto target = [&](const char* key) {
      return offload_target_named(text_or(offload, key, "none")).value_or(offload_target::none);
    };
    config.offload.optimizer = target("optimizer");
    config.offload.params = target("params");
    config.offload.gradients = target("gradients");
    config.offload.activations = target("activations");
  } else if (flag_or(parallel, "cpu_offload", false)) {
    return "offloaded, with no placement stated";
  }
  if (auto why = malformed_degree(parallel); !why.empty()) return why;
  auto degree = [&](const char* key) { return count_or_one(parallel, key); };
  // Pipeline stages under 1F1B: with the micro-batches per step unstated, as many as stages
  // (stage s holds pp - s of them in flight).
  config.pp_degree = degree("pp");
  if (config.pp_degree > 1)
    defaults_note += "; pipeline: the busiest stage, as many micro-batches per step as stages";
  // Tensor parallelism, alone or under a data-parallel method (DP+TP).
  config.tp_degree = degree("tp");
  const json& sp = parallel.value("sequence_parallel", json());
  config.sequence_parallel = sp.is_boolean() && sp.get<bool>();
  // FSDP NO_SHARD is DDP-like.
  std::string method = method_without_offload(parallel);
  if (method == "fsdp_no_shard") method = "ddp";
  if (method == "tensor_parallel") method = "single";
  const auto sharding = data_parallel_named(method);
  if (!sharding) return "method " + method + " is not modelled yet in detailed mode";
  config.sharding = *sharding;
  return "";
}

// Context parallelism: the states are sharded over the data- and context-parallel ranks. The
// format does not say ring or Ulysses: DeepSpeed's own sequence parallelism is Ulysses — in
// DeepSpeed scripts and in Megatron-DeepSpeed, the Megatron that runs ZeRO-2/3 (Megatron-LM
// has no such stage) — the rest ring attention (Megatron-LM, torchtitan).
void read_context_parallel(const json& parallel, const std::string& framework,
                           training_config& config, std::string& defaults_note) {
  auto degree = [&](const char* key) { return count_or_one(parallel, key); };
  config.cp_degree = degree("cp");
  config.dp_degree = std::max<std::uint64_t>(degree("dp"), 1) * config.cp_degree;
  if (config.cp_degree > 1) {
    const bool megatron_deepspeed =
        framework == "megatron" &&
        (config.sharding == data_parallel::zero2 || config.sharding == data_parallel::zero3);
    const bool ulysses = framework == "deepspeed" || megatron_deepspeed;
    config.cp_kind = ulysses ? context_parallel_kind::ulysses : context_parallel_kind::ring;
    defaults_note += ulysses ? "; context parallelism read as Ulysses (DeepSpeed's)"
                             : "; context parallelism read as ring attention";
  }
}

// What the framework's own loop does: its profile, its loss, the outputs it keeps, its buckets.
void read_framework(const json& p, const std::string& framework, training_config& config,
                    std::string& defaults_note) {
  if (framework == "litgpt") config.framework = framework_profile::litgpt;
  if (framework == "torchtune") config.framework = framework_profile::torchtune;
  if (framework == "unsloth") config.framework = framework_profile::unsloth;
  if (framework == "torchtitan") config.framework = framework_profile::torchtitan;
  if (framework == "lightning") {
    // Lightning has no loss of its own: the LightningModule's training_step takes it.
    config.loss = loss_kind::plain_cross_entropy;
    defaults_note += "; loss read as the LightningModule's plain cross-entropy on the logits";
  }
  if (framework == "accelerate" || framework == "peft_examples" || framework == "deepspeed" ||
      framework == "colossalai") {
    // Their training loops bind `outputs = model(**batch)` and keep it through the step
    // (accelerate's examples/nlp_example.py, PEFT's examples, DeepSpeed-Chat's step-1 main.py,
    // ColossalChat's coati/trainer/sft.py and Colossal-AI's examples around booster.backward).
    config.keep_outputs = true;
    defaults_note += "; the loop read as holding each forward's outputs until the next";
  }
  // Buckets of DeepSpeed ZeRO-2/3 and Colossal-AI's LowLevelZero: DeepSpeed's defaults
  // (training_config) unless the launcher sets its own — Lightning's DeepSpeedStrategy
  // reduce_bucket_size 2e8 (lightning/pytorch/strategies/deepspeed.py); the HF Trainer's
  // documented ZeRO configs say "auto", which transformers fills from the hidden size: h² to
  // reduce, 0.9·h² to prefetch, 10·h to persist (integrations/deepspeed.py
  // trainer_config_finalize); LowLevelZeroPlugin reduce_bucket_size_in_m 12 Mi.
  const json& model_config = object_at(object_at(p, "model"), "config");
  const json& hidden = model_config.value("hidden_size", json());
  const std::uint64_t spec_hidden = hidden.is_number_unsigned() ? hidden.get<std::uint64_t>() : 0;
  if (framework == "lightning") {
    config.reduce_bucket_elements = 200000000;
  } else if (framework == "hf_trainer" && spec_hidden > 0) {
    config.reduce_bucket_elements = spec_hidden * spec_hidden;
    config.prefetch_bucket_elements = spec_hidden * spec_hidden * 9 / 10;
    config.persistence_threshold = 10 * spec_hidden;
  } else if (framework == "colossalai") {
    config.reduce_bucket_elements = 12ULL << 20;
  }
}

// The fine-tuning kind and its adapter's settings.
std::string read_finetune(const json& p, const json& w, training_config& config,
                          std::string& defaults_note) {
  const std::string finetune = text_or(w, "finetune", "");
  // QLoRA is LoRA over a 4-bit base (`weights` says which).
  const auto kind = finetune_kind_named(finetune == "qlora" ? "lora" : finetune);
  if (!kind) return "fine-tuning kind " + finetune + " is not modelled yet";
  config.finetune = *kind;
  if ((config.finetune == finetune_kind::llama_adapter_v1 ||
       config.finetune == finetune_kind::llama_adapter_v2) &&
      config.framework != framework_profile::litgpt)
    return "LLaMA-Adapter is modelled as litgpt runs it";
  if (config.finetune == finetune_kind::prompt_tuning) {
    // The format has no field for it: PEFT's argument in the source's description.
    const auto tokens = argument_in_notes(p, "num_virtual_tokens");
    if (!tokens || *tokens == 0) return "prompt tuning's num_virtual_tokens not stated";
    config.virtual_tokens = *tokens;
  }
  if (config.finetune == finetune_kind::ia3) {
    // The format carries no IA3 targets: PEFT's default for Llama, read by role elsewhere.
    config.lora_targets = peft_default_targets(finetune_kind::ia3);
    defaults_note += "; IA3 targets PEFT's default: key, value and MLP output projections";
  }
  config.dora = finetune == "dora";
  if (config.finetune == finetune_kind::lora) {
    const json& lora = w.value("lora", json());
    if (!lora.is_object() || !whole_in(lora.value("r", json()), 1, 65536))
      return "LoRA rank not stated as 1..65536";
    config.lora_rank = lora.at("r").get<std::uint64_t>();
    for (const auto& t : lora.value("targets", json::array())) {
      if (t.is_string()) config.lora_targets.push_back(t.get<std::string>());
    }
    // The LoRA dropout the source states (validation README, workload.lora.dropout).
    const json& dropout = lora.value("dropout", json());
    if (dropout.is_number() && dropout.get<double>() >= 0 && dropout.get<double>() < 1)
      config.lora_dropout = dropout.get<double>();
  }
  return "";
}

// The library releases the source states (validation README, workload.software): those that
// change what a training step keeps. An unstated one is read as the release current at the
// point's date where the framework runs that library (release_dates.hpp) — torch always,
// transformers and PEFT under Hugging Face code, bitsandbytes under its 4-bit kernels — unless
// what the point states rules that release out (torch 2 for SDPA or litgpt, torchtune, unsloth
// and torchtitan; PEFT before 0.12 under fp16 AMP over an fp16 base, which fails); without a
// date it keeps the request's default. Each reading is said in the note.
void read_software(const json& w, const std::string& framework, training_config& config,
                   std::string& defaults_note) {
  const json& software = w.value("software", json());
  const auto release = [&](const char* name) -> std::optional<library_release> {
    const json& v = software.is_object() ? software.value(name, json()) : json();
    return v.is_string() ? parse_library_release(v.get<std::string>()) : std::nullopt;
  };
  config.software.torch = release("torch");
  config.software.bitsandbytes = release("bitsandbytes");
  config.software.peft = release("peft");
  config.software.transformers = release("transformers");
  const std::string date = software.is_object() ? text_or(software, "date", "") : "";
  const auto take = [&](const char* name, std::optional<library_release>& slot,
                        std::optional<library_release> dated) {
    if (slot || !dated) return;
    slot = dated;
    defaults_note += dated_reading(name, *dated, date);
  };
  const framework_traits& traits = framework_of(config);
  const auto torch = release_current_at(dated_library::torch, date);
  const bool needs_torch2 = !traits.torch1 || std::string(text_or(w, "attention", "")) == "sdpa";
  if (!(torch && needs_torch2 && torch->before(2, 0))) take("torch", config.software.torch, torch);
  bool hugging_face_code = false;
  for (const char* name : {"hf_trainer", "transformers", "peft_examples", "accelerate"})
    hugging_face_code = hugging_face_code || framework == name;
  if (hugging_face_code && traits.transformers_modelling) {
    take("transformers", config.software.transformers,
         release_current_at(dated_library::transformers, date));
  }
  if (hugging_face_code && traits.peft && !config.software.peft) {
    training_config dated = config;
    dated.software.peft = release_current_at(dated_library::peft, date);
    dated.attention = attention_kernel::eager;  // (only PEFT's own refusal is asked)
    const auto refused = check_software(dated);
    if (!(refused && refused->field == "workload.software.peft"))
      take("peft", config.software.peft, dated.software.peft);
  }
  const bool four_bit = config.quantization == base_quantization::nf4 ||
                        config.quantization == base_quantization::nf4_double_quant;
  if (four_bit && traits.bitsandbytes_4bit) {
    take("bitsandbytes", config.software.bitsandbytes,
         release_current_at(dated_library::bitsandbytes, date));
    if (!config.software.bitsandbytes)
      defaults_note += "; bitsandbytes release not stated: read as before 0.45";
  }
}

// The stored weights, the compute precision and the optimizer states' dtype.
std::string read_precision(const json& w, training_config& config) {
  const std::string weights = text_or(w, "weights", "");
  if (weights == "fp32") {
    config.base_weight_bytes = 4;
    config.full_weight_bytes = 4;
  } else if (weights == "fp16" || weights == "bf16") {
    config.base_weight_bytes = 2;
    config.full_weight_bytes = 2;
  } else if ((weights == "nf4" || weights == "fp4" || weights == "nf4_double_quant") &&
             config.finetune != finetune_kind::full) {
    config.base_weight_bytes = 2;  // what stays unquantised is 16-bit
    config.quantization = weights == "nf4_double_quant" ? base_quantization::nf4_double_quant
                                                        : base_quantization::nf4;
  } else if (weights == "int8" && config.finetune != finetune_kind::full) {
    config.base_weight_bytes = 2;
    config.quantization = base_quantization::int8;
  } else {
    return "weights " + weights + " (quantised) are not modelled yet";
  }
  const std::string compute = text_or(w, "compute", "");
  const auto precision = compute_precision_named(compute);
  if (!precision) return "compute " + compute + " not stated";
  config.compute = *precision;
  const std::string state = text_or(w, "optimizer_state", "");
  config.optimizer_state_bytes = state == "fp32" ? 4 : state == "bf16" ? 2 : 0;
  return "";
}

// The optimizer, and whether the step runs it.
std::string read_optimizer(const json& w, const std::string& phase, training_config& config) {
  const std::string optimizer = text_or(w, "optimizer", "none");
  config.optimizer_step = phase == "train";
  if (optimizer == "adamw" || optimizer == "adam") {
    config.optimizer = optimizer_kind::adamw;
  } else if (optimizer == "adamw_8bit") {
    config.optimizer = optimizer_kind::adamw_8bit;
  } else if (optimizer == "adafactor") {
    config.optimizer = optimizer_kind::adafactor;
  } else if (optimizer == "sgd") {
    // torch.optim.SGD's default has no momentum and so no state; a stated optimizer_state is
    // the momentum buffer's dtype (validation README: "dtype of the optimizer moments").
    config.optimizer = w.value("optimizer_state", json()).is_string() ? optimizer_kind::sgd_momentum
                                                                      : optimizer_kind::sgd;
  } else if (optimizer == "none" && phase == "forward_backward") {
    config.optimizer = optimizer_kind::none;
  } else if (optimizer == "none" && !w.value("optimizer", json()).is_string()) {
    // Not stated for a training step: the documented default, AdamW (transformers Trainer's
    // adamw_torch), said in the point's note.
    config.optimizer = optimizer_kind::adamw;
  } else {
    return "optimizer " + optimizer + " is not modelled yet";
  }
  return "";
}

// The micro-batch and the sequence lengths.
std::string read_lengths(const json& p, const json& w, training_config& config,
                         std::string& defaults_note) {
  if (!w.value("micro_batch", json()).is_number_integer() ||
      !w.value("seq_len", json()).is_number_integer()) {
    return "micro_batch or seq_len not stated";
  }
  // The API's ranges (training_workload_reader.cpp): 1..2^20 sequences of 1..max_positions tokens.
  const json& micro = w.at("micro_batch");
  const json& seq = w.at("seq_len");
  if (!whole_in(micro, 1, 1ULL << 20) || !whole_in(seq, 1, max_positions))
    return "micro_batch must be in 1..1048576 and seq_len in 1.." + std::to_string(max_positions);
  config.micro_batch = micro.get<std::uint64_t>();
  config.seq_len = seq.get<std::uint64_t>();
  // An encoder-decoder's decoder length: gpumem's own points state it as a measure option; the
  // format's one length is otherwise taken for both stacks (the API's default).
  if (object_at(object_at(p, "model"), "config").value("is_encoder_decoder", json()) == true) {
    const auto target = count_option(p, "target_len", 9);
    if (target && *target > 0) {
      config.target_len = *target;
    } else {
      defaults_note += "; the decoder's length taken as seq_len (the format states one length)";
    }
  }
  return "";
}

// Activation checkpointing: none, every block, or selective.
std::string read_recomputation(const json& w, const std::string& framework, training_config& config,
                               std::string& defaults_note) {
  const json& ckpt = w.value("grad_ckpt", json());
  // "selective": the format's per-op or every-n-th-block recomputation, read as Megatron-LM's
  // selective recomputation (the attention core), which keeps everything else, or under
  // torchtitan as its per-op policy (its Llama configs' selective_ac_option "op").
  if (ckpt.is_string() && ckpt.get<std::string>() != "selective")
    return "grad_ckpt must be true, false, \"selective\" or null";
  config.selective_recompute = ckpt.is_string();
  if (config.selective_recompute)
    defaults_note += framework == "torchtitan"
                         ? "; selective checkpointing read as torchtitan's per-op policy"
                         : "; selective checkpointing read as recomputing the attention core only";
  // Unstated: the framework's default — torchtune's recipe configs enable activation
  // checkpointing (enable_activation_checkpointing: True), plain loops do not.
  config.grad_ckpt =
      ckpt.is_boolean() ? ckpt.get<bool>() : ckpt.is_null() && framework == "torchtune";
  return "";
}

// Gradient accumulation, which changes the peak, as a measure option.
std::string read_stated_accumulation(const json& p, training_config& config,
                                     std::string& defaults_note, bool& accumulation_stated) {
  if (measure_option(p, "grad_accumulation")) {
    const auto steps = count_option(p, "grad_accumulation", 5);
    if (!steps) return "malformed grad_accumulation option";
    config.grad_accumulation = *steps;
    accumulation_stated = true;
  }
  // The format's own field (validation README, workload.grad_accumulation).
  const json& stated = object_at(p, "workload").value("grad_accumulation", json());
  if (!accumulation_stated && whole_in(stated, 1, 65536)) {
    config.grad_accumulation = stated.get<std::uint64_t>();
    accumulation_stated = true;
  }
  // A source that names transformers' own argument in its description states the accumulation
  // its Trainer ran (TrainingArguments.gradient_accumulation_steps): "gradient_accumulation_steps
  // = N" or "gradient_accumulation_steps N" in original_notes, the source's text unchanged.
  if (!accumulation_stated) {
    if (const auto steps = argument_in_notes(p, "gradient_accumulation_steps")) {
      config.grad_accumulation = *steps;
      accumulation_stated = true;
      if (*steps > 1)
        defaults_note += "; gradient accumulation " + std::to_string(*steps) +
                         " read from the source's gradient_accumulation_steps";
    }
  }
  return "";
}

// gpumem's own points name a non-default AdamW implementation the same way.
void read_adamw_impl(const json& p, training_config& config) {
  const auto impl = measure_option(p, "optimizer_impl");
  if (impl == "fused") config.adamw_impl = adamw_implementation::fused;
  if (impl == "foreach") config.adamw_impl = adamw_implementation::foreach;
  if (impl == "for_loop") config.adamw_impl = adamw_implementation::for_loop;
}

// Unstated under litgpt: its fine-tuning scripts accumulate micro-batches up to their default
// global batch of 128 samples (finetune/*.py TrainArgs(global_batch_size=128); lit-gpt's
// batch_size = 128 before), gradient_accumulation_iters = 128 / (devices x micro_batch).
void default_accumulation(const json& parallel, const std::string& framework,
                          const std::string& phase, bool accumulation_stated,
                          training_config& config, std::string& defaults_note) {
  auto degree = [&](const char* key) { return count_or_one(parallel, key); };
  const std::uint64_t ranks = std::max<std::uint64_t>(degree("dp"), 1);
  if (!accumulation_stated && framework == "litgpt" && phase == "train" &&
      ranks * config.micro_batch < 128) {
    config.grad_accumulation = 128 / (ranks * config.micro_batch);
    defaults_note += "; gradient accumulation not stated, litgpt's global batch 128: " +
                     std::to_string(config.grad_accumulation);
  }
}

}  // namespace

// The probability a "measure option: dropout=P" assumption sets on every dropout, if any.
std::optional<double> dropout_option(const json& p) {
  const auto value = measure_option(p, "dropout");
  if (!value) return std::nullopt;
  char* end = nullptr;
  const double probability = std::strtod(value->c_str(), &end);
  if (end != value->c_str() + value->size() || !(probability >= 0 && probability <= 1))
    return std::nullopt;
  return probability;
}

bool is_offloaded(const json& parallel) {
  return flag_or(parallel, "cpu_offload", false) || !parallel.value("offload", json()).is_null();
}

std::string method_without_offload(const json& parallel) {
  const std::string method = text_or(parallel, "method", "");
  if (method == "zero3_cpu_offload") return "zero3";
  if (method == "fsdp_cpu_offload") return "fsdp_full_shard";
  return method;
}

// The detailed estimator's request for a validation point, or a reason it cannot be read yet.
// `defaults_note` says which documented defaults stood in for unstated details.
std::string training_config_for(const json& p, training_config& config,
                                std::string& defaults_note) {
  const json& w = object_at(p, "workload");
  const json& parallel = object_at(p, "parallel");
  const std::string phase = text_or(w, "phase", "");
  if (phase != "train" && phase != "forward_backward")
    return "phase " + phase + " is not modelled yet";
  if (auto why = read_parallel_layout(parallel, config, defaults_note); !why.empty()) return why;
  const std::string framework = text_or(w, "framework", "");
  read_context_parallel(parallel, framework, config, defaults_note);
  read_framework(p, framework, config, defaults_note);
  if (auto why = read_finetune(p, w, config, defaults_note); !why.empty()) return why;
  if (auto why = read_precision(w, config); !why.empty()) return why;
  read_software(w, framework, config, defaults_note);
  if (auto why = read_optimizer(w, phase, config); !why.empty()) return why;
  if (auto why = read_lengths(p, w, config, defaults_note); !why.empty()) return why;
  if (auto why = read_recomputation(w, framework, config, defaults_note); !why.empty()) return why;
  // Unstated: SDPA, or eager attention under torch 1.x, which has no SDPA.
  config.attention = attention_kernel_named(
      text_or(w, "attention", config.software.has_sdpa() ? "sdpa" : "eager"));
  if (!config.software.has_sdpa() && std::string(text_or(w, "attention", "")).empty())
    defaults_note += "; attention not stated: eager (torch 1.x has no SDPA)";
  bool accumulation_stated = false;
  if (auto why = read_stated_accumulation(p, config, defaults_note, accumulation_stated);
      !why.empty())
    return why;
  read_adamw_impl(p, config);
  default_accumulation(parallel, framework, phase, accumulation_stated, config, defaults_note);
  return "";
}

// AutoAWQ's release a point ran: the format names none, so the one current at its date
// (release_dates.hpp), else its last; said in the note.
void read_autoawq_release(const json& w, inference_config& config, std::string& defaults_note) {
  const json& software = w.value("software", json());
  const std::string date = software.is_object() ? text_or(software, "date", "") : "";
  config.autoawq = release_current_at(dated_library::autoawq, date);
  if (config.autoawq) {
    defaults_note += "; AutoAWQ release not stated: read as " +
                     release_name_with_patch(*config.autoawq) + ", current at " + date;
  } else {
    defaults_note +=
        "; AutoAWQ release not stated: its last, " + release_name_with_patch(autoawq_last_release);
  }
}

// The inference estimator's request for a validation point, or a reason it cannot be read yet.
// A stated kv_cache_tokens is a preallocated cache; otherwise the framework's own kind.
std::string inference_config_for(const json& p, inference_config& config,
                                 std::string& defaults_note) {
  const json& w = object_at(p, "workload");
  const json& parallel = object_at(p, "parallel");
  if (auto why = malformed_degree(parallel); !why.empty()) return why;
  if (is_offloaded(parallel)) return "offloaded runs are not modelled yet";
  // HF Trainer, accelerate, PEFT's example scripts and optimum run transformers' own generate
  // (optimum read as its PyTorch backend — optimum-benchmark's pytorch, the GPTQ integration —
  // since the format does not name ONNX Runtime or OpenVINO runs apart). AutoAWQ runs its fused
  // modules (from_quantized's default), their cache preallocated (autoawq_fused.hpp); unsloth's
  // inference path keeps caches of its own and stays unread.
  std::string framework = text_or(w, "framework", "transformers");
  for (const char* runs_transformers : {"hf_trainer", "accelerate", "peft_examples", "optimum"}) {
    if (framework == runs_transformers) framework = "transformers";
  }
  const auto profile = serving_framework_named(framework);
  if (!profile || *profile == serving_framework::llama_cpp)
    return "inference under " + framework + " is not modelled yet";
  config.framework = *profile;
  if (*profile == serving_framework::vllm) config.kv = kv_cache_kind::paged;
  if (*profile == serving_framework::autoawq) config.kv = kv_cache_kind::static_cache;
  const auto weights = weight_format_named(text_or(w, "weights", ""));
  if (!weights) return std::string("weights ") + text_or(w, "weights", "?") + " not modelled";
  config.weights.format = *weights;
  const std::string compute = text_or(w, "compute", "");
  if (compute.empty()) return "compute not stated";
  config.activation_bytes = compute == "fp32" ? 4 : 2;
  config.activation_bf16 = compute.find("bf16") != std::string::npos;
  config.weights.dense_bytes = config.activation_bytes;
  config.kv_bytes = config.activation_bytes;
  if (!whole_in(w.value("micro_batch", json()), 1, 1ULL << 20) ||
      !whole_in(w.value("seq_len", json()), 1, max_positions))
    return "micro_batch or seq_len not stated as 1..1048576 and 1.." +
           std::to_string(max_positions);
  config.batch = w.at("micro_batch").get<std::uint64_t>();
  config.prompt_tokens = w.at("seq_len").get<std::uint64_t>();
  config.new_tokens = whole_in(w.value("new_tokens", json()), 1, max_positions)
                          ? w.at("new_tokens").get<std::uint64_t>()
                          : 1;
  if (whole_in(w.value("kv_cache_tokens", json()), 1, max_positions)) {
    config.kv_cache_tokens = w.at("kv_cache_tokens").get<std::uint64_t>();
    if (config.kv != kv_cache_kind::paged) config.kv = kv_cache_kind::static_cache;
  }
  config.attention = attention_kernel_named(text_or(w, "attention", "sdpa"));
  // The transformers release generate() ran (validation README, workload.software), said in the
  // note; before 4.36 an unstated attention was eager.
  if (config.framework == serving_framework::autoawq)
    read_autoawq_release(w, config, defaults_note);
  if (config.framework == serving_framework::transformers ||
      config.framework == serving_framework::autoawq) {
    const json& software = w.value("software", json());
    const json& release = software.is_object() ? software.value("transformers", json()) : json();
    config.transformers =
        release.is_string() ? parse_library_release(release.get<std::string>()) : std::nullopt;
    // Unstated: the release current at the point's date (release_dates.hpp), else today's.
    const std::string date = software.is_object() ? text_or(software, "date", "") : "";
    if (!config.transformers) {
      config.transformers = release_current_at(dated_library::transformers, date);
      if (config.transformers)
        defaults_note += dated_reading("transformers", *config.transformers, date);
    }
    if (!config.transformers) {
      defaults_note += "; transformers release not stated: today's generate";
    } else if (std::string(text_or(w, "attention", "")).empty() &&
               config.framework == serving_framework::transformers &&
               transformers_eager_by_default(*config.transformers)) {
      config.attention = attention_kernel::eager;
      defaults_note += "; attention not stated: eager, transformers' default before 4.36";
    }
  }
  const std::string method = text_or(parallel, "method", "single");
  const std::uint64_t gpus = count_or_one(parallel, "gpus");
  if (method == "tensor_parallel") {
    config.tp_degree = gpus;
  } else if (method == "pipeline_layers") {
    config.pp_degree = gpus;
  } else if (method != "single") {
    return "inference method " + method + " is not modelled yet";
  }
  return "";
}

}  // namespace gpumem
