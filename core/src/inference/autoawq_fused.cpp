#include "inference/autoawq_fused.hpp"

#include <algorithm>

namespace gpumem {

using cat = memory_category;

autoawq_fused autoawq_fused_of(const model_spec& spec, const inference_config& config,
                               std::uint64_t final_context) {
  autoawq_fused out;
  out.release = config.autoawq.value_or(autoawq_last_release);
  const library_release& r = out.release;
  const std::uint64_t release_default =
      r.before(0, 2) && spec.max_positions > 0 ? spec.max_positions : 2048;
  const std::uint64_t stated = config.kv_cache_tokens;
  out.max_seq_len = std::max(stated ? stated : release_default, stated ? 0 : final_context);
  out.prefill = r.before(0, 2, 7)   ? autoawq_fused::prefill_kind::eager
                : r.before(0, 2, 8) ? autoawq_fused::prefill_kind::sdpa
                                    : autoawq_fused::prefill_kind::flash;
  out.rope_doubled = r.before(0, 2, 7);
  out.cache_from_fp32 = r.before(0, 2, 8);
  out.mask = !r.before(0, 1, 6) && r.before(0, 2, 8);
  out.note = "AutoAWQ " + release_name_with_patch(r) +
             (config.autoawq ? "" : " (not stated: its last)") +
             "'s fused modules: a KV cache of max_seq_len " + std::to_string(out.max_seq_len) +
             " tokens per sequence allocated at load" +
             (stated || out.max_seq_len == release_default
                  ? ""
                  : " (its default " + std::to_string(release_default) +
                        " raised to the run's length, which it must have been to run)") +
             (out.prefill == autoawq_fused::prefill_kind::eager
                  ? "; the prefill's attention materialises fp16 and fp32 scores over K/V repeated "
                    "to every head"
              : out.prefill == autoawq_fused::prefill_kind::sdpa
                  ? "; the prefill runs SDPA over K/V repeated to every head"
                  : "; flash-attention kernels");
  return out;
}

std::uint64_t autoawq_rope_bytes(const model_spec& spec, const autoawq_fused& fused) {
  // RoPE.__init__: precompute_freqs_cis(head_dim, max_seq_len * 2) before 0.2.7, max_seq_len
  // positions from 0.2.7 (over rotary_dim, head_dim for the Llama-like models it fuses).
  const std::uint64_t positions = fused.max_seq_len * (fused.rope_doubled ? 2 : 1);
  return positions * spec.head_dim / 2 * 8;
}

void autoawq_rotary(memory_timeline& tl, int& q, int& k, std::uint64_t q_bytes,
                    std::uint64_t k_bytes, std::uint64_t a) {
  // xq.float().reshape(...).transpose(...).contiguous(), view_as_complex, times freqs_cis,
  // view_as_real(...).flatten(3) (a copy of the transposed product); both kept until the
  // return's type_as(xq).
  int flat[2] = {-1, -1};
  const std::uint64_t widths[2] = {q_bytes / a, k_bytes / a};
  for (int i = 0; i < 2; ++i) {
    const int wide = tl.allocate(widths[i] * 4, cat::activations);
    const int product = tl.allocate(widths[i] * 4, cat::activations);
    tl.free(wide);
    flat[i] = tl.allocate(widths[i] * 4, cat::activations);
    tl.free(product);
  }
  const int q_out = tl.allocate(q_bytes, cat::activations);
  const int k_out = tl.allocate(k_bytes, cat::activations);
  tl.free(flat[0]);
  tl.free(flat[1]);
  q = q_out;
  k = k_out;
}

int autoawq_prefill_attention(memory_timeline& tl, const autoawq_fused& fused, std::uint64_t batch,
                              std::uint64_t tokens, std::uint64_t heads, std::uint64_t q_width,
                              std::uint64_t a) {
  const std::uint64_t rows = batch * tokens;
  if (fused.prefill == autoawq_fused::prefill_kind::flash)
    return tl.allocate(rows * q_width * a, cat::activations);
  // repeat_interleave(keys / values, n_kv_groups): copies at every head's width, also when the
  // groups are 1.
  const int keys = tl.allocate(rows * q_width * a, cat::activations);
  const int values = tl.allocate(rows * q_width * a, cat::activations);
  int out = -1;
  if (fused.prefill == autoawq_fused::prefill_kind::sdpa) {
    out = tl.allocate(rows * q_width * a, cat::activations);
  } else {
    // scores = matmul(xq, keys^T) / sqrt(d), + mask (a new tensor, the first dropped), then
    // softmax(scores.float()).type_as(xq): fp16, fp32 and fp32 alive at once.
    const std::uint64_t scores = batch * heads * tokens * tokens;
    const int s16 = tl.allocate(scores * a, cat::activations);
    const int s32 = tl.allocate(scores * 4, cat::activations);
    const int p32 = tl.allocate(scores * 4, cat::activations);
    tl.free(s32);
    const int p16 = tl.allocate(scores * a, cat::activations);
    tl.free(p32);
    tl.free(s16);
    // matmul(scores, values), then transpose(1, 2).contiguous(): the output twice for a moment.
    const int heads_first = tl.allocate(rows * q_width * a, cat::activations);
    tl.free(p16);
    out = tl.allocate(rows * q_width * a, cat::activations);
    tl.free(heads_first);
  }
  tl.free(keys);
  tl.free(values);
  return out;
}

}  // namespace gpumem
