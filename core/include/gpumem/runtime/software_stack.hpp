#pragma once
// The library releases a training run uses, where a release changed what a step keeps. Each
// behaviour below names the release that changed it; a library left unstated takes the
// behaviour the estimator's profiles describe by default (docs/methodology.md, "Library
// releases").

#include <optional>
#include <string>

namespace gpumem {

// A release's major and minor number ("2.4.1+cu121" is 2.4).
// (Not named major and minor: glibc's <sys/sysmacros.h> defines macros of those names.)
struct library_release {
  unsigned major_number = 0;
  unsigned minor_number = 0;
  // The third number, for libraries whose behaviour changes within a minor release (AutoAWQ
  // 0.2.x); a post-release suffix is not read (AutoAWQ 0.2.7.post3 reads as 0.2.7).
  unsigned patch_number = 0;
  bool before(unsigned major, unsigned minor) const {
    return major_number < major || (major_number == major && minor_number < minor);
  }
  bool before(unsigned major, unsigned minor, unsigned patch) const {
    return before(major, minor) ||
           (major_number == major && minor_number == minor && patch_number < patch);
  }
};

// A PEP 440 version ("1.13.1", "0.45.0.dev0", "2.4.0a0+git1234", "2.4.1+cu121"): numbers
// separated by dots, then optionally a pre-, post- or dev-release or a +local part. Empty when
// the text is not one.
std::optional<library_release> parse_library_release(const std::string& text);
// "major.minor", as notes name a release.
std::string release_name(const library_release& release);
// "major.minor.patch", for the libraries read to their patch number (AutoAWQ).
std::string release_name_with_patch(const library_release& release);

// transformers before 4.54 copies grouped-query K/V to every query head before SDPA
// (repeat_kv); 4.54 passes enable_gqa instead where torch is 2.5 or later and no mask is needed
// (pull request 39412; integrations/sdpa_attention.py use_gqa_in_sdpa).
inline bool transformers_repeats_kv_for_sdpa(const library_release& transformers) {
  return transformers.before(4, 54);
}

// The families whose transformers code is Llama's (modeling_llama.py and its copies: Mistral,
// Mixtral, Qwen2, Qwen2-MoE, Gemma, Phi-3), where a release changed the LM head's logits.
bool transformers_llama_code(const std::string& model_type);

// transformers 4.31 (pull request 24891, Llama 2) to 4.45: the forward of Llama's code ends with
// `logits = logits.float()`, so the model returns fp32 logits; 4.46 moved the upcast into the
// loss (pull request 33902).
inline bool transformers_forward_upcasts_logits(const std::string& model_type,
                                                const library_release& transformers) {
  return transformers_llama_code(model_type) && !transformers.before(4, 31) &&
         transformers.before(4, 46);
}

struct software_stack {
  std::optional<library_release> torch;
  std::optional<library_release> bitsandbytes;
  std::optional<library_release> peft;
  std::optional<library_release> transformers;

  // torch < 2.0: Optimizer.zero_grad and Module.zero_grad default to set_to_none=False, so the
  // gradients stay allocated, zeroed, from one step to the next (PyTorch 2.0 release notes;
  // torch/optim/optimizer.py zero_grad).
  bool zero_grad_keeps_gradients() const { return torch && torch->before(2, 0); }
  // torch < 2.0: AdamW's default implementation is the per-parameter loop; 2.0 made foreach the
  // default on CUDA (torch/optim/optimizer.py _default_to_fused_or_foreach).
  bool adamw_loops_by_default() const { return torch && torch->before(2, 0); }
  // torch < 2.0 has no F.scaled_dot_product_attention: transformers runs eager attention.
  bool has_sdpa() const { return !torch || !torch->before(2, 0); }
  // bitsandbytes < 0.45: MatMul4Bit keeps its input in ctx.tensors = (A, B), outside the saved
  // tensors autograd frees, whenever the input needs a gradient; 0.45 keeps (None, B)
  // (bitsandbytes/autograd/_functions.py). Unstated: the earlier releases, which the QLoRA
  // guides and measurements of 2023-24 ran.
  bool bnb_4bit_keeps_input() const { return !bitsandbytes || bitsandbytes->before(0, 45); }
  // peft < 0.12: LoRA's adapters take the base layer's dtype; 0.12 upcasts 16-bit adapters to
  // fp32 (get_peft_model autocast_adapter_dtype=True, huggingface/peft pull request 1706).
  bool peft_adapters_in_base_dtype() const { return peft && peft->before(0, 12); }
  // Grouped-query K/V copied to every head before SDPA, whose backward keeps the copies
  // (transformers_repeats_kv_for_sdpa; torch before 2.5 has no enable_gqa). Unstated: today's
  // release on today's torch.
  bool sdpa_repeats_kv() const {
    return (transformers && transformers_repeats_kv_for_sdpa(*transformers)) ||
           (torch && torch->before(2, 5));
  }
  // transformers < 4.46: each causal LM's forward takes its own loss, a cross-entropy of its
  // logits copied shifted by one position (`logits[..., :-1, :].contiguous()`), in the logits'
  // dtype; 4.46 moved it into ForCausalLMLoss, which upcasts to fp32 first (pull request 33902).
  bool loss_in_model_forward() const { return transformers && transformers->before(4, 46); }
  // transformers < 4.49: ForCausalLMLoss still copies the fp32 logits shifted; 4.49 pads the
  // labels instead (pull request 35646, merged 2025-01-13 after 4.48.0).
  bool loss_copies_shifted_logits() const { return transformers && transformers->before(4, 49); }
  // The NCCL release (2.minor) torch's CUDA 12 wheels pin (nvidia-nccl-cu12: torch 2.1 2.18.1,
  // 2.2 2.19.3, 2.3 and 2.4 2.20.5, 2.5 2.21.5; torch 2.0's CUDA 11 wheels 2.14.3). Unstated or
  // later: 2.21, the latest release whose buffers nccl_buffers.cpp reads.
  unsigned nccl_minor() const {
    if (!torch || !torch->before(2, 5)) return 21;
    if (torch->before(2, 1)) return 14;
    if (torch->before(2, 2)) return 18;
    if (torch->before(2, 3)) return 19;
    return 20;
  }
};

}  // namespace gpumem
