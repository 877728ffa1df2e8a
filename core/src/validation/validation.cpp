#include "gpumem/validation/validation.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <utility>

#include "gpumem/inference/inference_step.hpp"
#include "gpumem/model/config_parser.hpp"
#include "gpumem/model/param_count.hpp"
#include "gpumem/offload/offload.hpp"
#include "gpumem/plan/step_time.hpp"
#include "gpumem/training/training_step.hpp"
#include "model/config_reader.hpp"
#include "model/gpu_preset.hpp"
#include "plan/workload_speed.hpp"
#include "text/number_text.hpp"
#include "validation/validation_point.hpp"

namespace gpumem {

using json = nlohmann::ordered_json;

namespace {

// The timing model's method for the point's parallel layout; "" with a note when unmodelled.
std::string method_for(const json& parallel, std::string& note) {
  // (An offloaded run's traffic is added by time_offload.)
  const std::string method = method_without_offload(parallel);
  auto degree = [&](const char* key) { return count_or_one(parallel, key); };
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

// Why a point's layout and workload are not timed ("" when they are); `method`: the step-time
// model's method for them.
std::string untimed(const json& parallel, const json& workload, std::string& method) {
  if (auto why = malformed_degree(parallel); !why.empty()) return why;
  std::string note;
  method = method_for(parallel, note);
  if (method.empty()) return note;
  const json& micro = workload.value("micro_batch", json());
  const json& seq = workload.value("seq_len", json());
  if (!whole_in(micro, 1, 1ULL << 20) || !whole_in(seq, 1, max_positions)) {
    return "micro_batch or seq_len not stated as 1..1048576 and 1.." +
           std::to_string(max_positions);
  }
  return "";
}

// How the step-time model reads a point's workload: its kernel, recomputation and precision.
step_time_options timing_options(const json& workload, const model_spec& spec,
                                 const param_count& counts, std::uint64_t seq_len) {
  step_time_options options;
  options.all_reduce_every_linear = false;  // Megatron-style TP in these frameworks
  // An unstated kernel is read as SDPA, as the memory replay reads it (validation_point.cpp).
  options.causal_kernel = std::string(text_or(workload, "attention", "sdpa")) != "eager";
  const json& ckpt = workload.value("grad_ckpt", json());
  const bool per_op =
      std::string(text_or(workload, "framework", "")) == "torchtitan" && ckpt == json("selective");
  options.recompute =
      recomputed_forwards(spec, counts, seq_len, options.causal_kernel, ckpt == true, per_op);
  const std::string compute = text_or(workload, "compute", "");
  options.bf16 = compute.find("bf16") != std::string::npos;
  options.fp32 = compute == "fp32";
  // Gradients are reduced in the stored weights' dtype (fp32 weights under autocast).
  options.gradient_bytes = std::string(text_or(workload, "weights", "")) == "fp32" ? 4.0 : 2.0;
  return options;
}

// The step-time model's parallel layout for a method method_for names.
parallel_config parallel_for(const std::string& method, std::uint64_t tp) {
  parallel_config config_parallel;
  if (method == "single") config_parallel = {parallel_method::single, 1, false};
  if (method == "cdp") config_parallel = {parallel_method::cdp, 1, false};
  if (method == "adp") config_parallel = {parallel_method::adp, 1, false};
  if (method == "tp") config_parallel = {parallel_method::tp, tp, false};
  if (method == "dp_tp") config_parallel = {parallel_method::dp_tp, tp, false};
  return config_parallel;
}

// The point's measured figure beside the estimate of the same quantity, and the relative error;
// why it is not scored ("" when it is).
std::string compare_throughput(const json& throughput, const step_time& speed, scored_point& out) {
  if (throughput.value("tokens_per_s_per_gpu", json()).is_number()) {
    out.quantity = "tokens_per_s_per_gpu";
    out.measured = throughput.at("tokens_per_s_per_gpu").get<double>();
    out.estimated = speed.tokens_per_s_per_gpu;
  } else if (throughput.value("step_time_s", json()).is_number()) {
    out.quantity = "step_time_s";
    out.measured = throughput.at("step_time_s").get<double>();
    out.estimated = speed.step_s;
  } else {
    return "no tokens/s or step time";
  }
  // From a millisecond-long step to a week, from a thousandth of a token to a billion a second.
  const bool step = out.quantity == "step_time_s";
  out.scored = step ? out.measured >= 1e-3 && out.measured <= 1e6
                    : out.measured >= 1e-3 && out.measured <= 1e9;
  if (!out.scored) {
    return step ? "step_time_s must be in 0.001..1000000 s"
                : "tokens_per_s_per_gpu must be in 0.001..1000000000";
  }
  out.relative_error = (out.estimated - out.measured) / out.measured;
  return "";
}

// A measured throughput that would take more than the GPU's dense peak at the model's FLOPs per
// token (step_time.cpp, recomputation included): no step-time model can reach it, so the point's
// model, batch or throughput is probably misread; said in the note (the point stays scored).
std::string beyond_peak(const scored_point& point, const step_time& speed, double peak) {
  if (point.quantity != "tokens_per_s_per_gpu" || peak <= 0) return "";
  const double implied = point.measured * speed.flops_per_token;
  if (implied <= peak) return "";
  return "; the measured throughput takes " + grouped_number(implied / 1e12, 0) +
         " TFLOP/s per GPU at this model's FLOPs per token, above the GPU's dense peak of " +
         grouped_number(peak / 1e12, 0) + ": its model, batch or throughput is probably misread";
}

// An offloaded point's step: the seconds its host traffic and CPU optimizer add (offload.hpp, as
// a plan times an offload candidate), from the replay of its step as the memory scoring reads it;
// why it cannot be timed ("" when it can).
std::string time_offload(const json& p, const model_spec& spec, const cluster_spec& cluster,
                         step_time& speed) {
  training_config config;
  std::string defaults;
  if (auto why = training_config_for(p, config, defaults); !why.empty()) return why;
  auto estimate = estimate_training_step(spec, config, cluster.gpu);
  if (!estimate.ok()) return estimate.failure().message;
  add_offload_time(speed, offload_footprint(spec, config, estimate.value()), cluster);
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
    std::string method;
    if (auto why = untimed(parallel, workload, method); !why.empty()) {
      skip(why);
      continue;
    }
    const json& micro = workload.value("micro_batch", json());
    const json& seq = workload.value("seq_len", json());
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
    auto gpu = gpu_from_preset(gpu_id, "gpu");
    if (!counts.ok() || !gpu.ok()) {
      skip(!counts.ok() ? counts.failure().message : gpu.failure().message);
      continue;
    }
    cluster_spec cluster = cluster_of(gpu.value(), count_or_one(parallel, "gpus"));
    // Eight GPUs per node, as in the DGX/HGX servers these runs used.
    cluster.gpus_per_node = std::min<std::uint64_t>(cluster.gpus, 8);
    step_time_options options =
        timing_options(workload, spec.value(), counts.value(), seq.get<std::uint64_t>());
    // Where the point reads as a training request, the step is timed as a plan times it
    // (workload_speed: precision, optimizer and its implementation, adapters, accumulation).
    training_config run;
    std::string defaults;
    const std::string unread = training_config_for(p, run, defaults);
    if (!unread.empty() && std::string(text_or(workload, "finetune", "full")) != "full") {
      skip("adapters are timed as the training request the point reads as: " + unread);
      continue;
    }
    if (unread.empty()) {
      const double gradient_bytes = options.gradient_bytes;
      options = workload_speed(spec.value(), counts.value(), run, plan_options{});
      options.all_reduce_every_linear = false;
      options.gradient_bytes = gradient_bytes;
      options.grad_accumulation = run.grad_accumulation;
    }
    const std::string named = text_or(parallel, "method", "");
    options.optimizer_sharded = named != "ddp" && named != "single";
    options.gathers_per_module = named.rfind("zero3", 0) == 0;
    auto speed = estimate_step_time(spec.value(), counts.value(), cluster,
                                    parallel_for(method, count_or_one(parallel, "tp")),
                                    micro.get<std::uint64_t>(), seq.get<std::uint64_t>(), options);
    const bool offloaded = is_offloaded(parallel);
    if (offloaded) {
      if (auto why = time_offload(p, spec.value(), cluster, speed); !why.empty()) {
        skip(why);
        continue;
      }
    }
    if (auto why = compare_throughput(throughput, speed, out); !why.empty()) {
      skip(why);
      continue;
    }
    out.note =
        "read as " + method + " on " + gpu_id + (options.recompute > 0 ? ", recomputing" : "");
    if (offloaded) {
      out.note += "; the offload adds " + grouped_number(speed.offload_s, 1) +
                  " s (host link, NVMe and the CPU optimizer at the default host speeds)";
    }
    out.note += beyond_peak(out, speed, matmul_flops(cluster.gpu, options.bf16, options.fp32));
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

// A point's text as a note quotes it: cut to a readable length (at a character's start).
std::string clipped(const std::string& text) {
  if (text.size() <= 40) return text;
  std::size_t cut = 40;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return text.substr(0, cut) + "…";
}

constexpr double min_measured_gib = 1e-3;
constexpr double max_measured_gib = 1e5;

// A point's identity, kind and measured figure; why it is not scored ("" when it is read on).
std::string read_measured(const json& p, std::size_t index, memory_point& out) {
  if (!p.is_object()) {
    out.id = "#" + std::to_string(index);
    return "not a point: a point is a JSON object";
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
    return "not scored: kind '" + clipped(out.kind) + "' is not a peak or a bound";
  }
  if (!p.value("measured_gib", json()).is_number()) {
    return "measured_gib is missing or not a number";
  }
  out.measured_gib = p.at("measured_gib").get<double>();
  // A GPU's or a host's memory, from 1 MiB to 100 TiB: anything else is a typo, and a figure
  // near 0 would make the relative error infinite.
  if (!(out.measured_gib >= min_measured_gib && out.measured_gib <= max_measured_gib)) {
    return "measured_gib must be in 0.001..100000 GiB";
  }
  return "";
}

// The point's model as the estimators read it; why it is not scored ("" when it is).
std::string read_model(const json& p, model_spec& spec) {
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
  auto parsed = parse_model_config(model_config, options, "model.config");
  if (!parsed.ok()) return "model config: " + parsed.failure().message;
  if (!parsed.value().warnings.empty())
    return "model_type read as a Llama-like fallback; not scored";
  spec = std::move(parsed.value());
  // gpumem's own points state the dropout probability they set on every dropout of the model
  // config ("measure option: dropout=P"), which the format's config does not carry.
  if (const auto dropout = dropout_option(p)) {
    spec.attention_dropout = *dropout;
    spec.hidden_dropout = *dropout;
  }
  return "";
}

// The GPU the point ran on, as the estimators read it (`gpu_id`: its preset, "" when not named).
gpu_spec gpu_for(const json& p, const std::string& gpu_id) {
  gpu_spec gpu;
  auto preset = gpu_from_preset(gpu_id.empty() ? "a100-sxm4-80gb" : gpu_id, "gpu");
  if (preset.ok()) gpu = preset.value();
  // A GPU not named precisely keeps the A100's runtime figures with the memory the point
  // states: what the run had to fit in.
  const json& stated_memory = object_at(p, "gpu").value("memory_gib", json());
  if (gpu_id.empty() && stated_memory.is_number() && stated_memory.get<double>() > 0 &&
      stated_memory.get<double>() < 1e6)
    gpu.memory_bytes = static_cast<std::uint64_t>(stated_memory.get<double>() * (1ULL << 30));
  return gpu;
}

// The replay's figures on the measured rank (a host figure for offloaded training).
struct replayed_peak {
  std::uint64_t allocated = 0;
  std::uint64_t reserved = 0;
  std::uint64_t device_used = 0;
  std::uint64_t host_bytes = 0;
  std::string peak_phase;
};

// The inference replay's figures; its refusal's message, if any.
std::optional<std::string> replay_inference(const model_spec& spec, const inference_config& serving,
                                            const gpu_spec& gpu, std::uint64_t context_bytes,
                                            replayed_peak& r) {
  // The measured rank is rank 0 (cuda:0): the first pipeline stage.
  auto estimate = estimate_inference(spec, serving, gpu);
  if (!estimate.ok()) return estimate.failure().message;
  const inference_estimate& e = estimate.value();
  r.allocated = e.peak.allocated;
  r.reserved = e.peak_reserved;
  r.device_used = inference_device_used(e, context_bytes);
  r.peak_phase = e.peak.phase;
  return std::nullopt;
}

// The training replay's figures (`config` becomes the stage replayed); its refusal's message,
// if any.
std::optional<std::string> replay_training(const model_spec& spec, training_config& config,
                                           const gpu_spec& gpu, std::uint64_t context_bytes,
                                           const char* metric, replayed_peak& r) {
  // A pipeline's stages differ (embeddings first, LM head last, 1F1B in-flight
  // micro-batches): the busiest one, which decides whether the run fits.
  const auto in_metric = [&](const training_estimate& e) {
    return peak_in_metric(metric, e.peak.allocated, e.peak_reserved,
                          device_used_bytes(e, context_bytes));
  };
  auto estimate = estimate_training_step(spec, config, gpu);
  for (std::uint64_t stage = 1; estimate.ok() && stage < config.pp_degree; ++stage) {
    training_config staged = config;
    staged.pp_stage = stage;
    auto next = estimate_training_step(spec, staged, gpu);
    if (!next.ok() || in_metric(next.value()) > in_metric(estimate.value())) {
      estimate = std::move(next);
      config = staged;
    }
  }
  if (!estimate.ok()) return estimate.failure().message;
  const training_estimate& e = estimate.value();
  r.allocated = e.peak.allocated;
  r.reserved = e.peak_reserved;
  r.device_used = device_used_bytes(e, context_bytes);
  // Rank 0's process: the step's host side, or the checkpoint it loaded if that was more.
  host_footprint host = offload_footprint(spec, config, e);
  checkpoint_load_bytes(spec, config, 1, host);
  r.host_bytes = std::max(host.host_bytes, host.load_bytes);
  r.peak_phase = e.peak.phase;
  return std::nullopt;
}

// How the point was read, as its note says.
std::string reading_note(const json& p, const memory_point& out, bool inference, bool bound,
                         const std::string& peak_phase, const std::string& defaults_note,
                         const std::string& gpu_id) {
  const bool optimizer_unstated =
      !inference && !p.at("workload").value("optimizer", json()).is_string();
  return std::string("peak in ") + peak_phase +
         (bound                     ? "; judged on the device footprint, as fits is"
          : out.metric == "unknown" ? "; unknown metric read as allocated"
                                    : "") +
         (optimizer_unstated ? "; optimizer not stated, read as AdamW" : "") + defaults_note +
         (gpu_id.empty() ? "; GPU not stated precisely: its runtime figures are the A100's" : "");
}

// The absolute relative errors each summary is made of.
struct memory_errors {
  std::vector<double> all;
  std::map<std::string, std::vector<double>> by_phase;
  std::map<std::string, std::vector<double>> by_finetune;
  std::map<std::string, std::vector<double>> by_trust;
  std::vector<double> host;
};

// A read point's estimate (`bytes` in its metric) against what was measured: a peak's relative
// error, an offloaded run's under a phase key of its own with its host figure's, or whether a
// bound holds.
void score(const json& p, double bytes, bool offloaded, std::uint64_t host_bytes, memory_point& out,
           memory_errors& errors, memory_report& report) {
  out.estimated_gib = bytes / (1ULL << 30);
  out.scored = true;
  if (offloaded) out.phase += " (offload)";
  if (offloaded && p.value("measured_host_gib", json()).is_number()) {
    // The host side of the same replay, per rank (the process a host figure describes).
    out.host_scored = true;
    out.measured_host_gib = p.at("measured_host_gib").get<double>();
    out.estimated_host_gib = static_cast<double>(host_bytes) / (1ULL << 30);
    out.host_relative_error =
        (out.estimated_host_gib - out.measured_host_gib) / out.measured_host_gib;
    errors.host.push_back(std::fabs(out.host_relative_error));
  }
  if (out.kind == "peak") {
    out.relative_error = (out.estimated_gib - out.measured_gib) / out.measured_gib;
    errors.by_phase[out.phase].push_back(std::fabs(out.relative_error));
    if (!offloaded) {
      errors.all.push_back(std::fabs(out.relative_error));
      errors.by_finetune[out.finetune].push_back(std::fabs(out.relative_error));
      errors.by_trust[out.trust].push_back(std::fabs(out.relative_error));
    }
  } else {
    out.bound_correct = out.kind == "oom_lower_bound" ? out.estimated_gib > out.measured_gib
                                                      : out.estimated_gib <= out.measured_gib;
    ++report.bounds_total;
    report.bounds_correct += out.bound_correct;
  }
}

// The report's summaries of the scored points.
void fill_summaries(const memory_errors& errors, memory_report& report) {
  report.summary = summarize(errors.all);
  report.host = summarize(errors.host);
  for (const auto& [k, e] : errors.by_phase) report.by_phase.emplace_back(k, summarize(e));
  for (const auto& [k, e] : errors.by_finetune) report.by_finetune.emplace_back(k, summarize(e));
  for (const auto& [k, e] : errors.by_trust) report.by_trust.emplace_back(k, summarize(e));
}

}  // namespace

memory_report validate_memory(const json& points) {
  memory_report report;
  memory_errors errors;
  if (!points.is_array()) return report;
  // Every input point is listed: scored, or with the reason it is not.
  for (std::size_t index = 0; index < points.size(); ++index) {
    const json& p = points[index];
    memory_point out;
    auto skip = [&](const std::string& why) {
      out.note = why;
      report.points.push_back(out);
    };
    if (auto why = read_measured(p, index, out); !why.empty()) {
      skip(why);
      continue;
    }
    const bool inference = out.phase == "inference";
    training_config config;
    inference_config serving;
    std::string defaults_note;
    const std::string reason = inference ? inference_config_for(p, serving, defaults_note)
                                         : training_config_for(p, config, defaults_note);
    if (!reason.empty()) {
      skip(reason);
      continue;
    }
    model_spec spec;
    if (auto why = read_model(p, spec); !why.empty()) {
      skip(why);
      continue;
    }
    const std::string gpu_id = gpu_preset_for(object_at(p, "gpu"));
    const gpu_spec gpu = gpu_for(p, gpu_id);
    const std::uint64_t context_bytes = default_cuda_context_bytes(gpu.architecture);
    // The format's nvml_used is the API's device_used; unknown reads as allocated. A bound says
    // whether the run fitted the memory it had, which the estimator decides as the API's `fits`
    // does: on the whole device footprint (device_used).
    const bool bound = out.kind != "peak";
    const char* metric = out.metric == "nvml_used" || bound ? "device_used"
                         : out.metric == "reserved"         ? "reserved"
                                                            : "allocated";
    // The replay's figures (a host figure for offloaded training), then the point's metric.
    replayed_peak r;
    const auto failure = inference ? replay_inference(spec, serving, gpu, context_bytes, r)
                                   : replay_training(spec, config, gpu, context_bytes, metric, r);
    if (failure) {
      skip(*failure);
      continue;
    }
    const double bytes =
        static_cast<double>(peak_in_metric(metric, r.allocated, r.reserved, r.device_used));
    out.note = reading_note(p, out, inference, bound, r.peak_phase, defaults_note, gpu_id);
    // Offloaded runs are reported apart (their own phase key), outside the overall summary.
    const bool offloaded = !inference && config.offload.any();
    score(p, bytes, offloaded, r.host_bytes, out, errors, report);
    report.points.push_back(out);
  }
  fill_summaries(errors, report);
  return report;
}

}  // namespace gpumem
