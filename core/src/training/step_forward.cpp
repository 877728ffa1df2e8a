// The forward phase: the micro-batches a pipeline stage runs before its first backward, each
// block gathered (ZeRO-3, FSDP), run and left with what it keeps for its backward
// (block_activations.cpp), or only its input under checkpointing.
#include <algorithm>

#include "training/step_replay.hpp"

namespace gpumem {

void step_replay::start_pass(int pass) {
  step = pass / micro_steps + 1;
  first_micro = pass % micro_steps == 0;
  last_micro = pass % micro_steps == micro_steps - 1;
  saved.assign(blocks.size(), {});
  cached.assign(blocks.size(), {});  // block_memory::op_cache
  offloaded.assign(blocks.size(), false);
  copies.clear();
  gathered.assign(blocks.size(), -1);
  waiting.clear();
  encoder_bias.clear();
  decoder_bias.clear();
  encoder_end.clear();
  head.clear();
  root = residual = memory = log_softmax = kept_logits = -1;
  chunk_elements = tv;
}

void step_replay::forward() {
  tl.phase("forward");
  // ZeRO-3 / FSDP: the root (embeddings, final norm, LM head) stays gathered for the step;
  // each block is gathered before it runs, the next one prefetched, and (FULL_SHARD) freed
  // after it ran.
  root = params_sharded && !deepspeed3 ? tl.allocate(root_params, cat::gathered_params) : -1;
  if (deepspeed3 && stage.first < stage.last) {
    tl.free(tl.allocate(input_root + std::min(prefetch_limit, block_params[stage.first]),
                        cat::gathered_params));
  } else if (params_sharded && stage.first < stage.last) {
    gathered[stage.first] = tl.allocate(block_params[stage.first], cat::gathered_params);
  }
  while (inputs_to_host && host_copy_buffers.size() < 2)
    host_copy_buffers.push_back(tl.allocate(ctx.r * th * h, cat::activations));
  // Pipeline stages run the forward of the micro-batches ahead of the one stepped back first;
  // their saved tensors wait for their own backward (`waiting`).
  for (std::uint64_t mb = 0; mb < in_flight; ++mb) forward_micro_batch(mb + 1 == in_flight);
}

std::uint64_t step_replay::next_block(std::size_t l) const {
  return l + 1 < stage.last ? block_params[l + 1] : output_root;
}

// A position bias (or its gradient) over q_len queries and k_len keys, [B, heads, q, k].
std::uint64_t step_replay::bias_bytes(std::uint64_t q_len, std::uint64_t k_len) const {
  return ctx.r * config.micro_batch * spec.num_heads * q_len * k_len;
}

// Encoder-decoders (modeling_t5.py T5Stack): each stack's first block makes the position bias
// every block of the stack adds to its scores, [B, heads, q, k] once the padding mask is added,
// and cross-attention's (zeros plus the encoder's mask) in the embeddings' dtype; checkpointed
// blocks take them as inputs, kept to their backward. The encoder's final norm (its fp32 input
// kept, as the decoder's) and dropout (its mask) make the memory that every cross-attention
// reads, alive until the model returns, or to the decoder's backward when a block keeps it
// (checkpointing passes it to every block).
void step_replay::end_encoder() {
  encoder_end.push_back(tl.allocate(4 * ctx.tokens * h, cat::activations));
  if (spec.hidden_dropout > 0) encoder_end.push_back(tl.allocate(ctx.tokens * h, cat::activations));
  memory = tl.allocate(memory_bytes, cat::activations);
  tl.free(residual);
  if (!checkpointed) {
    for (int id : encoder_bias) tl.free(id);
    encoder_bias.clear();
  }
  decoder_bias.push_back(tl.allocate(bias_bytes(decoder_seq, decoder_seq), cat::activations));
  decoder_bias.push_back(tl.allocate(bias_bytes(decoder_seq, ctx.seq), cat::activations));
}

void step_replay::forward_micro_batch(bool stepped_back) {
  // The embedding output, or the activation received from the previous stage.
  residual = tl.allocate(blocks[stage.first].residual, cat::activations);
  // The embeddings' dropout mask (model_spec::embedding_dropout_features), kept for the
  // embeddings' backward, the step's last.
  const std::uint64_t embedding_mask = spec.embedding_dropout_features;
  if (stage.first == 0 && embedding_mask > 0) {
    (stepped_back ? saved[0] : waiting)
        .push_back(tl.allocate(ctx.h_tokens * embedding_mask, cat::activations));
  }
  if (embedding_lora) {
    // PEFT lora.Embedding: result + (F.embedding(x, A.T) @ B) * scaling; the matmul keeps
    // the looked-up [tokens, r] rows for B's gradient (16-bit under autocast); the product
    // and its scaled copy [tokens, dim] live until the sum is made.
    (stepped_back ? saved[0] : waiting)
        .push_back(tl.allocate(ctx.tokens * config.lora_rank * ctx.c, cat::activations));
    tl.free(tl.allocate(2 * ctx.tokens * spec.embedding_dim * ctx.c, cat::activations));
  }
  // The boolean mask transformers builds for windowed layers once a forward, [B, 1, s, s]
  // (masking_utils.sdpa_mask): alive through the forward, or, checkpointed, as every block's
  // input until the first block's backward.
  int bool_mask = -1;
  if (stage_masked) {
    const std::uint64_t bytes = config.micro_batch * ctx.seq * ctx.seq;
    if (checkpointed)
      (stepped_back ? saved[stage.first] : waiting).push_back(tl.allocate(bytes, cat::activations));
    else
      bool_mask = tl.allocate(bytes, cat::activations);
  }
  if (spec.encoder_decoder)
    encoder_bias.push_back(tl.allocate(bias_bytes(ctx.seq, ctx.seq), cat::activations));
  for (std::size_t l = stage.first; l < stage.last; ++l) forward_block(l, stepped_back);
  tl.free(bool_mask);
  if (!checkpointed) {
    for (int id : decoder_bias) tl.free(id);
    decoder_bias.clear();
  }
  if (!last_stage) {
    tl.free(residual);  // sent to the next stage
    residual = -1;
  }
  if (checkpointed && !stepped_back) {
    // Each micro-batch's forward exits its own autocast region, which clears the cache.
    for (int id : copies) tl.free(id);
    copies.clear();
  }
}

void step_replay::forward_block(std::size_t l, bool stepped_back) {
  const auto& b = blocks[l];
  std::vector<int>& keep = stepped_back ? saved[l] : waiting;
  keep.reserve(keep.size() + b.weight_copies.size() + b.saved.size() + b.op_cache.size() + 2);
  if (l == first_decoder) {
    end_encoder();
    residual = tl.allocate(b.residual, cat::activations);  // the decoder's embedding
    if (spec.embedding_dropout_features > 0)
      keep.push_back(tl.allocate(th * spec.embedding_dropout_features, cat::activations));
  }
  if (deepspeed3) {
    gathered[l] = tl.allocate(deepspeed_working_set(l, false, next_block(l)), cat::gathered_params);
  } else if (params_sharded && l + 1 < stage.last) {
    gathered[l + 1] = tl.allocate(block_params[l + 1], cat::gathered_params);
  }
  if (checkpointed) {
    // Non-reentrant checkpointing keeps only the block input; autocast still caches the
    // weight copies until it exits.
    if (b.graph && !(inputs_to_host && l + 1 < stage.last))
      keep.push_back(tl.allocate(b.residual, cat::activations));
    for (auto bytes : b.weight_copies)
      copies.push_back(tl.allocate(bytes, cat::autocast_weight_copies));
    std::vector<int> live;
    live.reserve(b.saved.size());
    for (auto bytes : b.saved) live.push_back(tl.allocate(bytes, cat::activations));
    for (auto bytes : b.op_cache)
      (stepped_back ? cached[l] : keep).push_back(tl.allocate(bytes, cat::activations));
    for (int id : live) tl.free(id);
  } else {
    for (auto bytes : b.weight_copies)
      keep.push_back(tl.allocate(bytes, cat::autocast_weight_copies));
    for (auto bytes : b.saved) keep.push_back(tl.allocate(bytes, cat::activations));
  }
  const int busy = tl.allocate(b.transient, cat::activations);
  tl.free(busy);
  // Offloaded activations leave two blocks behind the forward (the copy overlaps the
  // next block's compute).
  if (acts_to_host && stepped_back && l >= stage.first + 2) {
    for (int id : saved[l - 2]) tl.free(id);
    saved[l - 2].clear();
    offloaded[l - 2] = true;
  }
  const int next = tl.allocate(b.residual, cat::activations);
  tl.free(residual);
  residual = next;
  // torchtitan leaves its last block gathered after the forward, whose backward comes next
  // (parallelize.py apply_fsdp: reshard_after_forward for all blocks but the last).
  const bool kept_gathered = fw.keeps_last_block_gathered && l + 1 == spec.layers.size();
  if (!method.keeps_gathered_to_backward && !kept_gathered) {
    tl.free(gathered[l]);
    gathered[l] = -1;
  }
}

}  // namespace gpumem
