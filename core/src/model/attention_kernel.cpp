#include "gpumem/model/attention_kernel.hpp"

namespace gpumem {

attention_kernel kernel_run(const model_spec& spec, attention_kernel asked, bool transformers) {
  if (spec.encoder_decoder) return attention_kernel::eager;
  if (spec.attention_sinks && transformers && asked == attention_kernel::sdpa)
    return attention_kernel::eager;
  return asked;
}

std::string kernel_run_note(const model_spec& spec) {
  if (spec.encoder_decoder) {
    return "T5's attention computes its scores by hand (modeling_t5.py), whatever kernel is "
           "asked for: eager attention";
  }
  return "transformers has no SDPA path for gpt-oss's attention sinks and falls back to eager "
         "attention; workload.attention flash reads the hub's flash-attention 3 kernel "
         "(kernels-community/vllm-flash-attn3), which keeps no scores";
}

const char* attention_kernel_name(attention_kernel kernel) {
  return kernel == attention_kernel::eager   ? "eager"
         : kernel == attention_kernel::flash ? "flash"
                                             : "sdpa";
}

attention_kernel attention_kernel_named(const std::string& name) {
  return name == "eager"   ? attention_kernel::eager
         : name == "flash" ? attention_kernel::flash
                           : attention_kernel::sdpa;
}

bool sdpa_window_mask(const layer_spec& layer, std::uint64_t kv_length) {
  return layer.sliding_window_tokens > 0 && kv_length >= layer.sliding_window_tokens;
}

bool sdpa_math_kernel(const model_spec& spec, std::uint64_t compute_bytes, bool transformers) {
  if (spec.num_kv_heads >= spec.num_heads) return false;
  if (compute_bytes == 4) return true;
  return transformers && spec.model_type == "falcon" && spec.num_kv_heads == 1;
}

}  // namespace gpumem
