#pragma once
// One transformer block walked part by part for block_memory_of, in the order the block runs;
// each part pushes what it keeps for backward into `m`, so the order of the calls in build() is
// the order of the block's tensors:
//   block_activations.cpp  the block's linears (what their inputs, adapters and weight copies
//                          keep), the post-norms, the MLP and its experts, the residual dropout,
//                          the busiest moments, context parallelism, the per-op checkpoint cache
//   block_attention.cpp    the norm before attention and the projections it feeds, the head
//                          norms, latent attention, the attention kernel, LLaMA-Adapter's prompt
//                          attention, the output projection, cross-attention

#include <cstddef>
#include <cstdint>
#include <vector>

#include "gpumem/model/model_spec.hpp"
#include "gpumem/training/training_step.hpp"
#include "training/block_activations.hpp"
#include "training/framework.hpp"

namespace gpumem {

// Whether a quantised base linear holds the very tensor it reads in bitsandbytes' ctx.tensors.
bool holds_own_input(const step_context& ctx, std::uint64_t input_bytes);
// What a norm keeps over `rows` rows of `width` / `rows` per token; `input_saved` is set where
// the tensor it keeps is its input itself (which the caller counts once).
void norm_saves(block_memory& m, const step_context& ctx, std::uint64_t width,
                std::uint64_t input_bytes, bool& input_saved, std::uint64_t tokens,
                std::uint64_t rows);

class block_builder {
 public:
  block_builder(const step_context& context, int index) : ctx(context), layer_index(index) {}
  // What the block keeps for backward and briefly needs, on this rank.
  block_memory build();

 private:
  // block_activations.cpp
  void collect_linears();
  void feed_over(const step_context& at, linear_role role, std::uint64_t input_bytes, bool& shared);
  void feed(linear_role role, std::uint64_t input_bytes, bool& shared);
  void post_norm();
  void mlp_norm();
  void moe_experts();
  void mlp();
  void residual_dropout();
  void busiest_moments();
  void context_parallel_peaks();
  void per_op_cache();
  // block_attention.cpp
  void attention_norm();
  void qk_norms();
  void l2_qk_norms();
  void latent_projections();
  void attention_operands();
  void keep_quadratic(std::uint64_t bytes);
  void eager_core(std::uint64_t elems);
  void attention_scores();
  void prompt_attention();
  void output_projection();
  void cross_attention();

  const step_context& ctx;
  const int layer_index;
  const model_spec& spec = ctx.spec;
  const layer_spec& layer = spec.layers[static_cast<std::size_t>(layer_index)];
  const std::uint64_t t = ctx.tokens;
  const std::uint64_t th = ctx.h_tokens;  // tokens of hidden-width tensors
  const std::uint64_t c = ctx.c;
  const std::uint64_t h = spec.hidden_size;
  // Under tensor parallelism each rank runs heads / t of the attention and i / t of the MLP.
  const std::uint64_t heads = spec.num_heads / ctx.tp;
  const std::uint64_t q = heads * spec.head_dim;
  const std::uint64_t kv = spec.num_kv_heads / ctx.tp * spec.head_dim;
  // litgpt computes soft-capped attention by hand (litgpt/model.py CausalSelfAttention
  // scaled_dot_product_attention: q @ k.mT, tanh cap, fp32 softmax cast back, @ v), whatever
  // kernel is asked for.
  // (T5's runs eager whatever is asked for: kernel_run.)
  const bool softcap = spec.attention_softcap > 0;
  const bool transformers = framework_of(ctx.config).transformers_modelling;
  const attention_kernel kernel = kernel_run(spec, ctx.config.attention, transformers);
  const bool eager =
      kernel == attention_kernel::eager || (softcap && framework_of(ctx.config).softcap_by_hand);

  block_memory m;
  // The block's linear weights, in order, with their trainability and adapters.
  std::vector<const tensor_spec*> linears;
  std::vector<bool> adapted;
  std::vector<bool> ia3_scaled;

  // What one part leaves to the later ones.
  bool input_saved = false;    // the first norm keeps the block's input (attention_norm)
  std::uint64_t y1_bytes = 0;  // the element size of the first norm's output
  // The attention's shape (attention_operands).
  bool ulysses = false;
  std::uint64_t scores = 0;
  bool math_sdpa = false;
  bool masked_sdpa = false;
  bool expanded_kv = false;
  std::uint64_t values = 0;
  std::uint64_t quadratic = 0;     // the score-sized tensors selective recomputation makes again
  std::uint64_t mlp_in_bytes = 0;  // the element size of what the MLP's input projections read
  std::uint64_t i = 0;             // the MLP's width on this rank (moe_experts)
  std::uint64_t mlp_bytes = 0;     // the element size the MLP runs in (mlp)
};

}  // namespace gpumem
