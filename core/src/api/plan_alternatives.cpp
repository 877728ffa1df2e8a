#include "api/plan_alternatives.hpp"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "gpumem/model/preset_catalog.hpp"
#include "text/number_text.hpp"

namespace gpumem {

using nlohmann::ordered_json;

namespace {

// A change to the run: what it is in words and the request members it sets.
struct change {
  std::string what;
  ordered_json patch;  // a JSON merge patch of the request
};

std::uint64_t count_at(const ordered_json& object, const char* key, std::uint64_t otherwise) {
  const auto found = object.find(key);
  return found != object.end() && found->is_number_unsigned() ? found->get<std::uint64_t>()
                                                              : otherwise;
}

std::string text_at(const ordered_json& object, const char* key, const char* otherwise) {
  const auto found = object.find(key);
  return found != object.end() && found->is_string() ? found->get<std::string>() : otherwise;
}

// The next larger card people rent, by memory: 24, 48, 80, 141 and 180 GB classes (L40S,
// H100 SXM, H200, B200: presets/gpus.json). A class up means at least a fifth more memory: a
// card within that of the user's (an L40S's 45 GiB beside an A100's 40) is not offered as larger
// (a product rule, not a measured figure).
std::string larger_gpu(const std::string& id) {
  const ordered_json current = find_gpu_preset(id);
  if (!current.is_object()) return "";
  const double memory = current.value("memory_bytes", 0.0);
  for (const char* next : {"l40s", "h100-sxm", "h200", "b200"}) {
    const ordered_json preset = find_gpu_preset(next);
    if (preset.is_object() && preset.value("memory_bytes", 0.0) > memory * 1.2) return next;
  }
  return "";
}

std::string gpu_name(const std::string& id) {
  return text_at(find_gpu_preset(id), "name", id.c_str());
}

// The changes that apply to this request.
std::vector<change> changes_for(const ordered_json& request) {
  const ordered_json& workload = request.value("workload", ordered_json::object());
  const ordered_json& cluster = request.value("cluster", ordered_json::object());
  const std::string finetune = text_at(workload, "finetune", "full");
  const std::string compute = text_at(workload, "compute", "amp_bf16");
  const std::string optimizer = text_at(workload, "optimizer", "adamw");
  const std::string weights = text_at(workload, "weights", "bf16");
  std::vector<change> out;
  if (finetune == "full" && (compute == "amp_bf16" || compute == "amp_fp16" || compute == "fp32")) {
    out.push_back({std::string("pure bf16 weights, gradients and states instead of ") +
                       (compute == "fp32" ? "fp32" : "mixed precision"),
                   {{"workload", {{"compute", "pure_bf16"}}}}});
  }
  if (finetune == "full" && (optimizer == "adamw" || optimizer == "adam")) {
    out.push_back({"8-bit AdamW (bitsandbytes) instead of AdamW",
                   {{"workload", {{"optimizer", "adamw_8bit"}}}}});
  }
  if (finetune == "full") {
    out.push_back({"LoRA (rank 16 on every linear layer) instead of full fine-tuning",
                   {{"workload",
                     {{"finetune", "lora"}, {"lora", {{"r", 16}, {"targets", {"all-linear"}}}}}}}});
  }
  if (finetune == "lora" && (weights == "bf16" || weights == "fp16" || weights == "fp32")) {
    out.push_back(
        {"QLoRA (a 4-bit NF4 base) instead of LoRA", {{"workload", {{"weights", "nf4"}}}}});
  }
  // (The request has been read: these are whole numbers in their ranges.)
  const std::uint64_t seq = count_at(workload, "seq_len", 512);
  if (seq >= 256) {
    out.push_back({"sequences of " + grouped_number(static_cast<double>(seq / 2), 0) +
                       " tokens instead of " + grouped_number(static_cast<double>(seq), 0),
                   {{"workload", {{"seq_len", seq / 2}}}}});
  }
  const std::uint64_t gpus = count_at(cluster, "gpus", 1);
  if (!cluster.contains("gpus_per_node") && gpus < 8) {
    out.push_back({std::to_string(2 * gpus) + " GPUs instead of " + std::to_string(gpus),
                   {{"cluster", {{"gpus", 2 * gpus}}}}});
  }
  const ordered_json& gpu = cluster.value("gpu", ordered_json());
  if (gpu.is_string()) {
    const std::string next = larger_gpu(gpu.get<std::string>());
    if (!next.empty()) {
      out.push_back({gpu_name(next) + " instead of " + gpu_name(gpu.get<std::string>()),
                     {{"cluster", {{"gpu", next}}}}});
    }
  }
  return out;
}

// The methods a changed run is planned with: the plan's choice where it fits on the GPUs alone
// (DDP and FSDP where one GPU becomes two), which keeps the search to one method a change;
// otherwise every method on the GPUs alone (empty).
std::vector<std::string> methods_for(const plan_result& base, const ordered_json& patch) {
  if (base.choice < 0) return {};
  const plan_candidate& c = base.candidates[static_cast<std::size_t>(base.choice)];
  if (c.offload.any() || c.parallel.tp > 1 || c.parallel.cp > 1) return {};
  const bool more_gpus = patch.contains("cluster") && patch["cluster"].contains("gpus");
  if (more_gpus && c.method == "single") return {"ddp", "fsdp_full_shard"};
  return {c.method};
}

}  // namespace

ordered_json plan_alternatives(const ordered_json& request, const plan_result& base,
                               const restricted_plan& plan_for) {
  const plan_candidate* chosen =
      base.choice >= 0 ? &base.candidates[static_cast<std::size_t>(base.choice)] : nullptr;
  const bool on_gpus = chosen != nullptr && !chosen->offload.any();
  struct found {
    const change* what;
    plan_candidate candidate;
  };
  const std::vector<change> changes = changes_for(request);
  std::vector<found> kept;
  for (const change& c : changes) {
    ordered_json patched = request;
    patched.merge_patch(c.patch);
    // Checkpointing as the plan chose it for its choice (not weighed again for every change).
    if (on_gpus && chosen->grad_ckpt_chosen) patched["workload"]["grad_ckpt"] = chosen->grad_ckpt;
    auto plan = plan_for(patched, methods_for(base, c.patch));  // (a refusal: skipped)
    if (!plan.ok() || plan.value().choice < 0) continue;
    const plan_candidate& best =
        plan.value().candidates[static_cast<std::size_t>(plan.value().choice)];
    // Faster than the choice by more than the step-time model can tell apart (speed_tie), or
    // fitting where nothing did on the GPUs alone.
    if (on_gpus && best.speed.tokens_per_s <= chosen->speed.tokens_per_s * plan_speed_tie) continue;
    kept.push_back({&c, best});
  }
  std::stable_sort(kept.begin(), kept.end(), [](const found& a, const found& b) {
    return a.candidate.speed.tokens_per_s > b.candidate.speed.tokens_per_s;
  });
  if (kept.size() > 5) kept.resize(5);
  ordered_json out = ordered_json::array();
  for (const found& f : kept) {
    const plan_candidate& c = f.candidate;
    ordered_json entry = ordered_json::object();
    entry["change"] = f.what->what;
    entry["request"] = f.what->patch;
    entry["label"] = candidate_label(c);
    entry["max_micro_batch"] = c.max_micro_batch;
    entry["peak_bytes"] = c.at_max.peak_bytes;
    entry["tokens_per_s"] = c.speed.tokens_per_s;
    // ("One GPU" is the one label that starts with a word, not a name: lower-cased inside.)
    std::string label = candidate_label(c);
    if (label.rfind("One ", 0) == 0) label[0] = 'o';
    entry["sentence"] = "With " + f.what->what + ", " + label + " fits micro-batch " +
                        std::to_string(c.max_micro_batch) + " at about " +
                        grouped_number(c.speed.tokens_per_s, 0) + " tokens/s (" +
                        gib_text(c.at_max.peak_bytes) + " per GPU).";
    out.push_back(std::move(entry));
  }
  return out;
}

}  // namespace gpumem
