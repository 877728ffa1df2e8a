#include "api/training_json.hpp"

#include <algorithm>
#include <optional>

#include "api/estimate_json.hpp"
#include "api/json_text.hpp"
#include "api/request_reader.hpp"
#include "gpumem/offload/gemini_placement.hpp"
#include "gpumem/offload/offload.hpp"
#include "gpumem/plan/planner.hpp"
#include "gpumem/training/training_step.hpp"
#include "model/config_reader.hpp"
#include "plan/boundary_search.hpp"
#include "text/number_text.hpp"

namespace gpumem {

using json = nlohmann::ordered_json;
using nlohmann::ordered_json;

namespace {

// The host and NVMe side of an offloaded step, per GPU and per node, against the budgets.
ordered_json offload_json(const host_footprint& f, const cluster_spec& cluster) {
  const std::uint64_t per_node = ranks_per_node(cluster);
  ordered_json host = ordered_json::object();
  for (const auto& part : f.host) host[part.name] = part.bytes;
  ordered_json nvme = ordered_json::object();
  for (const auto& part : f.nvme) nvme[part.name] = part.bytes;
  const std::uint64_t host_node = f.host_bytes * per_node;
  const std::uint64_t nvme_node = f.nvme_bytes * per_node;
  const std::uint64_t load_node = f.load_bytes * f.loading_ranks;
  const offload_speeds& s = cluster.host;
  return {{"host_bytes_per_gpu", f.host_bytes},
          {"pinned_bytes_per_gpu", f.pinned_bytes},
          {"host_bytes_per_node", host_node},
          {"load_host_bytes_per_gpu", f.load_bytes},
          {"load_host_bytes_per_node", load_node},
          {"nvme_bytes_per_gpu", f.nvme_bytes},
          {"nvme_bytes_per_node", nvme_node},
          {"host", std::move(host)},
          {"nvme", std::move(nvme)},
          {"fits_host_ram",
           cluster.host_ram_bytes == 0 || std::max(host_node, load_node) <= cluster.host_ram_bytes},
          {"fits_nvme", cluster.nvme_bytes == 0 || nvme_node <= cluster.nvme_bytes},
          // Whether a budget was stated (a need with no budget is reported, not judged).
          {"host_ram_checked", cluster.host_ram_bytes > 0},
          {"nvme_checked", cluster.nvme_bytes > 0},
          {"per_step",
           {{"pcie_bytes", f.pcie_bytes},
            {"pcie_s", cluster.gpu.host_link_bandwidth_bytes_per_s > 0
                           ? f.pcie_bytes / cluster.gpu.host_link_bandwidth_bytes_per_s
                           : 0.0},
            {"nvme_read_bytes", f.nvme_read_bytes},
            {"nvme_write_bytes", f.nvme_write_bytes},
            {"nvme_s", f.nvme_read_bytes / s.nvme_read_bytes_per_s +
                           f.nvme_write_bytes / s.nvme_write_bytes_per_s},
            {"cpu_optimizer_params", f.cpu_optimizer_params},
            {"cpu_optimizer_s", f.cpu_optimizer_params / s.cpu_optimizer_params_per_s}}}};
}

// A training request as read: the layout and the step's configuration.
struct training_job {
  training_parallel layout;
  training_config config;
};

result<training_job> read_training_job(const json& request, const model_spec& spec,
                                       const cluster_spec& cluster, std::size_t timeline_samples,
                                       std::vector<std::string>& warnings) {
  auto parallel = read_training_parallel(request, cluster.gpus, cluster.gpus_per_node);
  if (!parallel.ok()) return parallel.failure();
  // A solve chooses the micro-batch: the request need not state it.
  auto workload = read_detailed_workload(request, spec, request.contains("solve"), warnings);
  if (!workload.ok()) return workload.failure();
  const training_parallel& layout = parallel.value();
  // Sharded QLoRA (ZeRO-3, FSDP) loads the 4-bit base without PEFT's kbit preparation.
  if (shards_parameters(layout.sharding) &&
      member_object(request, "workload").value("kbit_preparation", json(false)) == json(true)) {
    return error{"request.invalid_value", "workload.kbit_preparation",
                 "[workload.kbit_preparation] sharded QLoRA (zero3, gemini, fsdp_*) "
                 "loads its 4-bit base without it"};
  }
  training_config& w = workload.value();
  w.micro_batch = std::max<std::uint64_t>(w.micro_batch, 1);
  w.sharding = layout.sharding;
  w.dp_degree = layout.shard_group ? layout.shard_group : layout.dp * layout.cp;
  w.cp_degree = layout.cp;
  w.cp_kind = layout.cp_kind;
  w.tp_degree = layout.tp;
  w.sequence_parallel = layout.sequence_parallel;
  w.pp_degree = layout.pp;
  w.pp_micro_batches = layout.micro_batches;
  w.offload = layout.offload;
  w.reduce_bucket_elements = layout.reduce_bucket_elements;
  w.prefetch_bucket_elements = layout.prefetch_bucket_elements;
  w.persistence_threshold = layout.persistence_threshold;
  w.cuda_context_bytes = cluster.cuda_context_bytes;
  w.timeline_samples = timeline_samples;
  return training_job{layout, w};
}

// Every rank of one job replayed: one replay for data- and tensor-parallel ranks (they are
// alike), one per pipeline stage; the host side and the verdict over all of them.
struct job_replay {
  std::vector<rank_estimate> ranks;
  std::vector<training_estimate> stages;
  std::size_t worst = 0;
  fit_verdict verdict = fit_verdict::fits;
  std::uint64_t trainable = 0;
  bool host_reported = false;  // offloaded, or host memory kept (unsloth's checkpoints)
  host_footprint host;
};

result<job_replay> replay_job(const model_spec& spec, const cluster_spec& cluster, training_job job,
                              const std::string& metric) {
  const training_parallel& layout = job.layout;
  training_config& w = job.config;
  const std::uint64_t usable = cluster.gpu.memory_bytes - cluster.headroom_bytes;
  job_replay out;
  std::uint64_t gemini_kept = 0;  // Gemini "auto": chunk bytes its policy keeps on the GPU
  for (std::uint64_t stage = 0; stage < layout.pp; ++stage) {
    w.pp_stage = stage;
    auto estimate = estimate_training_step(spec, w, cluster.gpu);
    if (!estimate.ok()) return estimate.failure();
    if (layout.gemini_auto) {
      // The parameter chunks on the GPU (the optimizer where it was put) bound what Gemini's
      // policy keeps there.
      training_config on_gpu = w;
      on_gpu.offload.params = offload_target::none;
      on_gpu.timeline_samples = 0;
      auto chunks_on_gpu = estimate_training_step(spec, on_gpu, cluster.gpu);
      if (!chunks_on_gpu.ok()) return chunks_on_gpu.failure();
      const host_footprint cpu_host = offload_footprint(spec, w, estimate.value());
      gemini_kept =
          gemini_chunks_kept(estimate.value().peak.allocated, chunks_on_gpu.value().peak.allocated,
                             cluster.gpu.memory_bytes, host_parameter_bytes(cpu_host));
      keep_chunks_on_gpu(estimate.value(), gemini_kept);
    }
    const auto& e = estimate.value();
    const std::uint64_t device_used = device_used_bytes(e, cluster.cuda_context_bytes);
    rank_estimate rank;
    rank.components = peak_components(e, metric, cluster.cuda_context_bytes);
    // A stage's ranks are consecutive (Megatron-LM's order: tensor, then data, then pipeline).
    const std::uint64_t per_stage = cluster.gpus / layout.pp;
    rank.first_rank = stage * per_stage;
    rank.last_rank = rank.first_rank + per_stage - 1;
    rank.peak_bytes = peak_in_metric(metric, e.peak.allocated, e.peak_reserved, device_used);
    // The card's total must hold the whole device footprint, whatever metric is reported.
    rank.verdict = judge_fit(device_used, cluster.gpu.memory_bytes, usable, true);
    rank.fits = rank.verdict == fit_verdict::fits;
    out.ranks.push_back(rank);
    out.stages.push_back(e);
  }
  for (std::size_t i = 0; i < out.ranks.size(); ++i) {
    if (out.ranks[i].peak_bytes > out.ranks[out.worst].peak_bytes) out.worst = i;
    out.verdict = worse(out.verdict, out.ranks[i].verdict);
    out.trainable += out.stages[i].trainable_params;
  }
  out.host = offload_footprint(spec, w, out.stages[out.worst]);
  out.host_reported = layout.offload.any() || out.host.host_bytes > 0;
  if (!out.host_reported) return out;
  // The checkpoint's load through host memory is reported with offloading, as plans do.
  const std::uint64_t per_node = ranks_per_node(cluster);
  if (layout.offload.any()) checkpoint_load_bytes(spec, w, per_node, out.host);
  if (layout.gemini_auto) keep_chunks_off_host(out.host, gemini_kept);
  if (auto too_large = check_node_totals(out.host, per_node)) return *too_large;
  const std::uint64_t host_node =
      std::max(out.host.host_bytes * per_node, out.host.load_bytes * out.host.loading_ranks);
  if ((cluster.host_ram_bytes && host_node > cluster.host_ram_bytes) ||
      (cluster.nvme_bytes && out.host.nvme_bytes * per_node > cluster.nvme_bytes))
    out.verdict = fit_verdict::does_not_fit;
  return out;
}

// solve "max_batch": the largest micro-batch whose replay fits with the headroom left, up to
// `upper` (0 when not even one sequence does); a batch too large to count exactly does not fit.
// Searched as a plan searches (plan/boundary_search.hpp, from the same footprints), so that a
// plan of one method and this solve agree.
result<std::uint64_t> solve_max_batch(const model_spec& spec, const cluster_spec& cluster,
                                      const training_job& job, std::uint64_t upper) {
  training_job trial = job;
  trial.config.timeline_samples = 0;
  std::optional<error> failure;
  std::optional<batch_growth> growth;  // from the replay at one sequence
  const auto probe = [&](std::uint64_t batch) {
    trial.config.micro_batch = batch;
    auto replay =
        failure ? result<job_replay>(*failure) : replay_job(spec, cluster, trial, "device_used");
    if (!replay.ok()) {
      if (replay.failure().code != "request.too_large") failure = replay.failure();
      return boundary_probe{false, ~0ULL};
    }
    // The stage of most device memory (the first on a tie), as a plan's footprint.
    const training_estimate* busiest = nullptr;
    std::uint64_t bytes = 0;
    for (const auto& e : replay.value().stages) {
      const std::uint64_t used = device_used_bytes(e, cluster.cuda_context_bytes);
      if (busiest && used <= bytes) continue;
      busiest = &e;
      bytes = used;
    }
    if (batch == 1 && busiest) growth = batch_growth_of(*busiest, bytes);
    return boundary_probe{replay.value().verdict == fit_verdict::fits, bytes};
  };
  const boundary_probe first = probe(1);
  if (failure) return *failure;
  if (!first.holds || upper < 1) return std::uint64_t{0};
  const std::uint64_t usable = cluster.gpu.memory_bytes - cluster.headroom_bytes;
  const batch_growth g = growth.value_or(batch_growth{first.bytes, first.bytes});
  const boundary_start start{1, g.growing_bytes, upper + 1, usable, g.per_sequence};
  const std::uint64_t best = search_boundary(start, probe);
  if (failure) return *failure;
  return best;
}

ordered_json parallel_json(const json& request, const training_job& job) {
  const training_parallel& layout = job.layout;
  ordered_json out = {
      {"method", member_object(request, "parallel").value("method", json("single"))},
      {"dp", layout.dp},
      {"tp", layout.tp},
      {"sequence_parallel", layout.sequence_parallel},
      {"pp", layout.pp}};
  if (layout.shard_group) out["shard_group"] = layout.shard_group;
  if (layout.cp > 1) {
    out["cp"] = layout.cp;
    out["cp_kind"] = context_parallel_kind_name(layout.cp_kind);
  }
  // The DeepSpeed buckets the replay used (stated or DeepSpeed's defaults).
  if (layout.sharding == data_parallel::zero2) {
    out["deepspeed"] = {{"reduce_bucket_size", layout.reduce_bucket_elements}};
  } else if (layout.sharding == data_parallel::zero3) {
    out["deepspeed"] = {{"reduce_bucket_size", layout.reduce_bucket_elements},
                        {"stage3_prefetch_bucket_size", layout.prefetch_bucket_elements},
                        {"stage3_param_persistence_threshold", layout.persistence_threshold}};
  }
  if (layout.pp > 1)
    out["micro_batches"] = job.config.pp_micro_batches ? job.config.pp_micro_batches : layout.pp;
  return out;
}

ordered_json workload_json(const model_spec& spec, const training_config& w) {
  ordered_json out = {{"phase", w.optimizer_step ? "train" : "forward_backward"},
                      {"finetune", finetune_name(w)},
                      {"micro_batch", w.micro_batch},
                      {"seq_len", w.seq_len},
                      {"grad_ckpt", w.selective_recompute ? json("selective") : json(w.grad_ckpt)},
                      {"attention", attention_kernel_name(w.attention)}};
  if (spec.encoder_decoder) out["target_len"] = decoder_len(w);
  return out;
}

}  // namespace

result<ordered_json> training_estimate_json(const json& request, const model_spec& spec,
                                            const cluster_spec& cluster,
                                            const training_answer_options& options,
                                            std::vector<std::string>& warnings) {
  const json& solve = request.value("solve", json());
  if (!solve.is_null() && solve != json("max_batch")) {
    return error{"request.invalid_value", "solve",
                 "[solve] of a training estimate must be \"max_batch\" (the largest micro-batch "
                 "that leaves the headroom); \"max_context\" applies to inference"};
  }
  auto job = read_training_job(request, spec, cluster, options.timeline_samples, warnings);
  if (!job.ok()) return job.failure();
  ordered_json solution;
  if (!solve.is_null()) {
    if (auto e = check_plan_size(spec, "solve \"max_batch\"")) return *e;
    const std::uint64_t upper = std::min(
        options.max_micro_batch, largest_sized_micro_batch(spec, job.value().config.seq_len, true));
    auto best = solve_max_batch(spec, cluster, job.value(), upper);
    if (!best.ok()) return best.failure();
    solution = {{"max_batch", best.value()},
                {"limited_by", best.value() == 0       ? "nothing fits"
                               : best.value() == upper ? "the search bound"
                                                       : "memory"}};
    job.value().config.micro_batch = std::max<std::uint64_t>(best.value(), 1);
  }
  auto replay = replay_job(spec, cluster, job.value(), options.metric);
  if (!replay.ok()) return replay.failure();
  const job_replay& r = replay.value();
  const training_config& w = job.value().config;
  const training_estimate& e = r.stages[r.worst];
  ordered_json out = json_object(32);
  out["parallel"] = parallel_json(request, job.value());
  out["workload"] = workload_json(spec, w);
  // Adapter targets that name no module of the model (PEFT skips them; the notes say so too).
  std::vector<std::string> unmatched;
  if (!check_adapter_targets(spec, w, unmatched)) out["unmatched_targets"] = unmatched;
  // The busiest rank's figures; every rank's in per_gpu.
  out["peak_bytes"] = r.ranks[r.worst].peak_bytes;
  out["fits"] = r.verdict == fit_verdict::fits;
  out["verdict"] = verdict_name(r.verdict);
  out["peak_phase"] = e.peak.phase;
  out["allocated_bytes"] = e.peak.allocated;
  out["reserved_bytes"] = e.peak_reserved;
  out["device_used_bytes"] = device_used_bytes(e, cluster.cuda_context_bytes);
  out["trainable_params"] = r.trainable;
  ordered_json per_gpu = ordered_json::array();
  for (const auto& rank : r.ranks) per_gpu.push_back(rank_json(rank));
  out["per_gpu"] = std::move(per_gpu);
  if (!e.timeline.samples.empty()) {
    out["timeline"] = timeline_json(
        e.timeline, device_used_bytes(e, cluster.cuda_context_bytes) - e.peak_reserved);
  }
  // What the replays read or assumed beyond the request (each note once, over the stages).
  ordered_json notes = ordered_json::array();
  for (const auto& stage : r.stages) {
    for (const auto& note : stage.notes) {
      if (std::find(notes.begin(), notes.end(), note) == notes.end()) notes.push_back(note);
    }
  }
  out["notes"] = std::move(notes);
  if (r.host_reported) out["offload"] = offload_json(r.host, cluster);
  if (!solution.is_null()) out["solution"] = std::move(solution);
  return out;
}

result<ordered_json> time_and_cost_json(const ordered_json& request, double tokens_per_s,
                                        const cluster_spec& cluster) {
  config_reader in(member_object(request, "workload"), "workload", "request");
  const std::uint64_t tokens = in.optional({"train_tokens"}, 0, 1ULL << 50);
  if (auto problem = in.problem("")) return *problem;
  if (tokens == 0 || !(tokens_per_s > 0)) return ordered_json();
  const double seconds = static_cast<double>(tokens) / tokens_per_s;
  const double hours = seconds / 3600.0;
  ordered_json out = ordered_json::object();
  out["train_tokens"] = tokens;
  out["train_time_s"] = seconds;
  out["gpu_hours"] = hours * static_cast<double>(cluster.gpus);
  out["cost"] = nullptr;
  std::string sentence =
      grouped_number(static_cast<double>(tokens), 0) + " training tokens take about " +
      (hours >= 48  ? grouped_number(hours / 24, 1) + " days"
       : hours >= 1 ? grouped_number(hours, 1) + " hours"
                    : grouped_number(seconds / 60, 0) + " minutes") +
      " (" + grouped_number(hours * static_cast<double>(cluster.gpus), 0) + " GPU-hours)";
  if (cluster.price_per_gpu_hour > 0) {
    const double cost = hours * static_cast<double>(cluster.gpus) * cluster.price_per_gpu_hour;
    out["cost"] = cost;
    sentence += ", about $" + grouped_number(cost, cost < 100 ? 2 : 0) + " at $" +
                grouped_number(cluster.price_per_gpu_hour, 2) + " per GPU-hour";
  }
  out["sentence"] = sentence + ".";
  return out;
}

}  // namespace gpumem
