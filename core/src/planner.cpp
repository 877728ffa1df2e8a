#include "gpumem/planner.hpp"

#include <algorithm>
#include <cstdio>

namespace gpumem {

namespace {

std::string gib_text(std::uint64_t bytes) {
  char text[32];
  std::snprintf(text, sizeof text, "%.1f GiB", static_cast<double>(bytes) / (1ULL << 30));
  return text;
}

std::string label(const parallel_config& p) {
  std::string name = method_name(p.method);
  if (p.method == parallel_method::dp_tp) name += " (tp " + std::to_string(p.tp) + ")";
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
  advice.method = label(base.parallel);
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

  for (std::size_t i = 0; i < plan.candidates.size(); ++i) {
    const auto& c = plan.candidates[i];
    if (!c.fits) continue;
    if (plan.choice < 0 ||
        c.speed.tokens_per_s >
            plan.candidates[static_cast<std::size_t>(plan.choice)].speed.tokens_per_s) {
      plan.choice = static_cast<int>(i);
    }
  }
  if (plan.choice >= 0) {
    const auto& best = plan.candidates[static_cast<std::size_t>(plan.choice)];
    std::string runner_up;
    double second = 0;
    for (const auto& c : plan.candidates) {
      if (&c == &best || !c.fits || c.speed.tokens_per_s <= second) continue;
      second = c.speed.tokens_per_s;
      runner_up = label(c.parallel);
    }
    plan.reason = label(best.parallel) + " is the fastest method that fits: micro-batch " +
                  std::to_string(best.max_micro_batch) + " per GPU at an estimated " +
                  rate_text(best.speed.tokens_per_s) + " tokens/s" +
                  (runner_up.empty() ? std::string(", and the only one that fits.")
                                     : " against " + rate_text(second) + " for " + runner_up + ".");
    return plan;
  }
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

}  // namespace gpumem
