#include "gpumem/inference/inference_solver.hpp"

#include <algorithm>
#include <optional>

#include "plan/boundary_search.hpp"

namespace gpumem {

namespace {

// vLLM sizes its own reservation (gpu_memory_utilization of the card, vllm/worker/worker.py
// determine_num_available_blocks): the headroom applies to the KV capacity it leaves, not to
// the card. Every other framework packs to the usable memory.
std::uint64_t memory_limit(const inference_config& config, std::uint64_t memory,
                           std::uint64_t usable) {
  return config.kv == kv_cache_kind::paged ? memory : usable;
}

// vLLM's paged cache: the tokens the request asks for, and what the KV capacity allows of them,
// less the headroom's share of it.
struct paged_demand {
  double asked = 0;
  double allowed = 0;
};

paged_demand paged_demand_of(const inference_estimate& e, const inference_config& config,
                             std::uint64_t memory, std::uint64_t usable) {
  const double headroom =
      memory > 0 ? static_cast<double>(memory - usable) / static_cast<double>(memory) : 0.0;
  return {static_cast<double>(config.batch) *
              static_cast<double>(config.prompt_tokens + config.new_tokens),
          static_cast<double>(e.kv_capacity_tokens) * (1.0 - headroom)};
}

fit_verdict serving_verdict(const inference_estimate& e, const inference_config& config,
                            std::uint64_t memory, std::uint64_t usable, std::uint64_t used) {
  if (config.kv != kv_cache_kind::paged) return judge_fit(used, memory, usable, e.fits_request);
  if (used > memory || !e.fits_request) return fit_verdict::does_not_fit;
  const paged_demand d = paged_demand_of(e, config, memory, usable);
  return d.asked > d.allowed ? fit_verdict::tight : fit_verdict::fits;
}

// 2^64 bytes: more than a probe can be judged by (its footprint is then no bound).
constexpr double beyond_any = 18446744073709551616.0;

// What a probe of the solver is judged by, in bytes against memory_limit: the busiest stage's
// device memory, or under vLLM's paged cache (its reservation fixed by gpu_memory_utilization)
// the tokens the request asks of the KV capacity less the headroom's share, scaled so that the
// card's memory is the capacity.
std::uint64_t probe_bytes(const inference_ranks& ranks, const inference_config& config,
                          std::uint64_t memory, std::uint64_t usable,
                          std::uint64_t cuda_context_bytes) {
  double worst = 0;
  for (const auto& e : ranks.stages) {
    double bytes = static_cast<double>(inference_device_used(e, cuda_context_bytes));
    if (config.kv == kv_cache_kind::paged) {
      const paged_demand d = paged_demand_of(e, config, memory, usable);
      bytes = d.allowed > 0 ? static_cast<double>(memory) * d.asked / d.allowed : beyond_any;
    }
    worst = std::max(worst, bytes);
  }
  return worst >= beyond_any ? ~0ULL : static_cast<std::uint64_t>(worst);
}

}  // namespace

result<inference_ranks> estimate_inference_ranks(const model_spec& spec,
                                                 const inference_config& config,
                                                 const gpu_spec& gpu, std::uint64_t usable_bytes,
                                                 std::uint64_t cuda_context_bytes) {
  inference_ranks out;
  out.fits = true;
  inference_config stage_config = config;
  std::uint64_t worst_bytes = 0;
  for (std::uint64_t stage = 0; stage < std::max<std::uint64_t>(config.pp_degree, 1); ++stage) {
    stage_config.pp_stage = stage;
    auto estimate = estimate_inference(spec, stage_config, gpu);
    if (!estimate.ok()) return estimate.failure();
    const std::uint64_t used = inference_device_used(estimate.value(), cuda_context_bytes);
    const fit_verdict verdict =
        serving_verdict(estimate.value(), stage_config, gpu.memory_bytes, usable_bytes, used);
    const bool fits = verdict == fit_verdict::fits;
    if (used > worst_bytes) {
      worst_bytes = used;
      out.worst = out.stages.size();
    }
    if (verdict != fit_verdict::fits && out.limited_by != "memory") {
      out.limited_by = used > memory_limit(stage_config, gpu.memory_bytes, usable_bytes)
                           ? "memory"
                           : "kv_capacity";
    }
    out.fits = out.fits && fits;
    out.verdict = worse(out.verdict, verdict);
    out.stage_fits.push_back(fits);
    out.stage_verdicts.push_back(verdict);
    out.stages.push_back(std::move(estimate.value()));
  }
  return out;
}

result<inference_solution> solve_inference_limit(const model_spec& spec,
                                                 const inference_config& config,
                                                 const gpu_spec& gpu, std::uint64_t usable_bytes,
                                                 std::uint64_t cuda_context_bytes,
                                                 inference_limit limit, std::uint64_t upper) {
  inference_config trial = config;
  const bool context = limit == inference_limit::max_context;
  if (context) trial.kv_cache_tokens = 0;
  // The value tried: tokens per sequence (prompt + new_tokens, the prompt at least 1) or
  // sequences.
  const std::uint64_t lowest = context ? config.new_tokens + 1 : 1;
  std::optional<error> failure;
  const std::uint64_t limit_bytes = memory_limit(config, gpu.memory_bytes, usable_bytes);
  const auto probe = [&](std::uint64_t value) {
    if (context) {
      trial.prompt_tokens = value - config.new_tokens;
    } else {
      trial.batch = value;
    }
    auto ranks = failure
                     ? result<inference_ranks>(*failure)
                     : estimate_inference_ranks(spec, trial, gpu, usable_bytes, cuda_context_bytes);
    if (!ranks.ok()) {
      if (ranks.failure().code != "request.too_large") failure = ranks.failure();
      return boundary_probe{false, ~0ULL};
    }
    return boundary_probe{ranks.value().fits, probe_bytes(ranks.value(), trial, gpu.memory_bytes,
                                                          usable_bytes, cuda_context_bytes)};
  };
  inference_solution out;
  if (upper < lowest) {
    out.capped = true;  // no length fits within the bound (the model's positions)
    return out;
  }
  const boundary_probe first = probe(lowest);
  if (failure) return *failure;
  if (!first.holds) return out;
  // From the lowest value on, the footprint's growth is learnt from the probes (no hint: the
  // first guess is the bound, then the secant across the bracket; boundary_search.hpp). The
  // footprint grows with the tokens and the sequences, so the boundary is the one bisection finds.
  out.value = upper == lowest
                  ? lowest
                  : search_boundary({lowest, first.bytes, upper + 1, limit_bytes, 0}, probe);
  if (failure) return *failure;
  out.capped = out.value == upper;
  return out;
}

inference_plan plan_inference(const model_spec& spec, const inference_config& config,
                              const gpu_spec& gpu, std::uint64_t usable_bytes,
                              std::uint64_t cuda_context_bytes, std::uint64_t max_gpus) {
  inference_plan out;
  std::vector<std::uint64_t> counts;
  for (std::uint64_t g = 1; g < max_gpus; g *= 2) counts.push_back(g);
  counts.push_back(max_gpus);
  for (const std::uint64_t g : counts) {
    for (const char* method : {"single", "tensor_parallel", "pipeline"}) {
      if ((g == 1) != (std::string(method) == "single")) continue;
      inference_candidate candidate;
      candidate.method = method;
      candidate.gpus = g;
      inference_config trial = config;
      trial.tp_degree = candidate.method == "tensor_parallel" ? g : 1;
      trial.pp_degree = candidate.method == "pipeline" ? g : 1;
      auto ranks = estimate_inference_ranks(spec, trial, gpu, usable_bytes, cuda_context_bytes);
      if (!ranks.ok()) {
        candidate.valid = false;
        candidate.limited_by = "invalid";
        candidate.note = ranks.failure().message;
      } else {
        const inference_ranks& r = ranks.value();
        candidate.fits = r.fits;
        candidate.verdict = r.verdict;
        candidate.limited_by = r.limited_by;
        candidate.peak_bytes = inference_device_used(r.stages[r.worst], cuda_context_bytes);
      }
      out.candidates.push_back(candidate);
      if (out.choice < 0 && candidate.fits)
        out.choice = static_cast<int>(out.candidates.size() - 1);
    }
  }
  if (out.choice < 0) {
    out.reason = (max_gpus == 1 ? std::string("Nothing fits on one GPU")
                                : "Nothing fits on up to " + std::to_string(max_gpus) + " GPUs") +
                 ": quantise the weights, shorten the context, serve fewer sequences at once or "
                 "add GPUs.";
  } else {
    const auto& c = out.candidates[static_cast<std::size_t>(out.choice)];
    out.reason = c.gpus == 1 ? "The weights and the cache fit on it: nothing to split."
                             : std::to_string(c.gpus) + " GPUs are the fewest that serve it, " +
                                   (c.method == "tensor_parallel"
                                        ? "with tensor parallelism (every GPU works on each token)."
                                        : "with the layers split (tensor parallelism does not fit "
                                          "or does not divide the model).");
  }
  return out;
}

}  // namespace gpumem
