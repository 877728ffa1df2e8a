// The backward phase: the loss's gradient through the head, then block by block from the last,
// each gathered again where sharded, recomputed under checkpointing, and its parameters'
// gradients made, reduced and kept (or sent away) as the data-parallel method does.
#include <algorithm>

#include "training/step_replay.hpp"

namespace gpumem {

void step_replay::backward() {
  tl.phase("backward");
  if (!backward_workspace) {
    tl.allocate(cublas_workspace_bytes(gpu.architecture), cat::cuda_workspace);  // autograd thread
    backward_workspace = true;
  }
  if (method.reduce_bucket_in_backward && config.reduce_bucket_elements > 0 && step == 1 &&
      first_micro) {
    // The reduce bucket gradients are copied into before their reduce-scatter.
    tl.allocate(config.reduce_bucket_elements * (ctx.full ? full_bytes : ctx.adapter_bytes),
                cat::communication_buffers);
  }
  // A stage before the last receives the gradient of its output from the next stage.
  const int received = last_stage ? -1 : tl.allocate(ctx.r * th * h, cat::activations);
  loss_backward();
  // Encoder-decoders: the memory's gradient, summed over the cross-attentions, lives through the
  // decoder's backward; a trained position bias (full fine-tuning) gathers its [B, heads, q, k]
  // gradient from every block of its stack.
  int memory_grad = -1;
  int bias_grad = -1;
  if (spec.encoder_decoder) {
    memory_grad = tl.allocate(memory_bytes, cat::activations);
    if (ctx.full) bias_grad = tl.allocate(bias_bytes(decoder_seq, decoder_seq), cat::activations);
  }
  for (std::size_t l = stage.last; l-- > stage.first;) {
    block_backward(l);
    if (l == first_decoder) {  // the decoder stepped back: on into the encoder
      for (int id : decoder_bias) tl.free(id);
      for (int id : encoder_end) tl.free(id);
      decoder_bias.clear();
      encoder_end.clear();
      tl.free(memory_grad);
      tl.free(memory);
      tl.free(bias_grad);
      memory = -1;
      bias_grad = ctx.full ? tl.allocate(bias_bytes(ctx.seq, ctx.seq), cat::activations) : -1;
    }
  }
  tl.free(bias_grad);
  for (int id : encoder_bias) tl.free(id);
  encoder_bias.clear();
  tl.free(received);
  if (!last_stage) grads_for(-1);      // the first stage's embeddings, stepped back last
  for (int id : waiting) tl.free(id);  // (their backward follows, with the gradients alive)
  tl.free(root);
}

// The loss's and the head's backward on the last stage.
void step_replay::loss_backward() {
  if (!last_stage) return;
  if (fw.loss == loss_path::fused_chunks) {
    // The loss's gradient was made in its forward; its backward scales it out of place
    // (grad_inputs * scale_factor, beside the saved one) and hands it on.
    const int scaled = tl.allocate(ctx.c * t_tokens * e, cat::logits_and_loss);
    tl.free(kept_logits);
    grads_for(-1);
    tl.free(scaled);
    for (int id : head) tl.free(id);
    return;
  }
  // nll_loss's backward writes a dense [tokens, vocab] fp32 gradient; log_softmax's backward
  // makes another while that one and its saved output are alive; then the gradient is cast
  // back to the logits' dtype (aten nll_loss_backward, _log_softmax_backward_data). Chunked,
  // autograd runs each chunk's nll, log_softmax and upcast backward before the next (a
  // chunk's nodes are younger than the previous chunk's: the engine takes the highest
  // sequence number first), so only the gradients of all chunks in the logits' dtype pile up
  // (in fp32 the upcast is no node and each chunk's fp32 gradient waits for the head).
  const int grad_nll = tl.allocate(loss_bytes * chunk_elements, cat::logits_and_loss);
  int grad_logits = tl.allocate(loss_bytes * chunk_elements, cat::logits_and_loss);
  tl.free(grad_nll);
  tl.free(log_softmax);
  if (fw.loss == loss_path::chunked_fp32) {
    // Fabric's fp32 casts are older than every chunk's loss, so the fp32 gradients of all
    // chunks pile up before the first is cast back, each then giving way to its 16-bit one.
    tl.free(tl.allocate(4 * (tv - chunk_elements), cat::logits_and_loss));
    tl.free(grad_logits);
    grad_logits = -1;
  }
  // Shifted fp32 logits of a 16-bit head (Llama's forward before 4.46, ForCausalLMLoss before
  // 4.49): the slice's backward fills an fp32 gradient of all positions, which the upcast's
  // backward then casts.
  const bool unshift_fp32 = shifted && shift_bytes == 4 && ctx.c != 4;
  if (unshift_fp32) {
    const int unshifted = tl.allocate(4 * tv, cat::logits_and_loss);
    tl.free(grad_logits);
    grad_logits = unshifted;
  }
  const bool unshift_after = shifted && !unshift_fp32;
  // The gradient in the head's dtype: cast back, gathered from the chunks, or (a plain
  // cross-entropy of shifted logits) put into a zeroed tensor of all positions.
  int grad_c = loss_bytes == ctx.c && chunk_elements == tv && !unshift_after
                   ? -1
                   : tl.allocate(ctx.c * tv, cat::logits_and_loss);
  tl.free(tl.allocate(head_dequantised, cat::activations));  // the head's input gradient
  tl.free(grad_logits);
  if (unshift_after && loss_bytes != ctx.c) {
    // The cast back is of the shifted positions; the slice's backward fills another.
    const int unshifted = tl.allocate(ctx.c * tv, cat::logits_and_loss);
    tl.free(grad_c);
    grad_c = unshifted;
  }
  if (keeps_logits) {
    previous_logits = kept_logits;
  } else {
    tl.free(kept_logits);
  }
  grads_for(-1);  // LM head and embeddings (outside the blocks)
  tl.free(grad_c);
  for (int id : head) tl.free(id);
}

void step_replay::block_backward(std::size_t l) {
  const auto& b = blocks[l];
  if (offloaded[l]) {  // brought back before the block's backward
    for (auto bytes : saved_bytes(b)) saved[l].push_back(tl.allocate(bytes, cat::activations));
  }
  // The recomputation takes the per-op checkpoint's outputs over as what it would have made.
  for (int id : cached[l]) tl.free(id);
  cached[l].clear();
  std::vector<int> recomputed;
  if (checkpointed && b.graph) {
    for (auto bytes : b.weight_copies)
      recomputed.push_back(tl.allocate(bytes, cat::autocast_weight_copies));
    for (auto bytes : b.saved) recomputed.push_back(tl.allocate(bytes, cat::activations));
  }
  if (deepspeed3) {
    gathered[l] = tl.allocate(
        deepspeed_working_set(l, true, l > stage.first ? block_params[l - 1] : input_root),
        cat::gathered_params);
  } else if (params_sharded && gathered[l] < 0) {
    gathered[l] = tl.allocate(block_params[l], cat::gathered_params);
  }
  // FSDP2 gathers the block stepped back next while this one is ("always follows
  // backward_prefetch=BACKWARD_PRE": torchtitan docs/fsdp.md).
  if (fw.prefetches_backward && params_sharded && l > stage.first && gathered[l - 1] < 0)
    gathered[l - 1] = tl.allocate(block_params[l - 1], cat::gathered_params);
  const int busy = tl.allocate(b.backward_transient, cat::activations);
  grads_for(static_cast<int>(l));
  if (in_backward) {
    for (int id : grads) tl.free(id);  // stepped and zeroed in its hook
    grads.clear();
  }
  tl.free(busy);
  for (int id : recomputed) tl.free(id);
  for (int id : saved[l]) tl.free(id);
  if (inputs_outlive_backward && b.retained > 0)
    previous_graph.push_back(tl.allocate(b.retained, cat::activations));
  tl.free(gathered[l]);
  gathered[l] = -1;
}

// A layer's gradients; reduced shards that go to the host (ZeRO-Offload's pinned fp32
// partition, FSDP CPUOffload) leave nothing on the GPU.
void step_replay::grads_for(int layer) {
  const std::size_t before = grads.size();
  grads_for_layer(layer);
  if (!grads_to_host) return;
  for (std::size_t i = before; i < grads.size(); ++i) tl.free(grads[i]);
  grads.resize(before);
}

void step_replay::grads_for_layer(int layer) {
  if (!grads_sharded) {
    if (!first_micro || grads_kept) return;  // accumulated in place
    for (const trainable* p : layer_params(layer))
      grads.push_back(tl.allocate(p->numel * p->bytes, cat::gradients));
    return;
  }
  std::vector<int>& kept = unsynced[static_cast<std::size_t>(layer + 1)];
  if (no_sync && !last_micro) {
    if (!kept.empty()) return;  // accumulated into
    std::uint64_t unit = 0;
    for (const trainable* p : layer_params(layer))
      unit += p->numel * (params_sharded ? gathered_bytes : p->bytes);
    if (unit > 0 && frozen_in_flat_params)
      unit += layer >= 0 ? block_params[static_cast<std::size_t>(layer)] : root_params;
    if (unit > 0) kept.push_back(tl.allocate(unit, cat::gradients));
    return;
  }
  if (sharded_grads_for_layer(layer, kept)) return;
  // DeepSpeed ZeRO-2 accumulates into the shard it keeps.
  // Offloaded, the reduced shard is written to the host instead (nothing stays).
  const bool keep_shard =
      !method.grads_in_param_chunks && (first_micro || no_sync) && !grads_to_host;
  std::vector<int> full;
  std::uint64_t unsharded = 0;
  for (const trainable* p : layer_params(layer)) {
    if (kept.empty()) {
      full.push_back(
          tl.allocate(p->numel * (params_sharded ? gathered_bytes : p->bytes), cat::gradients));
      unsharded += p->numel;
    }
    if (keep_shard && !grads_kept) {
      grads.push_back(tl.allocate(share(p->numel * p->bytes, true), cat::gradients));
    }
  }
  // torchtitan's FSDP2 copies a unit's gradients into one flat reduce-scatter input in its
  // reduce dtype, fp32 under mixed precision (MixedPrecisionPolicy reduce_dtype: its
  // mixed_precision_reduce "float32"; torch/distributed/fsdp/_fully_shard/
  // _fsdp_collectives.py foreach_reduce), before the gradients go.
  if (fw.flat_reduce_copy && params_sharded && unsharded > 0)
    tl.free(tl.allocate((ctx.amp ? 4 : gathered_bytes) * unsharded, cat::communication_buffers));
  for (int id : full) tl.free(id);
  for (int id : kept) tl.free(id);  // reduce-scattered at last
  kept.clear();
}

// The block's full gradients exist until they are reduce-scattered into this rank's shard
// (FSDP, ZeRO-2/3); the shard stays. Gemini writes the reduced shard into the parameters' own
// fp16 chunk slots (ZeroDDP grad_handle: copy_tensor_to_chunk_slice), so nothing stays. Handles
// the flat parameters of litgpt's FSDP and DeepSpeed ZeRO-3's bucket; false for the rest.
bool step_replay::sharded_grads_for_layer(int layer, std::vector<int>& kept) {
  if (frozen_in_flat_params) {
    // A flat parameter holding frozen and trainable tensors gets a gradient for all of it.
    std::uint64_t trainable_in_unit = 0;
    for (const trainable* p : layer_params(layer)) trainable_in_unit += p->numel * p->bytes;
    if (trainable_in_unit == 0) return true;  // an all-frozen unit has no gradient
    const std::uint64_t unit =
        (layer >= 0 ? block_params[static_cast<std::size_t>(layer)] : root_params) +
        trainable_in_unit;
    const int whole = kept.empty() ? tl.allocate(unit, cat::gradients) : -1;
    if (!grads_kept) grads.push_back(tl.allocate(share(unit, true), cat::gradients));
    tl.free(whole);
    for (int id : kept) tl.free(id);  // reduce-scattered at last
    kept.clear();
    return true;
  }
  if (!deepspeed3) return false;
  // Each gradient is copied into the reduce bucket as it is made, and a full bucket is
  // reduce-scattered from a flat copy of it (stage3.py __add_grad_to_ipg_bucket,
  // comm/coalesced_collectives.py reduce_scatter_coalesced) into the partition buffer.
  std::uint64_t largest = 0;
  std::uint64_t total = 0;
  for (const trainable* p : layer_params(layer)) {
    const std::uint64_t bytes = p->numel * (ctx.full ? gathered_bytes : p->bytes);
    largest = std::max(largest, bytes);
    total += bytes;
  }
  if (total == 0) return true;
  const int fresh = tl.allocate(largest, cat::gradients);
  tl.free(tl.allocate(std::min(bucket_bytes, total), cat::communication_buffers));
  tl.free(fresh);
  return true;
}

}  // namespace gpumem
