#include "api/estimate_json.hpp"

#include <iterator>
#include <utility>

#include "api/json_text.hpp"

namespace gpumem {

using nlohmann::ordered_json;

ordered_json cluster_json(const cluster_spec& c) {
  ordered_json gpu = json_object(4);
  auto& g = members_of(gpu);
  g.emplace_back("id", c.gpu.id);
  g.emplace_back("name", c.gpu.name);
  g.emplace_back("architecture", c.gpu.architecture);
  g.emplace_back("memory_bytes", c.gpu.memory_bytes);
  ordered_json out = json_object(9);
  auto& m = members_of(out);
  m.emplace_back("gpu", std::move(gpu));
  m.emplace_back("gpus", c.gpus);
  m.emplace_back("gpus_per_node", c.gpus_per_node);
  m.emplace_back("cuda_context_bytes", c.cuda_context_bytes);
  m.emplace_back("headroom_bytes", c.headroom_bytes);
  m.emplace_back("usable_bytes", c.gpu.memory_bytes - c.headroom_bytes);
  m.emplace_back("host_ram_bytes", c.host_ram_bytes);
  m.emplace_back("nvme_bytes", c.nvme_bytes);
  return out;
}

ordered_json rank_json(const rank_estimate& rank) {
  ordered_json components = json_object(rank.components.size());
  for (const auto& c : rank.components) members_of(components).emplace_back(c.name, c.bytes);
  ordered_json ranks = json_object(2);
  members_of(ranks).emplace_back("first", rank.first_rank);
  members_of(ranks).emplace_back("last", rank.last_rank);
  ordered_json out = json_object(6);
  auto& m = members_of(out);
  m.emplace_back("rank", rank.first_rank);
  m.emplace_back("ranks", std::move(ranks));
  m.emplace_back("peak_bytes", rank.peak_bytes);
  m.emplace_back("fits", rank.fits);
  m.emplace_back("verdict", verdict_name(rank.verdict));
  m.emplace_back("components", std::move(components));
  return out;
}

ordered_json timeline_json(const timeline_series& series, std::uint64_t constant_bytes) {
  // The components present at some point of the step, in the categories' order.
  std::array<bool, memory_category_count> present{};
  for (const auto& sample : series.samples) {
    for (std::size_t c = 0; c < memory_category_count; ++c) present[c] |= sample.by_category[c] > 0;
  }
  ordered_json samples = ordered_json::array();
  for (const auto& sample : series.samples) {
    ordered_json components = ordered_json::object();
    for (std::size_t c = 0; c < memory_category_count; ++c) {
      if (present[c])
        components[category_name(static_cast<memory_category>(c))] = sample.by_category[c];
    }
    samples.push_back({{"event", sample.event},
                       {"phase", series.phases.at(sample.phase)},
                       {"allocated_bytes", sample.allocated},
                       {"reserved_bytes", sample.reserved},
                       {"components", std::move(components)}});
  }
  return {{"events", series.events},
          {"phases", series.phases},
          {"constant_bytes", constant_bytes},
          {"peak_sample", series.peak_sample},
          {"samples", std::move(samples)}};
}

ordered_json step_time_json(const step_time& s) {
  ordered_json out = json_object(14);
  auto& m = members_of(out);
  m.emplace_back("step_s", s.step_s);
  m.emplace_back("compute_s", s.compute_s);
  m.emplace_back("communication_s", s.communication_s);
  m.emplace_back("exposed_communication_s", s.exposed_communication_s);
  m.emplace_back("attention_memory_s", s.attention_memory_s);
  m.emplace_back("dequantize_s", s.dequantize_s);
  m.emplace_back("adapter_s", s.adapter_s);
  m.emplace_back("elementwise_s", s.elementwise_s);
  m.emplace_back("optimizer_s", s.optimizer_s);
  m.emplace_back("dispatch_s", s.dispatch_s);
  m.emplace_back("offload_s", s.offload_s);
  m.emplace_back("tokens_per_s", s.tokens_per_s);
  m.emplace_back("tokens_per_s_per_gpu", s.tokens_per_s_per_gpu);
  m.emplace_back("flops_per_token", s.flops_per_token);
  return out;
}

ordered_json m_init_json(const llmem_fixed& f) {
  ordered_json gemini = json_object(4);
  auto& g = members_of(gemini);
  g.emplace_back("chunk_size_elements", f.chunk_size_elements);
  g.emplace_back("chunks_per_dtype", f.chunk_count);
  g.emplace_back("dp_degree", f.dp_degree);
  g.emplace_back("keep_gathered", f.keep_gathered);
  ordered_json out = json_object(7);
  auto& m = members_of(out);
  m.emplace_back("bytes", f.m_init);
  m.emplace_back("cuda_context", f.cuda_context);
  m.emplace_back("model_buffers", f.model_buffers);
  m.emplace_back("fp16_chunks", f.fp16_chunks);
  m.emplace_back("fp32_chunks", f.fp32_chunks);
  m.emplace_back("allocator_rounding", f.allocator_rounding);
  m.emplace_back("gemini", std::move(gemini));
  return out;
}

ordered_json llmem_component_notes() {
  static const std::pair<const char*, const char*> notes[] = {
      {"m_init",
       "CUDA context (per GPU architecture) + model buffers + Colossal-AI Gemini's fp16 "
       "and fp32 parameter chunks on this rank, through PyTorch's caching allocator "
       "(LLMem measures this after booster.boost; gpumem computes it: Gemini "
       "search_utils.py / manager.py / chunk.py, v0.3.0)"},
      {"optimizer_states",
       "Adam's two fp32 moments per selected tensor, 2 x R(4n/N) (LLMem "
       "size_estimator.py; HybridAdam creates them on the first step)"},
      {"gathered_params",
       "fp16 parameters re-gathered from the other ranks: ADP R(R(2n)(N-1)/N), "
       "DP+TP R(R(2n)((N-T)/N - 1/N)) (LLMem size_estimator.py)"},
      {"lm_head_weight",
       "the last selected tensor (the LM head) in fp16, R(2n) (LLMem "
       "size_estimator.py)"},
      {"input", "int64 token ids of the two-sample probe batch, R(16 s) (LLMem size_estimator.py)"},
      {"activations",
       "what gradient checkpointing keeps: the embedding output twice, the input of "
       "blocks 2..L and the last hidden state, fp16 (LLMem size_estimator.py)"},
      {"logits_and_loss",
       "logits, their shifted copy and cross-entropy's buffer, "
       "R(eBsV) + 2R(eB(s-1)V), e = 4 for CodeGen and GPT-Neo, else 2 (LLMem "
       "size_estimator.py)"},
      {"tp_gather_buffers",
       "backward all-gather of the split activation gradient per block "
       "boundary, (L-1) R(2BsH(T-1)/T) (LLMem size_estimator.py)"},
  };
  ordered_json out = json_object(std::size(notes));
  for (const auto& [component, note] : notes) members_of(out).emplace_back(component, note);
  return out;
}

namespace {

// A plan candidate's offload: where each state goes and the host budgets it needs.
ordered_json offload_json(const plan_candidate& c) {
  return {{"optimizer", offload_target_name(c.offload.optimizer)},
          {"params", offload_target_name(c.offload.params)},
          {"gradients", offload_target_name(c.offload.gradients)},
          {"activations", offload_target_name(c.offload.activations)},
          {"host_bytes_per_node", c.host_bytes_per_node},
          {"nvme_bytes_per_node", c.nvme_bytes_per_node}};
}

// The `parallel` of an estimate request that replays a candidate (with workload.micro_batch its
// max_micro_batch, or 1 when none fits).
ordered_json estimate_parallel_json(const plan_candidate& c) {
  ordered_json out = {{"method", c.method}};
  const bool llmem =
      c.method == "cdp" || c.method == "adp" || c.method == "tp" || c.method == "dp_tp";
  if (llmem) {
    if (c.parallel.method == parallel_method::dp_tp) out["tp"] = c.parallel.tp;
    return out;
  }
  if (c.parallel.method == parallel_method::dp_tp) out["tp"] = c.parallel.tp;
  if (c.sequence_parallel) out["sequence_parallel"] = true;
  if (c.parallel.cp > 1) {
    out["cp"] = c.parallel.cp;
    out["cp_kind"] = "ring";
  }
  if (c.pp > 1) {
    out["pp"] = c.pp;
    out["micro_batches"] = c.pp_micro_batches;
  }
  if (c.offload.any()) {
    ordered_json offload = ordered_json::object();
    const std::pair<const char*, offload_target> parts[] = {{"optimizer", c.offload.optimizer},
                                                            {"params", c.offload.params},
                                                            {"gradients", c.offload.gradients},
                                                            {"activations", c.offload.activations}};
    for (const auto& [name, target] : parts) {
      if (target != offload_target::none) offload[name] = offload_target_name(target);
    }
    out["offload"] = std::move(offload);
  }
  return out;
}

}  // namespace

ordered_json plan_json(const plan_result& plan) {
  ordered_json candidates = ordered_json::array();
  for (const auto& c : plan.candidates) {
    ordered_json entry = {{"method", c.method},
                          {"label", candidate_label(c)},
                          {"tp", c.parallel.tp},
                          {"cp", c.parallel.cp},
                          {"sequence_parallel", c.sequence_parallel},
                          {"valid", c.valid},
                          {"fits", c.fits},
                          {"verdict", verdict_name(c.at_max.verdict)},
                          {"max_micro_batch", c.max_micro_batch},
                          {"peak_bytes", c.at_max.peak_bytes},
                          {"tokens_per_s", c.speed.tokens_per_s},
                          {"tokens_per_s_per_gpu", c.speed.tokens_per_s_per_gpu},
                          {"step_s", c.speed.step_s}};
    if (!c.valid) entry["note"] = c.note;
    if (c.offload.any()) entry["offload"] = offload_json(c);
    entry["parallel"] = estimate_parallel_json(c);
    // Chosen by the plan: what an estimate of this candidate sets in its workload.
    if (c.grad_ckpt_chosen) entry["workload"]["grad_ckpt"] = c.grad_ckpt;
    if (c.grad_accumulation > 1) {
      entry["grad_accumulation"] = c.grad_accumulation;
      entry["workload"]["grad_accumulation"] = c.grad_accumulation;
    }
    entry["per_gpu"] = ordered_json::array({rank_json(c.at_max)});
    entry["step_time"] = step_time_json(c.speed);
    candidates.push_back(std::move(entry));
  }
  ordered_json choice = nullptr;
  if (plan.choice >= 0) {
    const auto& c = plan.candidates[static_cast<std::size_t>(plan.choice)];
    choice = {{"method", c.method},
              {"label", candidate_label(c)},
              {"candidate", plan.choice},
              {"tp", c.parallel.tp},
              {"cp", c.parallel.cp},
              {"sequence_parallel", c.sequence_parallel},
              {"max_micro_batch", c.max_micro_batch},
              {"peak_bytes", c.at_max.peak_bytes},
              {"verdict", verdict_name(c.at_max.verdict)},
              {"tokens_per_s", c.speed.tokens_per_s},
              {"reason", plan.reason}};
    if (c.offload.any()) choice["offload"] = offload_json(c);
    if (c.grad_ckpt_chosen) choice["grad_ckpt"] = c.grad_ckpt;
    if (c.grad_accumulation > 1) choice["grad_accumulation"] = c.grad_accumulation;
  }
  ordered_json offload = nullptr;
  if (plan.offload.needed) {
    offload = {{"method", plan.offload.method},
               {"moves", plan.offload.moves},
               {"sufficient", plan.offload.sufficient},
               {"gpu_peak_bytes", plan.offload.gpu_peak_bytes},
               {"host_bytes_per_gpu", plan.offload.host_bytes_per_gpu},
               {"host_bytes_per_node", plan.offload.host_bytes_per_node}};
  }
  return {{"choice", std::move(choice)},
          {"reason", plan.reason},
          {"unmatched_targets", plan.unmatched_targets},
          {"not_offered", plan.not_offered},
          {"offload", std::move(offload)},
          {"candidates", std::move(candidates)}};
}

}  // namespace gpumem
