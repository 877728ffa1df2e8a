#include "plan/plan_choice.hpp"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "text/number_text.hpp"

namespace gpumem {

namespace {

// An offload placement in words, e.g. "the optimizer on NVMe, the parameters in host RAM".
std::string describe(const offload_placement& o) {
  // Grouped by where they go: "the optimizer and the parameters in host RAM, the activations on
  // NVMe".
  const std::pair<const char*, offload_target> parts[] = {{"the optimizer", o.optimizer},
                                                          {"the parameters", o.params},
                                                          {"the gradients", o.gradients},
                                                          {"the activations", o.activations}};
  std::string out;
  for (const offload_target where : {offload_target::cpu, offload_target::nvme}) {
    std::vector<const char*> names;
    for (const auto& [name, target] : parts) {
      if (target == where) names.push_back(name);
    }
    if (names.empty()) continue;
    std::string list;
    for (std::size_t i = 0; i < names.size(); ++i) {
      list += std::string(i == 0 ? "" : i + 1 == names.size() ? " and " : ", ") + names[i];
    }
    out += std::string(out.empty() ? "" : ", ") + list +
           (where == offload_target::cpu ? " in host RAM" : " on NVMe");
  }
  return out;
}

const auto label = candidate_label;

}  // namespace

std::optional<error> check_plan_size(const model_spec& spec, const std::string& search) {
  if (spec.layers.size() <= max_planned_blocks) return std::nullopt;
  return error{"request.too_large", "model",
               "[model] has " + grouped_number(static_cast<double>(spec.layers.size()), 0) +
                   " blocks; " + search +
                   " replays the step many times and takes models of up to " +
                   grouped_number(static_cast<double>(max_planned_blocks), 0) +
                   " blocks: estimate one method at a fixed micro-batch instead"};
}

std::string candidate_label(const plan_candidate& c) {
  std::string name = method_label(c.method);
  if (c.parallel.method == parallel_method::dp_tp)
    name += " with " + std::to_string(c.parallel.tp) + "-way tensor parallelism";
  if (c.parallel.cp > 1)
    name += " with " + std::to_string(c.parallel.cp) + "-way context parallelism";
  if (c.offload.any()) name += " with " + describe(c.offload);
  if (c.grad_ckpt_chosen && c.grad_ckpt) {
    name += name.find(" with ") == std::string::npos ? " with" : " and";
    name += " gradient checkpointing";
  }
  return name;
}

// GPUs that share each of a candidate's sequences: its tensor-parallel group (TP over all the
// GPUs, DP+TP's groups) and its context-parallel group; its micro-batch is per such group.
std::uint64_t gpus_per_sequence(const plan_candidate& c) {
  const bool tensor =
      c.parallel.method == parallel_method::tp || c.parallel.method == parallel_method::dp_tp;
  return (tensor ? std::max<std::uint64_t>(c.parallel.tp, 1) : 1) *
         std::max<std::uint64_t>(c.parallel.cp, 1);
}

double sequences_per_gpu(const plan_candidate& c) {
  return static_cast<double>(c.max_micro_batch) / static_cast<double>(gpus_per_sequence(c));
}

std::string rate_text(double tokens_per_s) { return grouped_number(tokens_per_s, 0); }

// Picks the fitting candidate with the most tokens/s and says why in one sentence; false when
// none fits.
bool choose_fastest(plan_result& plan) {
  // Within plan_speed_tie of each other, the simpler layout wins (fewer GPUs sharing a sequence:
  // no tensor or context parallelism), then the more sequences per GPU, then the order of the
  // candidates (simpler methods first).
  const auto better = [](const plan_candidate& a, const plan_candidate& b) {
    if (a.speed.tokens_per_s > b.speed.tokens_per_s * plan_speed_tie) return true;
    if (b.speed.tokens_per_s > a.speed.tokens_per_s * plan_speed_tie) return false;
    if (gpus_per_sequence(a) != gpus_per_sequence(b))
      return gpus_per_sequence(a) < gpus_per_sequence(b);
    if (sequences_per_gpu(a) != sequences_per_gpu(b))
      return sequences_per_gpu(a) > sequences_per_gpu(b);
    return false;  // the earlier candidate, the simpler method
  };
  plan.choice = -1;
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
  std::size_t tied = 0;
  for (const auto& c : plan.candidates) {
    if (&c == &best || !c.fits) continue;
    if (c.speed.tokens_per_s * plan_speed_tie >= best.speed.tokens_per_s) ++tied;
    if (c.speed.tokens_per_s <= second) continue;
    second = c.speed.tokens_per_s;
    runner_up = label(c);
  }
  const std::uint64_t group = gpus_per_sequence(best);
  const std::string at =
      ": micro-batch " + std::to_string(best.max_micro_batch) +
      (group > 1 ? " per group of " + std::to_string(group) + " GPUs" : " per GPU") +
      (best.grad_accumulation > 1
           ? " with " + std::to_string(best.grad_accumulation) + " micro-batches accumulated a step"
           : "") +
      " at an estimated " + rate_text(best.speed.tokens_per_s) + " tokens/s";
  if (tied > 0) {
    plan.reason = label(best) + at + ". " + std::to_string(tied) +
                  (tied == 1 ? " other method that fits is" : " other methods that fit are") +
                  " within 10 % of it, closer than the step-time model can tell apart: this one "
                  "is the simplest layout among them that fits the most sequences per GPU.";
    return true;
  }
  plan.reason = label(best) + " is the fastest method that fits" + at +
                (runner_up.empty() ? ", and the only one that fits."
                                   : " against " + rate_text(second) + " for " + runner_up + ".");
  return true;
}

}  // namespace gpumem
