#pragma once
// The data-parallel methods a training request names.

namespace gpumem {

// How data-parallel ranks place the model states (each rank runs its own micro-batch):
// a full replica with gradient buckets (PyTorch DDP); ZeRO stage 1 (optimizer states and fp32
// master weights sharded), 2 (and gradients), 3 (and parameters); FSDP FULL_SHARD (ZeRO-3-like,
// one block gathered at a time plus the next prefetched) and SHARD_GRAD_OP (parameters stay
// gathered from forward to backward).
// Colossal-AI Gemini is ZeRO-3 in chunks whose fp16 slots also hold the gradients, stepped by
// HybridAdam on those fp16 gradients.
enum class data_parallel {
  none,
  ddp,
  zero1,
  zero2,
  zero3,
  gemini,
  fsdp_full_shard,
  fsdp_shard_grad_op
};

}  // namespace gpumem
