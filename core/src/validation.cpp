#include "gpumem/validation.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <nlohmann/json.hpp>

#include "gpumem/config_parser.hpp"
#include "gpumem/param_count.hpp"
#include "gpumem/step_time.hpp"
#include "request_reader.hpp"

namespace gpumem {

using nlohmann::json;

namespace {

std::string lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return text;
}

// The GPU preset a point's free-text GPU name describes, or "" when it names none. Only speed
// figures matter here, so an A100 whose memory is not stated reads as the 80 GB part (same
// FLOP/s and NVLink).
std::string gpu_preset_for(const json& gpu) {
  const std::string name = lower(gpu.value("name", ""));
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
  const std::string method = parallel.value("method", "");
  auto degree = [&](const char* key) {
    return parallel.contains(key) && parallel.at(key).is_number()
               ? parallel.at(key).get<std::uint64_t>()
               : 1;
  };
  if (parallel.value("cpu_offload", false)) {
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
    out.id = p.value("id", "");
    const json& parallel = p.value("parallel", json::object());
    const json& workload = p.value("workload", json::object());
    const json& throughput = p.at("throughput");
    out.method = parallel.value("method", "");
    auto skip = [&](const std::string& why) {
      out.note = why;
      report.points.push_back(out);
    };
    std::string note;
    const std::string method = method_for(parallel, note);
    if (method.empty()) {
      skip(note);
      continue;
    }
    if (workload.value("finetune", json()).is_string() &&
        workload.value("finetune", "") != "full") {
      skip("only full fine-tuning is timed");
      continue;
    }
    const json& micro = workload.value("micro_batch", json());
    const json& seq = workload.value("seq_len", json());
    if (!micro.is_number_integer() || !seq.is_number_integer()) {
      skip("micro_batch or seq_len not stated");
      continue;
    }
    const std::string gpu_id = gpu_preset_for(p.value("gpu", json::object()));
    if (gpu_id.empty()) {
      skip("the GPU is not stated precisely enough for its FLOP/s");
      continue;
    }
    const json config = p.contains("model") ? p.at("model").value("config", json()) : json();
    auto spec = parse_model_config(config, {}, "model.config");
    if (!spec.ok()) {
      skip("model config: " + spec.failure().message);
      continue;
    }
    auto counts = count_params(spec.value());
    auto cluster =
        read_cluster({{"cluster", {{"gpu", gpu_id}, {"gpus", parallel.value("gpus", 1)}}}});
    if (!counts.ok() || !cluster.ok()) {
      skip(!counts.ok() ? counts.failure().message : cluster.failure().message);
      continue;
    }
    // Eight GPUs per node, as in the DGX/HGX servers these runs used.
    cluster.value().gpus_per_node = std::min<std::uint64_t>(cluster.value().gpus, 8);
    parallel_config config_parallel;
    const std::uint64_t tp = parallel.contains("tp") && parallel.at("tp").is_number()
                                 ? parallel.at("tp").get<std::uint64_t>()
                                 : 1;
    step_time_options options;
    options.all_reduce_every_linear = false;  // Megatron-style TP in these frameworks
    options.recompute =
        workload.value("grad_ckpt", json()).is_boolean() && workload.at("grad_ckpt").get<bool>();
    const json& attention = workload.value("attention", json());
    options.causal_kernel = attention.is_string() && attention.get<std::string>() != "eager";
    const std::string compute = workload.value("compute", "");
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
    out.scored = out.measured > 0;
    if (!out.scored) {
      skip("measured value is not positive");
      continue;
    }
    out.relative_error = (out.estimated - out.measured) / out.measured;
    out.note = "read as " + method + " on " + gpu_id + (options.recompute ? ", recomputing" : "");
    by_method[out.method].push_back(std::fabs(out.relative_error));
    all.push_back(std::fabs(out.relative_error));
    report.points.push_back(out);
  }
  report.summary = summarize(all);
  for (const auto& [method, errors] : by_method)
    report.by_method.emplace_back(method, summarize(errors));
  return report;
}

}  // namespace gpumem
