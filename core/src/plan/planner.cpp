#include "gpumem/plan/planner.hpp"

#include <algorithm>
#include <array>
#include <cstdio>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "gpumem/offload/offload.hpp"
#include "parallel/data_parallel_method.hpp"
#include "plan/boundary_search.hpp"
#include "plan/plan_choice.hpp"
#include "plan/workload_speed.hpp"
#include "text/number_text.hpp"
#include "training/framework.hpp"

namespace gpumem {

namespace {

const auto label = candidate_label;

std::uint64_t usable_bytes(const cluster_spec& cluster) {
  return cluster.gpu.memory_bytes > cluster.headroom_bytes
             ? cluster.gpu.memory_bytes - cluster.headroom_bytes
             : 0;
}

// When nothing fits at batch 1: first the optimizer states and fp32 master weights go to host
// memory (ZeRO-Offload, Ren et al. 2021; Gemini keeps fp32 chunks on the CPU with
// placement_policy "cpu"), then the fp16 parameter chunks as well (Gemini "cpu" placement moves
// every chunk and gathers it to the GPU when used).
offload_advice advise_offload(const plan_candidate& base, const llmem_fixed& fixed,
                              const cluster_spec& cluster) {
  offload_advice advice;
  advice.needed = true;
  advice.method = label(base);
  const std::uint64_t usable = usable_bytes(cluster);
  const std::uint64_t per_node = ranks_per_node(cluster);
  struct step {
    const char* moves;
    std::uint64_t saved;
  };
  const step steps[] = {
      {"the Adam optimizer states and the fp32 master weights",
       fixed.optimizer_states + fixed.fp32_chunks},
      {"the Adam optimizer states, the fp32 master weights and the fp16 parameter chunks",
       fixed.optimizer_states + fixed.fp32_chunks + fixed.fp16_chunks},
  };
  for (const auto& s : steps) {
    advice.moves = s.moves;
    advice.gpu_peak_bytes = base.at_max.peak_bytes - s.saved;
    advice.host_bytes_per_gpu = s.saved;
    advice.host_bytes_per_node = s.saved * per_node;
    advice.sufficient = advice.gpu_peak_bytes <= usable;
    if (advice.sufficient) break;
  }
  const std::string head = "Nothing fits at micro-batch 1: " + advice.method + " needs " +
                           gib_text(base.at_max.peak_bytes) + " per GPU of " + gib_text(usable) +
                           ". ";
  if (advice.sufficient) {
    advice.summary = head + "Offloading " + advice.moves + " to CPU brings it to " +
                     gib_text(advice.gpu_peak_bytes) + " per GPU and needs " +
                     gib_text(advice.host_bytes_per_node) + " of host RAM per node.";
  } else {
    advice.summary = head + "Even with " + advice.moves + " on the CPU it needs " +
                     gib_text(advice.gpu_peak_bytes) + " per GPU (" +
                     gib_text(advice.gpu_peak_bytes - usable) +
                     " short): use more GPUs or GPUs with more memory.";
  }
  return advice;
}

}  // namespace

std::vector<parallel_config> candidate_methods(std::uint64_t gpus) {
  if (gpus <= 1) return {parallel_config{parallel_method::single, 1, false}};
  std::vector<parallel_config> out = {{parallel_method::cdp, 1, false},
                                      {parallel_method::adp, 1, false},
                                      {parallel_method::tp, gpus, false}};
  for (std::uint64_t t = 2; t < gpus; ++t) {
    if (gpus % t == 0) out.push_back({parallel_method::dp_tp, t, false});
  }
  return out;
}

result<plan_result> plan_llmem(const model_spec& spec, const param_count& counts,
                               const cluster_spec& cluster, const plan_options& options) {
  auto model = prepare_llmem(spec);
  if (!model.ok()) return model.failure();
  plan_result plan;
  plan.warnings = model.value().warnings;
  std::vector<llmem_fixed> fixed_terms;
  for (auto parallel : candidate_methods(cluster.gpus)) {
    parallel.exact_dp_tp_fraction = options.exact_dp_tp_fraction;
    plan_candidate c;
    c.parallel = parallel;
    c.method = method_name(parallel.method);
    auto fixed = llmem_fixed_terms(spec, model.value(), cluster, parallel, options.seq_len);
    if (!fixed.ok()) {
      c.valid = false;
      c.note = fixed.failure().message;
      plan.candidates.push_back(c);
      fixed_terms.emplace_back();
      continue;
    }
    c.parallel = fixed.value().parallel;
    // (Searched only as far as its byte counts stay exact.)
    c.max_micro_batch = llmem_max_batch(
        model.value(), fixed.value(), cluster, options.seq_len,
        std::min(options.max_micro_batch, largest_sized_micro_batch(spec, options.seq_len, false)));
    c.fits = c.max_micro_batch > 0;
    const std::uint64_t batch = c.fits ? c.max_micro_batch : 1;
    c.at_max = llmem_estimate(model.value(), fixed.value(), cluster, batch, options.seq_len);
    c.speed = estimate_step_time(spec, counts, cluster, c.parallel, batch, options.seq_len,
                                 options.speed);
    plan.candidates.push_back(c);
    fixed_terms.push_back(fixed.value());
  }

  if (choose_fastest(plan)) return plan;
  // Nothing fits: advise offload for the method that shards the most (ADP, or the one GPU).
  const parallel_method base_method =
      cluster.gpus > 1 ? parallel_method::adp : parallel_method::single;
  for (std::size_t i = 0; i < plan.candidates.size(); ++i) {
    if (plan.candidates[i].parallel.method == base_method && plan.candidates[i].valid) {
      plan.offload = advise_offload(plan.candidates[i], fixed_terms[i], cluster);
      plan.reason = plan.offload.summary;
    }
  }
  if (plan.reason.empty()) plan.reason = "No method can run this model on these GPUs.";
  return plan;
}

namespace {

// A layout the detailed plan tries: how the states are sharded and how the step is timed.
struct method {
  const char* name;
  data_parallel sharding;
  parallel_method timing;  // the step-time model's communication pattern
  bool pipeline = false;   // one stage per GPU, timed from one GPU's compute (below)
};

// A candidate's footprint at one micro-batch: its busiest stage on the GPU, and the host.
struct footprint {
  std::uint64_t gpu = ~0ULL;
  host_footprint host;
  training_estimate estimate;
  bool fits = false;
  fit_verdict verdict = fit_verdict::does_not_fit;
};

// What a candidate's step on the GPU depends on among the fields a plan sets: those lay_out and
// the searches set (every other field is the workload's, the same for every candidate; a field
// either of them comes to set must be added here). Of the offload, whether each part goes, not
// where to: only the host's footprint and the checks read that (the replay reads `!= none`,
// step_setup.cpp), so an offload to NVMe replays as the one to host RAM before it.
struct replay_key {
  data_parallel sharding = data_parallel::none;
  context_parallel_kind cp_kind = context_parallel_kind::ring;
  std::uint64_t dp = 1, tp = 1, cp = 1, pp = 1, pp_micro_batches = 0, pp_stage = 0;
  std::uint64_t micro_batch = 1, grad_accumulation = 1;
  bool sequence_parallel = false, grad_ckpt = false, selective_recompute = false;
  std::array<bool, 4> offloaded{};  // optimizer, parameters, gradients, activations
  friend bool operator==(const replay_key& a, const replay_key& b) {
    return a.sharding == b.sharding && a.cp_kind == b.cp_kind && a.dp == b.dp && a.tp == b.tp &&
           a.cp == b.cp && a.pp == b.pp && a.pp_micro_batches == b.pp_micro_batches &&
           a.pp_stage == b.pp_stage && a.micro_batch == b.micro_batch &&
           a.grad_accumulation == b.grad_accumulation &&
           a.sequence_parallel == b.sequence_parallel && a.grad_ckpt == b.grad_ckpt &&
           a.selective_recompute == b.selective_recompute && a.offloaded == b.offloaded;
  }
};

replay_key replay_key_of(const training_config& c) {
  const auto off = [](offload_target t) { return t != offload_target::none; };
  replay_key k;
  k.sharding = c.sharding;
  k.cp_kind = c.cp_kind;
  k.dp = c.dp_degree;
  k.tp = c.tp_degree;
  k.cp = c.cp_degree;
  k.pp = c.pp_degree;
  k.pp_micro_batches = c.pp_micro_batches;
  k.pp_stage = c.pp_stage;
  k.micro_batch = c.micro_batch;
  k.grad_accumulation = c.grad_accumulation;
  k.sequence_parallel = c.sequence_parallel;
  k.grad_ckpt = c.grad_ckpt;
  k.selective_recompute = c.selective_recompute;
  k.offloaded = {off(c.offload.optimizer), off(c.offload.params), off(c.offload.gradients),
                 off(c.offload.activations)};
  return k;
}

// A candidate's layout: the step it runs and how that step is timed.
struct candidate_layout {
  training_config config;
  step_time_options timing;
  bool pipeline = false;
};

// The batch search's outcome: the largest micro-batch that fits (0: none) and the first tried.
struct batch_search {
  std::uint64_t first = 1;
  std::uint64_t good = 0;
  // The footprints of the first micro-batch tried (one sequence, or the fixed micro-batch) and
  // of the largest micro-batch found to fit so far (each fitting probe is larger than the last),
  // kept for the report.
  footprint at_one;
  footprint at_good;
  std::uint64_t accumulation = 1;  // with a global batch: micro-batches per step at `good`
  std::string uneven;              // with a global batch: why it cannot be split here
};

// The detailed plan's search: every candidate sized and timed for the same request and GPUs.
struct detailed_search {
  const model_spec& spec;
  const param_count& counts;
  const cluster_spec& cluster;
  const training_config& workload;
  const plan_options& options;
  const std::uint64_t usable;
  const std::uint64_t per_node;
  const std::uint64_t fixed_batch;  // 0: the plan's to choose
  const step_time_options speed;
  // An estimate that refuses the request itself: the plan's answer.
  std::optional<error> failure;
  // The replays made so far (replay_key); a 70B plan's offloads to NVMe repeat those to host RAM.
  std::vector<std::pair<replay_key, training_estimate>> replays;

  result<training_estimate> replay(const training_config& config);

  plan_candidate evaluate(const method& m, const offload_placement& offload, std::uint64_t tp = 1,
                          std::uint64_t cp = 1);
  plan_candidate evaluate_as(const method& m, const offload_placement& offload, std::uint64_t tp,
                             std::uint64_t cp, bool grad_ckpt);
  std::optional<candidate_layout> lay_out(const method& m, const offload_placement& offload,
                                          std::uint64_t tp, std::uint64_t cp, bool grad_ckpt,
                                          plan_candidate& c) const;
  footprint footprint_at(training_config& config, std::uint64_t batch);
  batch_search search_batch(training_config& config);
  batch_search search_global_batch(training_config& config);
  void time_candidate(plan_candidate& c, const footprint& f, std::uint64_t batch,
                      const candidate_layout& layout) const;
  std::optional<std::string> refusal(const char* parallelism, parallel_support support) const;
  bool add_methods(plan_result& plan);
  bool add_tensor_parallel_groups(plan_result& plan);
  bool add_context_parallel(plan_result& plan);
  bool add_offloads(plan_result& plan);
  std::string offload_reason(const plan_candidate& c) const;
  std::string shortfall_reason(const plan_candidate& leanest) const;
};

// One candidate: its largest micro-batch whose GPU footprint (and, offloaded, host RAM and
// NVMe per node) fits, and its speed there.
// `tp` > 1 with a data-parallel method: DP+TP, tp tensor-parallel GPUs (with sequence
// parallelism) in each of gpus / tp data-parallel groups.
// `cp` > 1: context parallelism, each sequence split over cp GPUs by ring attention, the
// states sharded over all of them.
plan_candidate detailed_search::evaluate(const method& m, const offload_placement& offload,
                                         std::uint64_t tp, std::uint64_t cp) {
  if (!options.choose_checkpointing) return evaluate_as(m, offload, tp, cp, workload.grad_ckpt);
  // Checkpointing is the plan's to choose: the faster of the two that fit (a recomputed forward
  // costs a third of a step, a larger micro-batch can win it back), without it on a tie; the
  // leaner when neither fits.
  plan_candidate off = evaluate_as(m, offload, tp, cp, false);
  if (!off.valid || failure) return off;
  plan_candidate on = evaluate_as(m, offload, tp, cp, true);
  if (failure) return on;
  const bool take_on =
      on.fits && (!off.fits || on.speed.tokens_per_s > off.speed.tokens_per_s * 1.01);
  plan_candidate& chosen = take_on || (!off.fits && !on.fits) ? on : off;
  chosen.grad_ckpt_chosen = true;
  return std::move(chosen);
}

// One candidate with gradient checkpointing on or off.
plan_candidate detailed_search::evaluate_as(const method& m, const offload_placement& offload,
                                            std::uint64_t tp, std::uint64_t cp, bool grad_ckpt) {
  plan_candidate c;
  c.method = m.name;
  c.offload = offload;
  c.grad_ckpt = grad_ckpt;
  auto layout = lay_out(m, offload, tp, cp, grad_ckpt, c);
  if (!layout) return c;
  const batch_search b =
      options.global_batch > 0 ? search_global_batch(layout->config) : search_batch(layout->config);
  if (!b.uneven.empty()) {
    c.valid = false;
    c.note = b.uneven;
    return c;
  }
  c.grad_accumulation = b.accumulation;
  layout->config.grad_accumulation = b.accumulation;
  layout->timing.grad_accumulation = layout->pipeline ? 1 : b.accumulation;
  if (failure &&
      (failure->code == "parallel.invalid_degree" || failure->code == "request.invalid_value")) {
    c.valid = false;
    c.note = failure->message;
    failure.reset();
    return c;
  }
  c.max_micro_batch = b.good;
  c.fits = b.good > 0;
  const std::uint64_t batch = c.fits ? b.good : b.first;
  const footprint& f = c.fits ? b.at_good : b.at_one;
  if (auto too_large = check_node_totals(f.host, per_node)) {
    c.valid = false;
    c.note = too_large->message;
    return c;
  }
  c.at_max.last_rank = cluster.gpus - 1;
  c.at_max.peak_bytes = f.gpu;
  c.at_max.fits = c.fits;
  c.at_max.verdict = f.verdict;
  c.at_max.components = peak_components(f.estimate, "device_used", cluster.cuda_context_bytes);
  c.host_bytes_per_node = host_ram_needed_per_node(f.host, per_node);
  c.nvme_bytes_per_node = f.host.nvme_bytes * per_node;
  time_candidate(c, f, batch, *layout);
  return c;
}

// The candidate's parallelism and the step it runs; nothing when it cannot run here (c.note
// says why).
std::optional<candidate_layout> detailed_search::lay_out(const method& m,
                                                         const offload_placement& offload,
                                                         std::uint64_t tp, std::uint64_t cp,
                                                         bool grad_ckpt, plan_candidate& c) const {
  const bool tensor = m.timing == parallel_method::tp;
  const bool hybrid = tp > 1 && !tensor;
  const std::uint64_t degree = tensor ? cluster.gpus : tp;
  c.parallel = {hybrid ? parallel_method::dp_tp : m.timing, degree, false, cp};
  c.sequence_parallel = tensor || hybrid;
  training_config config = workload;  // (what this sets is part of replay_key)
  if (options.choose_checkpointing) {
    config.grad_ckpt = grad_ckpt;
    config.selective_recompute = false;
  }
  config.sharding = m.sharding;
  config.cp_degree = cp;
  config.cp_kind = context_parallel_kind::ring;
  config.cuda_context_bytes = cluster.cuda_context_bytes;
  const bool pipeline = m.pipeline;
  if (pipeline) {
    // 1F1B over one stage per GPU with 4 micro-batches per stage in a step (the bubble,
    // (p - 1) / m of the ideal time, stays under a quarter; Narayanan et al. 2021).
    config.pp_degree = cluster.gpus;
    config.pp_micro_batches = 4 * cluster.gpus;
    c.pp = config.pp_degree;
    c.pp_micro_batches = config.pp_micro_batches;
    if (cluster.gpus > spec.layers.size()) {
      c.valid = false;
      c.note = "a pipeline needs at least one block per GPU (" +
               std::to_string(spec.layers.size()) + " blocks)";
      return std::nullopt;
    }
  }
  config.dp_degree = pipeline ? 1 : cluster.gpus / degree;
  config.tp_degree = degree;
  config.sequence_parallel = tensor || hybrid;
  config.offload = offload;
  step_time_options timing =
      options.choose_checkpointing ? workload_speed(spec, counts, config, options) : speed;
  // Megatron: two all-reduces per block and pass.
  timing.all_reduce_every_linear = !(tensor || hybrid);
  timing.optimizer_sharded = m.sharding != data_parallel::none && m.sharding != data_parallel::ddp;
  timing.gathers_per_module = m.sharding == data_parallel::zero3;
  timing.engine_optimizer = data_parallel_of(m.sharding).engine;
  if (tensor && cluster.gpus_per_node > 0 && cluster.gpus > cluster.gpus_per_node) {
    c.valid = false;  // its all-reduces would cross the inter-node network every block
    c.note = "tensor parallelism stays within a node (" + std::to_string(cluster.gpus_per_node) +
             " GPUs)";
    return std::nullopt;
  }
  return candidate_layout{std::move(config), timing, pipeline};
}

// The step's estimate, replayed once for all candidates that share it on the GPU; each still
// passes its own checks (training_refusal: torchtune refuses NVMe, where it accepts host RAM).
result<training_estimate> detailed_search::replay(const training_config& config) {
  const replay_key key = replay_key_of(config);
  for (const auto& [made, estimate] : replays) {
    if (!(made == key)) continue;
    if (auto refused = training_refusal(spec, config)) return *refused;
    return estimate;
  }
  auto e = estimate_training_step(spec, config, cluster.gpu);
  if (e.ok()) replays.emplace_back(key, e.value());
  return e;
}

// The footprint at micro-batch `batch` (config is set to it); a refused estimate is kept in
// `failure`.
footprint detailed_search::footprint_at(training_config& config, std::uint64_t batch) {
  footprint f;
  config.micro_batch = batch;
  // A pipeline's busiest stages: the first (every micro-batch in flight, the embedding) and
  // the last (the LM head and the loss).
  std::vector<std::uint64_t> stages = {0};
  if (config.pp_degree > 1) stages.push_back(config.pp_degree - 1);
  for (const std::uint64_t stage : stages) {
    config.pp_stage = stage;
    auto e = replay(config);
    if (!e.ok()) {
      failure = e.failure();
      return f;
    }
    const std::uint64_t used = device_used_bytes(e.value(), cluster.cuda_context_bytes);
    if (f.gpu != ~0ULL && used <= f.gpu) continue;
    f.estimate = e.value();
    f.gpu = used;
  }
  f.host = offload_footprint(spec, config, f.estimate);
  // Host budgets are checked for offloaded runs (as the estimate does).
  if (config.offload.any()) checkpoint_load_bytes(spec, config, per_node, f.host);
  f.verdict = judge_fit(
      f.gpu, cluster.gpu.memory_bytes, usable,
      !check_node_totals(f.host, per_node) &&
          (cluster.host_ram_bytes == 0 ||
           host_ram_needed_per_node(f.host, per_node) <= cluster.host_ram_bytes) &&
          (cluster.nvme_bytes == 0 || f.host.nvme_bytes * per_node <= cluster.nvme_bytes));
  f.fits = f.verdict == fit_verdict::fits;
  return f;
}

// The largest micro-batch up to options.max_micro_batch that fits, probed where the footprints
// seen so far put the GPU's usable memory (boundary_search.hpp), as solve "max_batch" does.
batch_search detailed_search::search_batch(training_config& config) {
  batch_search out;
  const auto probe = [&](std::uint64_t b) {
    footprint f = footprint_at(config, b);
    const boundary_probe result{f.fits, f.gpu};
    if (b == (fixed_batch ? fixed_batch : 1)) out.at_one = f;
    if (f.fits) out.at_good = std::move(f);
    return result;
  };
  // A micro-batch the request fixes is tried alone; otherwise the largest that fits.
  const std::uint64_t first = fixed_batch ? fixed_batch : 1;
  out.first = first;
  std::uint64_t good = 0;
  const boundary_probe at_first = probe(first);
  if (at_first.holds && !fixed_batch) {
    const batch_growth growth = batch_growth_of(out.at_one.estimate, at_first.bytes);
    const boundary_start start{1, growth.growing_bytes, options.max_micro_batch + 1, usable,
                               growth.per_sequence};
    good = search_boundary(start, probe);
  } else if (fixed_batch && out.at_one.fits) {
    good = fixed_batch;
  }
  out.good = good;
  return out;
}

// A global batch the request fixes: the micro-batches that divide each data-parallel group's
// share of it (a pipeline's share is its micro-batches of a step), the largest that fits, the
// rest of the share made up by gradient accumulation (at most 65,536 micro-batches).
batch_search detailed_search::search_global_batch(training_config& config) {
  batch_search out;
  const std::uint64_t groups =
      std::max<std::uint64_t>(config.dp_degree / std::max<std::uint64_t>(config.cp_degree, 1), 1);
  const bool pipeline = config.pp_degree > 1;
  const std::uint64_t slots = groups * (pipeline ? config.pp_micro_batches : 1);
  if (options.global_batch % slots != 0) {
    out.uneven = "a global batch of " + std::to_string(options.global_batch) +
                 " sequences does not split evenly over its " + std::to_string(slots) +
                 (pipeline ? " pipeline micro-batches" : " data-parallel groups");
    return out;
  }
  const std::uint64_t share = options.global_batch / slots;
  std::vector<std::uint64_t> sizes;  // the micro-batches allowed, ascending
  for (std::uint64_t d = 1; d <= share && d <= options.max_micro_batch; ++d) {
    const bool allowed = pipeline ? d == share : share % d == 0 && share / d <= 65536;
    if (allowed && (!fixed_batch || d == fixed_batch)) sizes.push_back(d);
  }
  if (sizes.empty()) {
    out.uneven = "a global batch of " + std::to_string(options.global_batch) +
                 " sequences cannot be made of micro-batches of " +
                 std::to_string(fixed_batch ? fixed_batch : share);
    return out;
  }
  const auto fits = [&](std::size_t i) {
    config.grad_accumulation = pipeline ? 1 : share / sizes[i];
    footprint f = footprint_at(config, sizes[i]);
    const bool fit = f.fits;
    if (i == 0) out.at_one = f;
    if (fit) out.at_good = std::move(f);
    return fit;
  };
  out.first = sizes[0];
  if (!fits(0)) return out;
  std::size_t good = 0;
  std::size_t bad = sizes.size();
  while (bad - good > 1) {
    const std::size_t mid = good + (bad - good) / 2;
    (fits(mid) ? good : bad) = mid;
  }
  out.good = sizes[good];
  out.accumulation = pipeline ? 1 : share / sizes[good];
  return out;
}

// The candidate's speed at `batch`, with a pipeline's bubble and an offload's traffic.
void detailed_search::time_candidate(plan_candidate& c, const footprint& f, std::uint64_t batch,
                                     const candidate_layout& layout) const {
  const training_config& config = layout.config;
  // What data parallelism reduces: the trained parameters (adapters alone under PEFT), in the
  // trained weights' dtype.
  step_time_options timing = layout.timing;
  if (config.finetune != finetune_kind::full)
    timing.trainable_params = static_cast<double>(f.estimate.trainable_params);
  timing.gradient_bytes = static_cast<double>(full_model_weight_bytes(config));
  // (Prompt tuning runs its virtual tokens too: positions, not the user's tokens, are timed.)
  c.speed = estimate_step_time(spec, counts, cluster, c.parallel, batch,
                               workload.seq_len + workload.virtual_tokens, timing);
  if (layout.pipeline) {
    // One micro-batch's compute on one GPU is split over the p stages; a step runs m
    // micro-batches in m + p - 1 slots (1F1B). Stage-to-stage activation sends overlap the
    // compute and are left out.
    const double p = static_cast<double>(cluster.gpus);
    const double m_batches = static_cast<double>(config.pp_micro_batches);
    const double slot = c.speed.compute_s / p;
    c.speed.compute_s = slot * m_batches;
    c.speed.communication_s = 0;
    c.speed.exposed_communication_s = slot * (p - 1.0);  // the bubble
    c.speed.step_s = slot * (m_batches + p - 1.0);
    c.speed.tokens_per_s =
        m_batches * static_cast<double>(batch * workload.seq_len) / c.speed.step_s;
    c.speed.tokens_per_s_per_gpu = c.speed.tokens_per_s / p;
  }
  // The offload's traffic and CPU step lengthen the step (offload.hpp).
  if (c.offload.any()) add_offload_time(c.speed, f.host, cluster);
}

// Why the framework does not run `parallelism` for this fine-tuning (nothing when it does).
std::optional<std::string> detailed_search::refusal(const char* parallelism,
                                                    parallel_support support) const {
  if (offered(support, workload)) return std::nullopt;
  const framework_traits& fw = framework_of(workload);
  return std::string(parallelism) + ": not offered, " + fw.name +
         (support == parallel_support::none
              ? " has none in its training recipes"
              : " runs it for full fine-tuning only, not with adapters");
}

// Every method on the GPUs as they are; false when an estimate refuses the request.
bool detailed_search::add_methods(plan_result& plan) {
  static const method multi[] = {
      {"ddp", data_parallel::ddp, parallel_method::cdp},
      {"zero1", data_parallel::zero1, parallel_method::cdp},
      {"zero2", data_parallel::zero2, parallel_method::cdp},
      {"zero3", data_parallel::zero3, parallel_method::adp},
      {"fsdp_full_shard", data_parallel::fsdp_full_shard, parallel_method::adp},
      {"fsdp_shard_grad_op", data_parallel::fsdp_shard_grad_op, parallel_method::adp},
      // Megatron-style TP over all the GPUs, with sequence parallelism (it only saves memory).
      {"tensor_parallel", data_parallel::none, parallel_method::tp},
      {"pipeline", data_parallel::none, parallel_method::single, true}};
  static const method one[] = {{"single", data_parallel::none, parallel_method::single}};
  const method* begin = cluster.gpus > 1 ? multi : one;
  const method* end = cluster.gpus > 1 ? multi + 8 : one + 1;
  const auto tensor_refused = refusal("tensor parallelism", framework_of(workload).tensor_parallel);
  const auto pipeline_refused =
      refusal("pipeline parallelism", framework_of(workload).pipeline_parallel);
  for (const auto& refused : {tensor_refused, pipeline_refused}) {
    if (refused && cluster.gpus > 1) plan.not_offered.push_back(*refused);
  }
  const auto& only = options.only_methods;
  std::string not_run;  // the data-parallel methods the framework's recipes do not run
  for (const method* m = begin; m != end; ++m) {
    if (!only.empty() && std::find(only.begin(), only.end(), m->name) == only.end()) continue;
    if (m->timing == parallel_method::tp && tensor_refused) continue;
    if (m->pipeline && pipeline_refused) continue;
    if (!m->pipeline && m->timing != parallel_method::tp &&
        data_parallel_refusal(framework_of(workload), m->sharding)) {
      not_run += (not_run.empty() ? "" : ", ") + std::string(m->name);
      continue;
    }
    plan.candidates.push_back(evaluate(*m, offload_placement{}));
    if (failure) return false;
  }
  if (!not_run.empty()) {
    plan.not_offered.push_back(not_run + ": not offered, " +
                               data_parallel_methods_text(framework_of(workload)));
  }
  return true;
}

// DP+TP: ZeRO-3 over groups of 2, 4, ... tensor-parallel GPUs within a node (LLMem's DP+TP;
// across nodes only the data-parallel collectives travel), or FSDP under torchtitan (its 2D
// parallelism). Splits the model does not divide into are left out.
bool detailed_search::add_tensor_parallel_groups(plan_result& plan) {
  static const method zero3_tp{"zero3", data_parallel::zero3, parallel_method::adp};
  static const method fsdp_tp{"fsdp_full_shard", data_parallel::fsdp_full_shard,
                              parallel_method::adp};
  // ZeRO-3 where the framework runs DeepSpeed, else FSDP (torchtitan's and torchtune's 2D).
  const method& dp_tp =
      data_parallel_refusal(framework_of(workload), data_parallel::zero3) ? fsdp_tp : zero3_tp;
  if (refusal("tensor parallelism", framework_of(workload).tensor_parallel)) return true;
  for (std::uint64_t tp = 2; tp < cluster.gpus && tp <= per_node; tp *= 2) {
    if (cluster.gpus % tp != 0 || check_tensor_parallel(spec, tp)) continue;
    plan.candidates.push_back(evaluate(dp_tp, offload_placement{}, tp));
    if (failure) return false;
  }
  return true;
}

// Sequences that the fastest candidate fits at most one of per GPU: FSDP with context
// parallelism over 2, 4, ... GPUs within a node (torchtitan's long-context recipe,
// accelerate's FSDP2 with cp_size: ring attention), before anything is offloaded; lengths the
// ring cannot split evenly are left out, and so are litgpt, torchtune and unsloth, which have
// no context parallelism.
bool detailed_search::add_context_parallel(plan_result& plan) {
  const bool fitted = choose_fastest(plan);
  const bool wanted =
      !fitted || sequences_per_gpu(plan.candidates[static_cast<std::size_t>(plan.choice)]) <= 1;
  const auto refused = refusal("context parallelism", framework_of(workload).context_parallel);
  if (wanted && refused && cluster.gpus > 1) plan.not_offered.push_back(*refused);
  if (wanted && !refused) {
    static const method fsdp_cp{"fsdp_full_shard", data_parallel::fsdp_full_shard,
                                parallel_method::adp};
    for (std::uint64_t cp = 2; cp <= cluster.gpus && cp <= per_node; cp *= 2) {
      if (cluster.gpus % cp != 0 || workload.seq_len % (2 * cp) != 0) continue;
      plan.candidates.push_back(evaluate(fsdp_cp, offload_placement{}, 1, cp));
      if (failure) return false;
    }
  }
  return true;
}

// Nothing fits on the GPUs alone: the offload configurations, in order of expected speed
// (DeepSpeed ZeRO-Offload, then parameters too, then activations, then NVMe as in
// ZeRO-Infinity and Fuyou); ZeRO runs on one GPU for its offloading.
bool detailed_search::add_offloads(plan_result& plan) {
  const auto cpu = offload_target::cpu;
  const auto nvme = offload_target::nvme;
  const auto none = offload_target::none;
  static const method zero2{"zero2", data_parallel::zero2, parallel_method::cdp};
  static const method zero3{"zero3", data_parallel::zero3, parallel_method::adp};
  const std::pair<const method*, offload_placement> offloads[] = {
      {&zero2, {cpu, none, none, none}}, {&zero3, {cpu, none, none, none}},
      {&zero3, {cpu, cpu, none, none}},  {&zero3, {cpu, cpu, none, cpu}},
      {&zero3, {nvme, cpu, none, cpu}},  {&zero3, {nvme, nvme, none, cpu}},
      {&zero3, {nvme, nvme, none, nvme}}};
  // bitsandbytes' 4-bit weights are not parameters ZeRO-3 moves to the host (PEFT's QLoRA +
  // ZeRO-3 guide, peft docs accelerate/deepspeed, runs offload_param_device none).
  const bool four_bit = workload.quantization == base_quantization::nf4 ||
                        workload.quantization == base_quantization::nf4_double_quant;
  const bool keep_params = four_bit && !framework_of(workload).offloads_4bit_params;
  if (keep_params)
    plan.not_offered.push_back(
        "parameter offload: not offered, ZeRO-3 does not move a 4-bit "
        "base's weights to host memory");
  const framework_traits& fw = framework_of(workload);
  for (const auto& [m, placement] : offloads) {
    if (keep_params && placement.params != offload_target::none) continue;
    if (data_parallel_refusal(fw, m->sharding)) continue;  // DeepSpeed's offloads
    plan.candidates.push_back(evaluate(*m, placement));
    if (failure) return false;
  }
  // A framework without DeepSpeed: FSDP's CPUOffload (parameters, gradients and the optimizer
  // step on the host), where its profile takes it.
  if (data_parallel_refusal(fw, data_parallel::zero3) &&
      !data_parallel_refusal(fw, data_parallel::fsdp_full_shard) && cluster.gpus > 1) {
    static const method fsdp{"fsdp_full_shard", data_parallel::fsdp_full_shard,
                             parallel_method::adp};
    plan.candidates.push_back(evaluate(fsdp, {cpu, cpu, cpu, none}));
    if (failure) return false;
    if (!plan.candidates.back().valid) {
      const std::string& why = plan.candidates.back().note;  // "[field] why"
      plan.not_offered.push_back("offload: not offered, " + why.substr(why.find("] ") + 2));
      plan.candidates.pop_back();
    }
  }
  return true;
}

// The plan's answer when an offload fits: the fastest, and what it needs of the host.
std::string detailed_search::offload_reason(const plan_candidate& c) const {
  const std::string speed_text = grouped_number(c.speed.tokens_per_s, 0);
  // A need without a stated budget is reported, not judged.
  std::string unchecked;
  if (cluster.host_ram_bytes == 0 && c.host_bytes_per_node > 0) unchecked = "host RAM";
  if (cluster.nvme_bytes == 0 && c.nvme_bytes_per_node > 0)
    unchecked += std::string(unchecked.empty() ? "" : " or ") + "NVMe";
  return "Nothing fits on the GPUs alone. The fastest offload that fits: " + label(c) +
         ", micro-batch " + std::to_string(c.max_micro_batch) + " per GPU at about " + speed_text +
         " tokens/s; it needs " + gib_text(c.at_max.peak_bytes) + " per GPU, " +
         gib_text(c.host_bytes_per_node) + " of host RAM and " + gib_text(c.nvme_bytes_per_node) +
         " of NVMe per node" +
         (unchecked.empty() ? std::string(".")
                            : " (no " + unchecked + " budget was stated: not checked).");
}

// Still nothing: the leanest configuration and the resource it is short of.
std::string detailed_search::shortfall_reason(const plan_candidate& leanest) const {
  std::string short_of;
  if (leanest.at_max.peak_bytes > usable) {
    short_of = "GPU memory: " + gib_text(leanest.at_max.peak_bytes) + " per GPU of " +
               gib_text(usable) + " (" + gib_text(leanest.at_max.peak_bytes - usable) + " short)";
  } else if (cluster.host_ram_bytes && leanest.host_bytes_per_node > cluster.host_ram_bytes) {
    short_of = "host RAM: " + gib_text(leanest.host_bytes_per_node) + " per node of " +
               gib_text(cluster.host_ram_bytes) + " (" +
               gib_text(leanest.host_bytes_per_node - cluster.host_ram_bytes) + " short)";
  } else {
    short_of = "NVMe: " + gib_text(leanest.nvme_bytes_per_node) + " per node of " +
               gib_text(cluster.nvme_bytes) + " (" +
               gib_text(leanest.nvme_bytes_per_node - cluster.nvme_bytes) + " short)";
  }
  // What would help that the run does not do already.
  std::string helps = "more GPUs";
  if (workload.finetune == finetune_kind::full) helps += ", LoRA or QLoRA";
  if (workload.finetune == finetune_kind::lora && workload.quantization == base_quantization::none)
    helps += ", QLoRA";
  if (!workload.grad_ckpt && !options.choose_checkpointing) helps += ", gradient checkpointing";
  helps += " or a shorter sequence";
  return "Nothing fits at micro-batch 1, even with everything the plan can offload moved off the "
         "GPU: short of " +
         short_of + ". Try " + helps + ".";
}

}  // namespace

result<plan_result> plan_detailed(const model_spec& spec, const param_count& counts,
                                  const cluster_spec& cluster, const training_config& workload,
                                  const plan_options& options) {
  // What no layout changes is answered as the estimate answers it, not as "nothing fits".
  plan_result plan;
  if (auto e = check_adapter_targets(spec, workload, plan.unmatched_targets)) return *e;
  // What the framework refuses whatever the layout (its model, fine-tuning, targets, precision)
  // is the request's error; what it refuses of a layout is that candidate's note.
  if (const auto refusals = framework_of(workload).refusals) {
    if (auto e = refusals(spec, workload); e && e->field.rfind("parallel.", 0) != 0) return *e;
  }
  // (Prompt tuning's virtual tokens lengthen every sequence the model runs.)
  if (auto e =
          check_training_lengths(spec, workload, 1, workload.seq_len + workload.virtual_tokens))
    return *e;
  detailed_search search{spec,
                         counts,
                         cluster,
                         workload,
                         options,
                         usable_bytes(cluster),
                         ranks_per_node(cluster),
                         options.fixed_micro_batch,
                         workload_speed(spec, counts, workload, options),
                         std::nullopt,
                         {}};
  if (!search.add_methods(plan)) return *search.failure;
  if (!options.only_methods.empty()) {
    choose_fastest(plan);
    return plan;
  }
  if (!search.add_tensor_parallel_groups(plan) || !search.add_context_parallel(plan))
    return *search.failure;
  if (options.gpus_only) {
    choose_fastest(plan);
    return plan;
  }
  if (choose_fastest(plan)) return plan;
  if (!search.add_offloads(plan)) return *search.failure;
  if (choose_fastest(plan)) {
    plan.reason = search.offload_reason(plan.candidates[static_cast<std::size_t>(plan.choice)]);
    return plan;
  }
  plan.reason = search.shortfall_reason(plan.candidates.back());
  return plan;
}

}  // namespace gpumem
