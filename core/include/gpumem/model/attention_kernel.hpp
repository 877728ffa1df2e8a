#pragma once
// The attention kernel a run gets and what PyTorch's SDPA does with a model's shapes: which
// kernel a framework runs for a model whatever is asked, and when SDPA falls back to kernels
// that materialise the scores.

#include <cstdint>
#include <string>

#include "gpumem/model/model_spec.hpp"

namespace gpumem {

// flash: FlashAttention kernels (transformers' flash_attention_2, or a hub kernel such as
// gpt-oss's vllm-flash-attn3), which keep what SDPA's fused kernels keep and never fall back to a
// math kernel.
enum class attention_kernel { eager, sdpa, flash };

// Whether SDPA runs PyTorch's math kernel, which materialises the B x heads x s x s scores in
// fp32 (it upcasts 16-bit inputs: allow_fp16_bf16_reduction_math_sdp is off by default since
// PyTorch 2.5). The fused kernels refuse K/V with fewer heads than Q unless enable_gqa is passed
// (torch/backends/cuda sdp_utils check_batch_size_and_num_heads_dense), and the
// memory-efficient kernel, which fp32 needs, does not take enable_gqa at all. transformers'
// FalconAttention hands a multi-query model's single K/V head to SDPA unexpanded; Llama-like
// models pass enable_gqa or repeat K/V, litgpt and torchtune repeat K/V.
bool sdpa_math_kernel(const model_spec& spec, std::uint64_t compute_bytes, bool transformers);
// Whether transformers hands SDPA a mask for `layer` over `kv_length` keys: a windowed layer
// (sliding, or Llama 4's chunked) once the keys reach its window (masking_utils.
// _ignore_causal_mask_sdpa leaves the mask out only while kv_length is under the window). The
// flash kernel cannot take a mask: the memory-efficient one runs, with K/V repeated to every
// head (transformers' use_gqa_in_sdpa passes enable_gqa only without a mask).
bool sdpa_window_mask(const layer_spec& layer, std::uint64_t kv_length);
// The kernel a run gets: T5Attention computes its scores by hand whatever is asked for
// (modeling_t5.py), and transformers has no SDPA path for gpt-oss's attention sinks and falls
// back to eager attention (GptOssPreTrainedModel does not declare _supports_sdpa).
attention_kernel kernel_run(const model_spec& spec, attention_kernel asked, bool transformers);
// Why kernel_run gave another kernel than the one asked for, as an estimate's note.
std::string kernel_run_note(const model_spec& spec);
// "eager", "sdpa" or "flash", as requests and validation points name them (any other name: sdpa,
// PyTorch's default).
const char* attention_kernel_name(attention_kernel kernel);
attention_kernel attention_kernel_named(const std::string& name);

}  // namespace gpumem
