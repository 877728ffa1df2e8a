#include "api/inference_json.hpp"

#include <algorithm>

#include "api/estimate_json.hpp"
#include "api/json_text.hpp"
#include "api/request_reader.hpp"
#include "gpumem/inference/inference_solver.hpp"
#include "gpumem/inference/inference_speed.hpp"
#include "model/config_reader.hpp"

namespace gpumem {

using json = nlohmann::ordered_json;
using nlohmann::ordered_json;

namespace {

std::uint64_t peak_in(const inference_estimate& e, const std::string& metric,
                      std::uint64_t context) {
  return peak_in_metric(metric, e.peak.allocated, e.peak_reserved,
                        inference_device_used(e, context));
}

ordered_json workload_json(const inference_config& c) {
  return {{"phase", "inference"},
          {"weights", weight_format_name(c.weights.format)},
          {"framework", serving_framework_name(c.framework)},
          {"micro_batch", c.batch},
          {"seq_len", c.prompt_tokens},
          {"new_tokens", c.new_tokens},
          {"attention", attention_kernel_name(c.attention)},
          {"kv_cache", {{"kind", kv_cache_kind_name(c.kv)}, {"element_bytes", c.kv_bytes}}}};
}

}  // namespace

result<ordered_json> inference_estimate_json(const json& request, const model_spec& spec,
                                             const param_count& counts, const cluster_spec& cluster,
                                             const std::string& metric,
                                             std::size_t timeline_samples,
                                             std::vector<std::string>& warnings) {
  auto read = read_inference_request(request, spec, cluster.gpus, warnings);
  if (!read.ok()) return read.failure();
  read.value().config.timeline_samples = timeline_samples;
  const inference_config& c = read.value().config;
  const std::uint64_t usable = cluster.gpu.memory_bytes - cluster.headroom_bytes;
  auto ranks = estimate_inference_ranks(spec, c, cluster.gpu, usable, cluster.cuda_context_bytes);
  if (!ranks.ok()) return ranks.failure();
  const inference_ranks& r = ranks.value();
  const inference_estimate& worst = r.stages[r.worst];

  ordered_json out = json_object(32);
  out["parallel"] = {{"method", read.value().method}, {"tp", c.tp_degree}, {"pp", c.pp_degree}};
  out["workload"] = workload_json(c);
  out["peak_bytes"] = peak_in(worst, metric, cluster.cuda_context_bytes);
  out["fits"] = r.fits;
  out["verdict"] = verdict_name(r.verdict);
  if (!r.limited_by.empty()) out["limited_by"] = r.limited_by;
  out["peak_phase"] = worst.peak.phase;
  out["allocated_bytes"] = worst.peak.allocated;
  out["reserved_bytes"] = worst.peak_reserved;
  out["device_used_bytes"] = inference_device_used(worst, cluster.cuda_context_bytes);
  out["weights_bytes"] = worst.weight_bytes;
  ordered_json kv = {{"bytes", worst.kv_cache_bytes},
                     {"bytes_per_token", worst.kv_bytes_per_token}};
  if (c.kv == kv_cache_kind::paged) {
    kv["capacity_tokens"] = worst.kv_capacity_tokens;
    kv["concurrent_sequences"] = worst.concurrent_sequences;
    kv["block_size"] = c.block_size;
    kv["gpu_memory_utilization"] = c.gpu_memory_utilization;
  }
  out["kv_cache"] = std::move(kv);
  const inference_speed speed = estimate_inference_speed(spec, counts, c, cluster.gpu, worst);
  out["speed"] = {{"prefill_s", speed.prefill_s},
                  {"decode_step_s", speed.decode_step_s},
                  {"decode_tokens_per_s", speed.decode_tokens_per_s},
                  {"per_sequence_tokens_per_s", speed.per_sequence_tokens_per_s},
                  {"request_s", speed.request_s},
                  {"launch_bound", speed.launch_bound}};
  ordered_json per_gpu = ordered_json::array();
  for (std::size_t i = 0; i < r.stages.size(); ++i) {
    rank_estimate rank;
    rank.components = replay_components(r.stages[i].peak, r.stages[i].peak_reserved, 0, metric,
                                        cluster.cuda_context_bytes);
    rank.peak_bytes = peak_in(r.stages[i], metric, cluster.cuda_context_bytes);
    rank.fits = r.stage_fits[i];
    rank.verdict = r.stage_verdicts[i];
    rank.first_rank = c.pp_degree > 1 ? i : 0;
    rank.last_rank = c.pp_degree > 1 ? i : cluster.gpus - 1;
    per_gpu.push_back(rank_json(rank));
  }
  out["per_gpu"] = std::move(per_gpu);
  if (!worst.timeline.samples.empty()) {
    out["timeline"] =
        timeline_json(worst.timeline, inference_device_used(worst, cluster.cuda_context_bytes) -
                                          worst.peak_reserved);
  }
  ordered_json notes = ordered_json::array();
  for (const auto& stage : r.stages) {
    for (const auto& n : stage.notes) {
      if (std::find(notes.begin(), notes.end(), n) == notes.end()) notes.push_back(n);
    }
  }
  out["notes"] = std::move(notes);
  if (!read.value().solve.empty()) {
    const bool context = read.value().solve == "max_context";
    const std::uint64_t upper =
        context ? (spec.max_positions ? spec.max_positions : max_positions) : (1ULL << 20);
    auto solved = solve_inference_limit(
        spec, c, cluster.gpu, usable, cluster.cuda_context_bytes,
        context ? inference_limit::max_context : inference_limit::max_batch, upper);
    if (!solved.ok()) return solved.failure();
    const char* key = context ? "max_context" : "max_batch";
    const bool capped = solved.value().capped;
    out["solution"] = {
        {key, solved.value().value},
        {"limited_by", capped ? (context ? "the model's positions" : "the search bound")
                       : solved.value().value == 0 ? "nothing fits"
                                                   : "memory"}};
  }
  return out;
}

result<ordered_json> inference_plan_json(const json& request, const model_spec& spec,
                                         const cluster_spec& cluster,
                                         std::vector<std::string>& warnings) {
  // The layouts are the plan's to choose: the workload is read as if for one GPU.
  json single = request;
  single.erase("parallel");
  auto read = read_inference_request(single, spec, 1, warnings);
  if (!read.ok()) return read.failure();
  const std::uint64_t usable = cluster.gpu.memory_bytes - cluster.headroom_bytes;
  const inference_plan plan = plan_inference(spec, read.value().config, cluster.gpu, usable,
                                             cluster.cuda_context_bytes, cluster.gpus);
  ordered_json candidates = ordered_json::array();
  for (const auto& c : plan.candidates) {
    ordered_json entry = {{"method", c.method},
                          {"gpus", c.gpus},
                          {"valid", c.valid},
                          {"fits", c.fits},
                          {"verdict", verdict_name(c.verdict)},
                          {"peak_bytes", c.peak_bytes}};
    if (!c.limited_by.empty()) entry["limited_by"] = c.limited_by;
    if (!c.note.empty()) entry["note"] = c.note;
    candidates.push_back(std::move(entry));
  }
  ordered_json out = json_object(32);
  out["workload"] = workload_json(read.value().config);
  out["choice"] = nullptr;
  if (plan.choice >= 0) {
    const auto& c = plan.candidates[static_cast<std::size_t>(plan.choice)];
    out["choice"] = {{"method", c.method},
                     {"candidate", plan.choice},
                     {"gpus", c.gpus},
                     {"peak_bytes", c.peak_bytes}};
  }
  out["reason"] = plan.reason;
  out["candidates"] = std::move(candidates);
  return out;
}

}  // namespace gpumem
