#include "gpumem/validation/validation.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <map>
#include <nlohmann/json.hpp>

#include "api/request_reader.hpp"
#include "gpumem/inference/inference_step.hpp"
#include "gpumem/model/config_parser.hpp"
#include "gpumem/model/param_count.hpp"
#include "gpumem/parallel/offload.hpp"
#include "gpumem/plan/step_time.hpp"
#include "gpumem/training/training_step.hpp"
#include "model/config_reader.hpp"

namespace gpumem {

using json = nlohmann::ordered_json;

namespace {

// The member `key` of a point when it is an object, else an empty one (the format's objects may
// be malformed in a file; a point is then skipped, never thrown on).
json object_at(const json& point, const char* key) {
  auto it = point.find(key);
  return it != point.end() && it->is_object() ? *it : json::object();
}

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
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

// The timing model's method for the point's parallel layout; "" with a note when unmodelled.
std::string method_for(const json& parallel, std::string& note) {
  const std::string method = text_or(parallel, "method", "");
  auto degree = [&](const char* key) { return count_or_one(parallel, key); };
  if (flag_or(parallel, "cpu_offload", false)) {
    note = "offloaded runs are timed by the offload model (not yet built)";
    return "";
  }
  if (degree("pp") > 1 || degree("cp") > 1) {
    note = "pipeline and context parallelism are not in the step-time model";
    return "";
  }
  const bool tp = degree("tp") > 1;
  if (method == "single") return "single";
  // ZeRO-1/2 reduce-scatter gradients and all-gather parameters: DDP's all-reduce volume.
  if (method == "ddp" || method == "zero1" || method == "zero2" || method == "fsdp_no_shard" ||
      method == "fsdp_shard_grad_op") {
    return tp ? "dp_tp" : "cdp";
  }
  if (method == "zero3" || method == "fsdp_full_shard" || method == "gemini")
    return tp ? "dp_tp" : "adp";
  if (method == "tensor_parallel") return "tp";
  note = "method " + method + " is not in the step-time model";
  return "";
}

}  // namespace

error_summary summarize(const std::vector<double>& abs_errors) {
  error_summary s;
  s.n = abs_errors.size();
  if (s.n == 0) return s;
  std::vector<double> sorted = abs_errors;
  std::sort(sorted.begin(), sorted.end());
  s.median_abs_rel_error =
      s.n % 2 == 1 ? sorted[s.n / 2] : (sorted[s.n / 2 - 1] + sorted[s.n / 2]) / 2;
  const std::size_t rank = static_cast<std::size_t>(std::ceil(0.9 * static_cast<double>(s.n)));
  s.p90_abs_rel_error = sorted[std::max<std::size_t>(rank, 1) - 1];
  std::size_t within10 = 0;
  std::size_t within25 = 0;
  for (double e : sorted) {
    within10 += e <= 0.10;
    within25 += e <= 0.25;
  }
  s.within_10pct = static_cast<double>(within10) / static_cast<double>(s.n);
  s.within_25pct = static_cast<double>(within25) / static_cast<double>(s.n);
  return s;
}

step_time_report validate_step_time(const json& points) {
  step_time_report report;
  std::map<std::string, std::vector<double>> by_method;
  std::vector<double> all;
  if (!points.is_array()) return report;
  for (const auto& p : points) {
    if (!p.is_object() || !p.contains("throughput") || !p.at("throughput").is_object()) continue;
    scored_point out;
    out.id = text_or(p, "id", "");
    const json& parallel = object_at(p, "parallel");
    const json& workload = object_at(p, "workload");
    const json& throughput = p.at("throughput");
    out.method = text_or(parallel, "method", "");
    auto skip = [&](const std::string& why) {
      out.note = why;
      report.points.push_back(out);
    };
    if (auto why = malformed_degree(parallel); !why.empty()) {
      skip(why);
      continue;
    }
    std::string note;
    const std::string method = method_for(parallel, note);
    if (method.empty()) {
      skip(note);
      continue;
    }
    if (workload.value("finetune", json()).is_string() &&
        std::string(text_or(workload, "finetune", "")) != "full") {
      skip("only full fine-tuning is timed");
      continue;
    }
    const json& micro = workload.value("micro_batch", json());
    const json& seq = workload.value("seq_len", json());
    if (!whole_in(micro, 1, 1ULL << 20) || !whole_in(seq, 1, max_positions)) {
      skip("micro_batch or seq_len not stated as 1..1048576 and 1.." +
           std::to_string(max_positions));
      continue;
    }
    const std::string gpu_id = gpu_preset_for(object_at(p, "gpu"));
    if (gpu_id.empty()) {
      skip("the GPU is not stated precisely enough for its FLOP/s");
      continue;
    }
    const json config = object_at(p, "model").value("config", json());
    auto spec = parse_model_config(config, {}, "model.config");
    if (!spec.ok()) {
      skip("model config: " + spec.failure().message);
      continue;
    }
    auto counts = count_params(spec.value());
    auto cluster =
        read_cluster({{"cluster", {{"gpu", gpu_id}, {"gpus", count_or_one(parallel, "gpus")}}}});
    if (!counts.ok() || !cluster.ok()) {
      skip(!counts.ok() ? counts.failure().message : cluster.failure().message);
      continue;
    }
    // Eight GPUs per node, as in the DGX/HGX servers these runs used.
    cluster.value().gpus_per_node = std::min<std::uint64_t>(cluster.value().gpus, 8);
    parallel_config config_parallel;
    const std::uint64_t tp = count_or_one(parallel, "tp");
    step_time_options options;
    options.all_reduce_every_linear = false;  // Megatron-style TP in these frameworks
    const json& attention = workload.value("attention", json());
    options.causal_kernel = attention.is_string() && attention.get<std::string>() != "eager";
    const json& ckpt = workload.value("grad_ckpt", json());
    const bool per_op = std::string(text_or(workload, "framework", "")) == "torchtitan" &&
                        ckpt == json("selective");
    options.recompute = recomputed_forwards(spec.value(), counts.value(), seq.get<std::uint64_t>(),
                                            options.causal_kernel, ckpt == true, per_op);
    const std::string compute = text_or(workload, "compute", "");
    options.bf16 = compute.find("bf16") != std::string::npos;
    if (method == "single") config_parallel = {parallel_method::single, 1, false};
    if (method == "cdp") config_parallel = {parallel_method::cdp, 1, false};
    if (method == "adp") config_parallel = {parallel_method::adp, 1, false};
    if (method == "tp") config_parallel = {parallel_method::tp, tp, false};
    if (method == "dp_tp") config_parallel = {parallel_method::dp_tp, tp, false};
    const auto speed =
        estimate_step_time(spec.value(), counts.value(), cluster.value(), config_parallel,
                           micro.get<std::uint64_t>(), seq.get<std::uint64_t>(), options);
    if (throughput.value("tokens_per_s_per_gpu", json()).is_number()) {
      out.quantity = "tokens_per_s_per_gpu";
      out.measured = throughput.at("tokens_per_s_per_gpu").get<double>();
      out.estimated = speed.tokens_per_s_per_gpu;
    } else if (throughput.value("step_time_s", json()).is_number()) {
      out.quantity = "step_time_s";
      out.measured = throughput.at("step_time_s").get<double>();
      out.estimated = speed.step_s;
    } else {
      skip("no tokens/s or step time");
      continue;
    }
    // From a millisecond-long step to a week, from a thousandth of a token to a billion a second.
    const bool step = out.quantity == "step_time_s";
    out.scored = step ? out.measured >= 1e-3 && out.measured <= 1e6
                      : out.measured >= 1e-3 && out.measured <= 1e9;
    if (!out.scored) {
      skip(step ? "step_time_s must be in 0.001..1000000 s"
                : "tokens_per_s_per_gpu must be in 0.001..1000000000");
      continue;
    }
    out.relative_error = (out.estimated - out.measured) / out.measured;
    out.note =
        "read as " + method + " on " + gpu_id + (options.recompute > 0 ? ", recomputing" : "");
    by_method[out.method].push_back(std::fabs(out.relative_error));
    all.push_back(std::fabs(out.relative_error));
    report.points.push_back(out);
  }
  report.summary = summarize(all);
  for (const auto& [method, errors] : by_method)
    report.by_method.emplace_back(method, summarize(errors));
  return report;
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

// The detailed estimator's request for a validation point, or a reason it cannot be read yet.
// `defaults_note` says which documented defaults stood in for unstated details.
std::string training_config_for(const json& p, training_config& config,
                                std::string& defaults_note) {
  const json& w = object_at(p, "workload");
  const json& parallel = object_at(p, "parallel");
  const std::string phase = text_or(w, "phase", "");
  if (phase != "train" && phase != "forward_backward")
    return "phase " + phase + " is not modelled yet";
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
  std::string method = text_or(parallel, "method", "");
  if (method == "fsdp_no_shard") method = "ddp";
  // The format names offloaded ZeRO-3 and FSDP runs apart; their placement is in `offload`.
  if (method == "zero3_cpu_offload") method = "zero3";
  if (method == "fsdp_cpu_offload") method = "fsdp_full_shard";
  if (method == "tensor_parallel") method = "single";
  const auto sharding = data_parallel_named(method);
  if (!sharding) return "method " + method + " is not modelled yet in detailed mode";
  config.sharding = *sharding;
  const std::string framework = text_or(w, "framework", "");
  // Context parallelism: the states are sharded over the data- and context-parallel ranks. The
  // format does not say ring or Ulysses: DeepSpeed's own sequence parallelism is Ulysses — in
  // DeepSpeed scripts and in Megatron-DeepSpeed, the Megatron that runs ZeRO-2/3 (Megatron-LM
  // has no such stage) — the rest ring attention (Megatron-LM, torchtitan).
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
  }
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
  config.attention = attention_kernel_named(text_or(w, "attention", "sdpa"));
  // Gradient accumulation, which changes the peak, as a measure option.
  bool accumulation_stated = false;
  if (measure_option(p, "grad_accumulation")) {
    const auto steps = count_option(p, "grad_accumulation", 5);
    if (!steps) return "malformed grad_accumulation option";
    config.grad_accumulation = *steps;
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
  // gpumem's own points name a non-default AdamW implementation the same way.
  const auto impl = measure_option(p, "optimizer_impl");
  if (impl == "fused") config.adamw_impl = adamw_implementation::fused;
  if (impl == "foreach") config.adamw_impl = adamw_implementation::foreach;
  if (impl == "for_loop") config.adamw_impl = adamw_implementation::for_loop;
  // Unstated under litgpt: its fine-tuning scripts accumulate micro-batches up to their default
  // global batch of 128 samples (finetune/*.py TrainArgs(global_batch_size=128); lit-gpt's
  // batch_size = 128 before), gradient_accumulation_iters = 128 / (devices x micro_batch).
  const std::uint64_t ranks = std::max<std::uint64_t>(degree("dp"), 1);
  if (!accumulation_stated && framework == "litgpt" && phase == "train" &&
      ranks * config.micro_batch < 128) {
    config.grad_accumulation = 128 / (ranks * config.micro_batch);
    defaults_note += "; gradient accumulation not stated, litgpt's global batch 128: " +
                     std::to_string(config.grad_accumulation);
  }
  return "";
}

// The inference estimator's request for a validation point, or a reason it cannot be read yet.
// A stated kv_cache_tokens is a preallocated cache; otherwise the framework's own kind.
std::string inference_config_for(const json& p, inference_config& config) {
  const json& w = object_at(p, "workload");
  const json& parallel = object_at(p, "parallel");
  if (auto why = malformed_degree(parallel); !why.empty()) return why;
  if (flag_or(parallel, "cpu_offload", false) || !parallel.value("offload", json()).is_null())
    return "offloaded runs are not modelled yet";
  // HF Trainer, accelerate, PEFT's example scripts and optimum run transformers' own generate
  // (optimum read as its PyTorch backend — optimum-benchmark's pytorch, the GPTQ integration —
  // since the format does not name ONNX Runtime or OpenVINO runs apart). AutoAWQ's fused modules
  // and unsloth's inference path keep caches of their own and stay unread.
  std::string framework = text_or(w, "framework", "transformers");
  for (const char* runs_transformers : {"hf_trainer", "accelerate", "peft_examples", "optimum"}) {
    if (framework == runs_transformers) framework = "transformers";
  }
  const auto profile = serving_framework_named(framework);
  if (!profile || *profile == serving_framework::llama_cpp)
    return "inference under " + framework + " is not modelled yet";
  config.framework = *profile;
  if (*profile == serving_framework::vllm) config.kv = kv_cache_kind::paged;
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

// A point's text as a note quotes it: cut to a readable length (at a character's start).
std::string clipped(const std::string& text) {
  if (text.size() <= 40) return text;
  std::size_t cut = 40;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return text.substr(0, cut) + "…";
}

constexpr double min_measured_gib = 1e-3;
constexpr double max_measured_gib = 1e5;

}  // namespace

memory_report validate_memory(const json& points) {
  memory_report report;
  std::vector<double> all;
  std::map<std::string, std::vector<double>> by_phase;
  std::map<std::string, std::vector<double>> by_finetune;
  std::map<std::string, std::vector<double>> by_trust;
  std::vector<double> host_errors;
  if (!points.is_array()) return report;
  // Every input point is listed: scored, or with the reason it is not.
  for (std::size_t index = 0; index < points.size(); ++index) {
    const json& p = points[index];
    memory_point out;
    auto skip = [&](const std::string& why) {
      out.note = why;
      report.points.push_back(out);
    };
    if (!p.is_object()) {
      out.id = "#" + std::to_string(index);
      skip("not a point: a point is a JSON object");
      continue;
    }
    out.id = text_or(p, "id", "");
    if (out.id.empty()) out.id = "#" + std::to_string(index);
    out.kind = text_or(p, "kind", "");
    out.metric = text_or(p, "metric", "unknown");
    out.trust = text_or(p, "trust", "");
    const json& w = object_at(p, "workload");
    out.phase = text_or(w, "phase", "");
    out.finetune = text_or(w, "finetune", "");
    if (out.kind != "peak" && out.kind != "oom_lower_bound" && out.kind != "capacity_upper_bound") {
      skip("not scored: kind '" + clipped(out.kind) + "' is not a peak or a bound");
      continue;
    }
    if (!p.value("measured_gib", json()).is_number()) {
      skip("measured_gib is missing or not a number");
      continue;
    }
    out.measured_gib = p.at("measured_gib").get<double>();
    // A GPU's or a host's memory, from 1 MiB to 100 TiB: anything else is a typo, and a figure
    // near 0 would make the relative error infinite.
    if (!(out.measured_gib >= min_measured_gib && out.measured_gib <= max_measured_gib)) {
      skip("measured_gib must be in 0.001..100000 GiB");
      continue;
    }
    const bool inference = out.phase == "inference";
    training_config config;
    inference_config serving;
    std::string defaults_note;
    const std::string reason = inference ? inference_config_for(p, serving)
                                         : training_config_for(p, config, defaults_note);
    if (!reason.empty()) {
      skip(reason);
      continue;
    }
    json model_config = object_at(p, "model").value("config", json());
    // The format names the KV heads num_key_value_heads for every model; Falcon's config.json
    // calls them num_kv_heads (transformers FalconConfig).
    if (model_config.is_object() && model_config.value("model_type", json()) == "falcon" &&
        model_config.contains("num_key_value_heads") && !model_config.contains("num_kv_heads"))
      model_config["num_kv_heads"] = model_config["num_key_value_heads"];
    // The format gives `num_labels` for BERT sequence classification (validation README).
    model_options options;
    if (model_config.is_object() && model_config.value("model_type", json()) == "bert" &&
        model_config.contains("num_labels") && !model_config.contains("architectures"))
      options.task_head = "sequence_classification";
    auto spec = parse_model_config(model_config, options, "model.config");
    if (!spec.ok()) {
      skip("model config: " + spec.failure().message);
      continue;
    }
    if (!spec.value().warnings.empty()) {
      skip("model_type read as a Llama-like fallback; not scored");
      continue;
    }
    // gpumem's own points state the dropout probability they set on every dropout of the model
    // config ("measure option: dropout=P"), which the format's config does not carry.
    if (const auto dropout = dropout_option(p)) {
      spec.value().attention_dropout = *dropout;
      spec.value().hidden_dropout = *dropout;
    }
    gpu_spec gpu;
    const std::string gpu_id = gpu_preset_for(object_at(p, "gpu"));
    auto cluster =
        read_cluster({{"cluster", {{"gpu", gpu_id.empty() ? "a100-sxm4-80gb" : gpu_id}}}});
    if (cluster.ok()) gpu = cluster.value().gpu;
    // A GPU not named precisely keeps the A100's runtime figures with the memory the point
    // states: what the run had to fit in.
    const json& stated_memory = object_at(p, "gpu").value("memory_gib", json());
    if (gpu_id.empty() && stated_memory.is_number() && stated_memory.get<double>() > 0 &&
        stated_memory.get<double>() < 1e6)
      gpu.memory_bytes = static_cast<std::uint64_t>(stated_memory.get<double>() * (1ULL << 30));
    const std::uint64_t context_bytes = default_cuda_context_bytes(gpu.architecture);
    // The format's nvml_used is the API's device_used; unknown reads as allocated. A bound says
    // whether the run fitted the memory it had, which the estimator decides as the API's `fits`
    // does: on the whole device footprint (device_used).
    const bool bound = out.kind != "peak";
    const char* metric = out.metric == "nvml_used" || bound ? "device_used"
                         : out.metric == "reserved"         ? "reserved"
                                                            : "allocated";
    // The replay's figures (a host figure for offloaded training), then the point's metric.
    std::uint64_t allocated = 0;
    std::uint64_t reserved = 0;
    std::uint64_t device_used = 0;
    std::uint64_t host_bytes = 0;
    std::string peak_phase;
    if (inference) {
      // The measured rank is rank 0 (cuda:0): the first pipeline stage.
      auto estimate = estimate_inference(spec.value(), serving, gpu);
      if (!estimate.ok()) {
        skip(estimate.failure().message);
        continue;
      }
      const inference_estimate& e = estimate.value();
      allocated = e.peak.allocated;
      reserved = e.peak_reserved;
      device_used = inference_device_used(e, context_bytes);
      peak_phase = e.peak.phase;
    } else {
      // A pipeline's stages differ (embeddings first, LM head last, 1F1B in-flight
      // micro-batches): the busiest one, which decides whether the run fits.
      const auto in_metric = [&](const training_estimate& e) {
        return peak_in_metric(metric, e.peak.allocated, e.peak_reserved,
                              device_used_bytes(e, context_bytes));
      };
      auto estimate = estimate_training_step(spec.value(), config, gpu);
      for (std::uint64_t stage = 1; estimate.ok() && stage < config.pp_degree; ++stage) {
        training_config staged = config;
        staged.pp_stage = stage;
        auto next = estimate_training_step(spec.value(), staged, gpu);
        if (!next.ok() || in_metric(next.value()) > in_metric(estimate.value())) {
          estimate = std::move(next);
          config = staged;
        }
      }
      if (!estimate.ok()) {
        skip(estimate.failure().message);
        continue;
      }
      const training_estimate& e = estimate.value();
      allocated = e.peak.allocated;
      reserved = e.peak_reserved;
      device_used = device_used_bytes(e, context_bytes);
      // Rank 0's process: the step's host side, or the checkpoint it loaded if that was more.
      host_footprint host = offload_footprint(spec.value(), config, e);
      checkpoint_load_bytes(spec.value(), config, 1, host);
      host_bytes = std::max(host.host_bytes, host.load_bytes);
      peak_phase = e.peak.phase;
    }
    const double bytes =
        static_cast<double>(peak_in_metric(metric, allocated, reserved, device_used));
    const bool optimizer_unstated =
        !inference && !p.at("workload").value("optimizer", json()).is_string();
    out.note =
        std::string("peak in ") + peak_phase +
        (bound                     ? "; judged on the device footprint, as fits is"
         : out.metric == "unknown" ? "; unknown metric read as allocated"
                                   : "") +
        (optimizer_unstated ? "; optimizer not stated, read as AdamW" : "") + defaults_note +
        (gpu_id.empty() ? "; GPU not stated precisely: its runtime figures are the A100's" : "");
    out.estimated_gib = bytes / (1ULL << 30);
    out.scored = true;
    // Offloaded runs are reported apart (their own phase key), outside the overall summary.
    const bool offloaded = !inference && config.offload.any();
    if (offloaded) out.phase += " (offload)";
    if (offloaded && p.value("measured_host_gib", json()).is_number()) {
      // The host side of the same replay, per rank (the process a host figure describes).
      out.host_scored = true;
      out.measured_host_gib = p.at("measured_host_gib").get<double>();
      out.estimated_host_gib = static_cast<double>(host_bytes) / (1ULL << 30);
      out.host_relative_error =
          (out.estimated_host_gib - out.measured_host_gib) / out.measured_host_gib;
      host_errors.push_back(std::fabs(out.host_relative_error));
    }
    if (out.kind == "peak") {
      out.relative_error = (out.estimated_gib - out.measured_gib) / out.measured_gib;
      by_phase[out.phase].push_back(std::fabs(out.relative_error));
      if (!offloaded) {
        all.push_back(std::fabs(out.relative_error));
        by_finetune[out.finetune].push_back(std::fabs(out.relative_error));
        by_trust[out.trust].push_back(std::fabs(out.relative_error));
      }
    } else {
      out.bound_correct = out.kind == "oom_lower_bound" ? out.estimated_gib > out.measured_gib
                                                        : out.estimated_gib <= out.measured_gib;
      ++report.bounds_total;
      report.bounds_correct += out.bound_correct;
    }
    report.points.push_back(out);
  }
  report.summary = summarize(all);
  report.host = summarize(host_errors);
  for (const auto& [k, e] : by_phase) report.by_phase.emplace_back(k, summarize(e));
  for (const auto& [k, e] : by_finetune) report.by_finetune.emplace_back(k, summarize(e));
  for (const auto& [k, e] : by_trust) report.by_trust.emplace_back(k, summarize(e));
  return report;
}

}  // namespace gpumem
