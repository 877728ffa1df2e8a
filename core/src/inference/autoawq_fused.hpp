#pragma once
// AutoAWQ's fused modules (AutoAWQForCausalLM.from_quantized with fuse_layers=True, its
// default): what they hold and what their attention computes, by AutoAWQ release (the tags of
// casper-hansen/AutoAWQ, v0.1.0 to v0.2.9: awq/models/auto.py, awq/modules/fused/attn.py,
// cache.py, model.py). The LM head and generate() stay transformers' (generate_release).

#include <cstdint>
#include <string>

#include "gpumem/inference/inference_step.hpp"
#include "gpumem/model/model_spec.hpp"
#include "gpumem/runtime/memory_timeline.hpp"
#include "gpumem/runtime/software_stack.hpp"

namespace gpumem {

struct autoawq_fused {
  library_release release;
  // The cache's length, max_seq_len: stated (workload.kv_cache.tokens) or the release's default
  // (from_quantized: before 0.2.0 max_new_tokens=None, which _load_config reads as the config's
  // max_position_embeddings; from 0.2.0 max_seq_len=2048), raised to the run's length where that
  // is longer, since a prompt beyond it fails.
  std::uint64_t max_seq_len = 2048;
  // The prefill's attention: before 0.2.7 the K/V repeated to every head (repeat_interleave) and
  // the scores in fp16, their fp32 copy and fp32 softmax alive together (scores.float(), then
  // F.softmax(...).type_as(xq)); 0.2.7 SDPA over the repeated K/V with an explicit mask; from
  // 0.2.7.post3 (read from 0.2.8) flash_attn_func, nothing quadratic and no repetition.
  enum class prefill_kind { eager, sdpa, flash } prefill = prefill_kind::flash;
  bool rope_doubled = false;     // freqs_cis over 2 x max_seq_len positions (before 0.2.7)
  bool cache_from_fp32 = false;  // WindowedCache: torch.zeros(shape).to(dev).half() (before 0.2.8)
  bool mask = false;  // prepare_attention_mask's (1, 1, S, S) mask: fp32, then fp16 (0.1.6-0.2.7)
  std::string note;   // the release and the length, for the estimate's notes
};

// AutoAWQ's last release (the repository was archived after it).
inline constexpr library_release autoawq_last_release{0, 2, 9};

// AutoAWQ's release (stated, else autoawq_last_release) and what it does for this run.
autoawq_fused autoawq_fused_of(const model_spec& spec, const inference_config& config,
                               std::uint64_t final_context);

// The RoPE table one fused attention holds: freqs_cis in complex64 (8 bytes an entry) over
// head_dim / 2 frequencies.
std::uint64_t autoawq_rope_bytes(const model_spec& spec, const autoawq_fused& fused);

// RoPE applied to q and k (q_bytes and k_bytes, `a` bytes an element): fp32 copies made
// contiguous, their complex products, the flattened results, cast back (RoPE.forward). Sets q and
// k to the rotated tensors; the inputs (views of the fused projection) stay the caller's.
void autoawq_rotary(memory_timeline& tl, int& q, int& k, std::uint64_t q_bytes,
                    std::uint64_t k_bytes, std::uint64_t a);

// The prefill's attention of one layer for `batch` sequences of `tokens` tokens over `heads`
// query heads of `q_width` features in all: the kernel's transients and the output.
int autoawq_prefill_attention(memory_timeline& tl, const autoawq_fused& fused, std::uint64_t batch,
                              std::uint64_t tokens, std::uint64_t heads, std::uint64_t q_width,
                              std::uint64_t a);

}  // namespace gpumem
