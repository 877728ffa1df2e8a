#pragma once
// The bytes a training step's memory-bound kernels move: everything but the matrix products and
// the attention kernel, which the step-time model times by their FLOPs. Norms, residual adds,
// rotary embeddings, the MLP's activation, dropout, the copies around attention, the loss over the
// vocabulary and autocast's casts each read and write whole activations, at the memory's
// bandwidth, whatever the GPU's FLOP/s (docs/llmem.md, "Memory-bound kernels").

#include <cstdint>

#include "gpumem/model/model_spec.hpp"

namespace gpumem {

// The dtypes the kernels see: activations (the matmuls' outputs) in 16 bits, or 32 under fp32
// compute; under autocast with fp32 weights the residual stream and the norms stay fp32 (the
// embedding's fp32 output is added to, and RMSNorm/LayerNorm run in fp32). A residual stream
// wider than the activations is that case: autocast casts fp32 weights and inputs to 16 bits.
struct activation_dtypes {
  double activation = 2;  // bytes of a matmul's output
  double residual = 2;    // bytes of the residual stream
  bool casts() const { return residual > activation; }
};

// Bytes one token moves through every block's memory-bound kernels in one forward, whole model
// (not split by tensor parallelism). learned_positions: the model has a position table (GPT-2,
// OPT), so no rotary embedding runs.
double block_traffic_per_token(const model_spec& spec, const activation_dtypes& dtypes,
                               bool learned_positions);

// Bytes one token moves through the loss over the vocabulary in a forward and its backward: the
// logits upcast to fp32, log-softmax, its gradient and the cast back (transformers'
// ForCausalLMLoss: logits.float(), cross_entropy). 0 for models without an LM loss.
double loss_traffic_per_token(const model_spec& spec, const activation_dtypes& dtypes);

}  // namespace gpumem
