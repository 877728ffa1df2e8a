// transformers' generate() release by release, for decoder-only models (Llama's code and the
// families written after it):
// - 4.45 (pull request 31292, num_logits_to_keep): generate asks the model for the last
//   position's logits in the prefill; before, the LM head ran over every prompt position. GPT-2
//   and the other older architectures had no such argument through 4.47.
// - 4.31 (pull request 24891, Llama 2) to 4.45: LlamaForCausalLM.forward ends with
//   `logits = logits.float()`, as Mistral, Mixtral, Qwen2, Gemma and Phi-3 copied it; 4.46
//   removed it (pull request 33902: the upcast moved into the loss).
// - 4.45 and 4.46: `outputs.logits.clone()[:, -1, :]` copies the whole logits before slicing
//   (issue 34796; pull request 34813 fixed it in 4.47).
// - before 4.42 (pull request 30536, "Fix all outputs.logits memory leaks"): the loop rebinds
//   `outputs` only when the next forward returns, so the prefill's logits live through the first
//   decode step, and the previous step's KV tuple (kept in model_kwargs) lives beside the grown
//   one through every forward: "2*past_KV + first_iteration_logits".
// - before 4.36 (pull request 26572): eager attention by default; 4.36 made SDPA the default.
// - before 4.54 (pull request 39412, merged 2025-07-15): a grouped-query layer's K/V go through
//   repeat_kv (a copy per query head) before SDPA, in LlamaSdpaAttention and its copies and from
//   4.48 in integrations/sdpa_attention.py; 4.54 passes enable_gqa instead when torch >= 2.5 and
//   no mask is needed, as for generate's equal-length prompts, whose all-ones mask is dropped
//   (masking_utils sdpa_mask, allow_is_causal_skip). Eager attention repeats them in every
//   release.
// - 4.56 (pull request 39797, "all caches are initialized lazily"; dependents pinned below 4.56
//   for its cache API, e.g. fla-org/flash-linear-attention pull request 582): a StaticCache
//   layer allocates its full-length keys and values (StaticLayer.lazy_initialization) at its
//   first update, inside the prefill's attention of that layer; before, StaticCache.__init__
//   allocated every layer up front. generate() initialises early only for a chunked prefill
//   (issue 46421).
#include "inference/generate_release.hpp"

namespace gpumem {

bool transformers_eager_by_default(const library_release& release) { return release.before(4, 36); }

generate_release generate_release_of(const model_spec& spec, const inference_config& config) {
  generate_release out;
  out.static_cache_lazy = config.framework == serving_framework::transformers &&
                          (!config.transformers || !config.transformers->before(4, 56));
  // AutoAWQ's fused model runs under transformers' generate() and LM head, with its own cache
  // and attention.
  const bool autoawq = config.framework == serving_framework::autoawq;
  if ((config.framework != serving_framework::transformers && !autoawq) || !config.transformers)
    return out;
  const library_release& r = *config.transformers;
  // (Llama's code also took num_logits_to_keep in 4.45.)
  const bool llama = transformers_llama_code(spec.model_type);
  out.all_prompt_logits = r.before(4, 45) || (!llama && r.before(4, 48));
  out.logits_upcast = transformers_forward_upcasts_logits(spec.model_type, r);
  out.whole_logits_clone = out.all_prompt_logits && !r.before(4, 45) && r.before(4, 47);
  out.outputs_kept = r.before(4, 42);
  out.old_cache_kept = r.before(4, 42) && !autoawq;
  out.sdpa_repeats_kv = config.attention == attention_kernel::sdpa && spec.transformers_repeat_kv &&
                        transformers_repeats_kv_for_sdpa(r) && !autoawq;
  const std::string release = "transformers " + release_name(r) + ": ";
  if (out.all_prompt_logits) {
    out.note = release + "the prefill's LM head runs over every prompt position" +
               (out.logits_upcast ? ", its logits upcast to fp32" : "") +
               (out.whole_logits_clone ? ", cloned whole before the last is sliced" : "") +
               (out.outputs_kept ? ", kept through the first decode step" : "") +
               (llama ? " (generate keeps only the last from 4.45)" : "");
  }
  if (out.old_cache_kept) {
    out.note += (out.note.empty() ? release : "; ") +
                std::string(
                    "each decode step keeps the previous KV cache beside the grown one "
                    "until its forward returns (until 4.42)");
  }
  if (out.sdpa_repeats_kv) {
    out.note += (out.note.empty() ? release : "; ") +
                std::string(
                    "the grouped-query K/V are copied to every query head before each attention "
                    "(until 4.54, which passes SDPA enable_gqa)");
  }
  return out;
}

}  // namespace gpumem
