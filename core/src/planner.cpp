#include "gpumem/planner.hpp"

#include <algorithm>
#include <cstdio>
#include <optional>

namespace gpumem {

namespace {

std::string gib_text(std::uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f GiB", static_cast<double>(bytes) / (1ULL << 30));
  return text;
}

std::string label(const plan_candidate& c) {
  std::string name = c.method;
  if (c.parallel.method == parallel_method::dp_tp)
    name += " (tp " + std::to_string(c.parallel.tp) + ")";
  return name;
}

std::string rate_text(double tokens_per_s) {
  char text[32];
  std::snprintf(text, sizeof text, "%.0f", tokens_per_s);
  return text;
}

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
  const std::uint64_t per_node =
      cluster.gpus_per_node > 0 ? std::min(cluster.gpus_per_node, cluster.gpus) : cluster.gpus;
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

// Picks the fitting candidate with the most tokens/s and says why in one sentence; false when
// none fits.
bool choose_fastest(plan_result& plan) {
  // Speeds within 1 % count as a tie (the step-time model is not finer than that), broken by
  // the larger micro-batch, then by the order of the candidates (simpler methods first).
  const auto better = [](const plan_candidate& a, const plan_candidate& b) {
    if (a.speed.tokens_per_s > b.speed.tokens_per_s * 1.01) return true;
    if (b.speed.tokens_per_s > a.speed.tokens_per_s * 1.01) return false;
    return a.max_micro_batch > b.max_micro_batch;
  };
  for (std::size_t i = 0; i < plan.candidates.size(); ++i) {
    const auto& c = plan.candidates[i];
    if (!c.fits) continue;
    if (plan.choice < 0 || better(c, plan.candidates[static_cast<std::size_t>(plan.choice)])) {
      plan.choice = static_cast<int>(i);
    }
  }
  if (plan.choice < 0) return false;
  const auto& best = plan.candidates[static_cast<std::size_t>(plan.choice)];
  std::string runner_up;
  double second = 0;
  bool tied = false;
  for (const auto& c : plan.candidates) {
    if (&c == &best || !c.fits) continue;
    tied |= c.speed.tokens_per_s * 1.01 >= best.speed.tokens_per_s;
    if (c.speed.tokens_per_s <= second) continue;
    second = c.speed.tokens_per_s;
    runner_up = label(c);
  }
  std::string why;
  if (runner_up.empty()) {
    why = ", and the only one that fits.";
  } else if (tied) {
    why = "; no method that fits is faster, and this one fits the largest micro-batch.";
  } else {
    why = " against " + rate_text(second) + " for " + runner_up + ".";
  }
  plan.reason = label(best) + " is the fastest method that fits: micro-batch " +
                std::to_string(best.max_micro_batch) + " per GPU at an estimated " +
                rate_text(best.speed.tokens_per_s) + " tokens/s" + why;
  return true;
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
    c.max_micro_batch = llmem_max_batch(model.value(), fixed.value(), cluster, options.seq_len,
                                        options.max_micro_batch);
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

result<plan_result> plan_detailed(const model_spec& spec, const param_count& counts,
                                  const cluster_spec& cluster, const training_config& workload,
                                  const plan_options& options) {
  struct method {
    const char* name;
    data_parallel sharding;
    parallel_method timing;  // the step-time model's communication pattern
  };
  static const method multi[] = {
      {"ddp", data_parallel::ddp, parallel_method::cdp},
      {"zero1", data_parallel::zero1, parallel_method::cdp},
      {"zero2", data_parallel::zero2, parallel_method::cdp},
      {"zero3", data_parallel::zero3, parallel_method::adp},
      {"fsdp_full_shard", data_parallel::fsdp_full_shard, parallel_method::adp},
      {"fsdp_shard_grad_op", data_parallel::fsdp_shard_grad_op, parallel_method::adp},
      // Megatron-style TP over all the GPUs, with sequence parallelism (it only saves memory).
      {"tensor_parallel", data_parallel::none, parallel_method::tp}};
  static const method one[] = {{"single", data_parallel::none, parallel_method::single}};
  const method* begin = cluster.gpus > 1 ? multi : one;
  const method* end = cluster.gpus > 1 ? multi + 7 : one + 1;
  const std::uint64_t usable = usable_bytes(cluster);
  step_time_options speed = options.speed;
  speed.recompute = workload.grad_ckpt;
  speed.bf16 = workload.compute == compute_precision::amp_bf16 ||
               workload.compute == compute_precision::pure_bf16;
  speed.causal_kernel = workload.attention == attention_kernel::sdpa;
  speed.weight_gradients = workload.finetune == finetune_kind::full;

  plan_result plan;
  for (const method* m = begin; m != end; ++m) {
    plan_candidate c;
    c.method = m->name;
    const bool tensor = m->timing == parallel_method::tp;
    c.parallel = {m->timing, tensor ? cluster.gpus : 1, false};
    c.sequence_parallel = tensor;
    training_config config = workload;
    config.sharding = m->sharding;
    config.dp_degree = tensor ? 1 : cluster.gpus;
    config.tp_degree = tensor ? cluster.gpus : 1;
    config.sequence_parallel = tensor;
    step_time_options timing = speed;
    timing.all_reduce_every_linear = !tensor;  // Megatron: two all-reduces per block and pass
    if (tensor && cluster.gpus_per_node > 0 && cluster.gpus > cluster.gpus_per_node) {
      c.valid = false;  // its all-reduces would cross the inter-node network every block
      c.note = "tensor parallelism stays within a node (" + std::to_string(cluster.gpus_per_node) +
               " GPUs)";
      plan.candidates.push_back(c);
      continue;
    }
    // The device footprint at a batch, or an error for a model the estimator does not cover.
    std::optional<error> failure;
    auto device_used = [&](std::uint64_t batch, training_estimate* keep) -> std::uint64_t {
      config.micro_batch = batch;
      auto e = estimate_training_step(spec, config, cluster.gpu);
      if (!e.ok()) {
        failure = e.failure();
        return ~0ULL;
      }
      if (keep != nullptr) *keep = e.value();
      return device_used_bytes(e.value(), cluster.cuda_context_bytes);
    };
    const auto fits = [&](std::uint64_t b) { return device_used(b, nullptr) <= usable; };
    std::uint64_t good = 0;
    if (fits(1)) {
      good = 1;
      std::uint64_t bad = 2;
      while (bad <= options.max_micro_batch && fits(bad)) {
        good = bad;
        bad *= 2;
      }
      bad = std::min(bad, options.max_micro_batch + 1);
      while (bad - good > 1) {
        const std::uint64_t mid = good + (bad - good) / 2;
        (fits(mid) ? good : bad) = mid;
      }
    }
    if (failure && tensor && failure->code == "parallel.invalid_degree") {
      c.valid = false;
      c.note = failure->message;
      plan.candidates.push_back(c);
      continue;
    }
    if (failure) return *failure;
    c.max_micro_batch = good;
    c.fits = good > 0;
    const std::uint64_t batch = c.fits ? good : 1;
    training_estimate at;
    c.at_max.last_rank = cluster.gpus - 1;
    c.at_max.peak_bytes = device_used(batch, &at);
    c.at_max.fits = c.fits;
    c.at_max.components = peak_components(at, "device_used", cluster.cuda_context_bytes);
    c.speed =
        estimate_step_time(spec, counts, cluster, c.parallel, batch, workload.seq_len, timing);
    plan.candidates.push_back(c);
  }
  if (!choose_fastest(plan)) {
    // The leanest of the methods that can run here (the first one always can).
    const plan_candidate* leanest = &plan.candidates.front();
    for (const auto& c : plan.candidates) {
      if (c.valid && c.at_max.peak_bytes < leanest->at_max.peak_bytes) leanest = &c;
    }
    const plan_candidate& smallest = *leanest;
    plan.reason = "Nothing fits at micro-batch 1: the leanest method, " + smallest.method +
                  ", needs " + gib_text(smallest.at_max.peak_bytes) + " per GPU of " +
                  gib_text(usable) +
                  ". Use more GPUs, LoRA/QLoRA, gradient checkpointing, or CPU offload.";
  }
  return plan;
}

}  // namespace gpumem
