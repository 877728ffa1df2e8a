#pragma once
// What one transformer block keeps for its backward and briefly needs, tensor by tensor, as the
// frameworks' modelling code allocates it: the step's replay (training_step.cpp) places these
// tensors on its timeline.

#include <cstdint>
#include <string>
#include <vector>

#include "gpumem/model/model_spec.hpp"
#include "gpumem/training/training_step.hpp"

namespace gpumem {

// What one transformer block keeps for backward and briefly needs, as separate tensors.
struct block_memory {
  // False for a block autograd records nothing of: no trainable parameter in or below it
  // (LLaMA-Adapter's blocks before adapter_start_layer).
  bool graph = true;
  std::vector<std::uint64_t> saved;          // alive until this block's backward
  std::vector<std::uint64_t> weight_copies;  // autocast's 16-bit copies of its weights
  std::uint64_t transient = 0;               // extra bytes alive at the block's busiest moment
  std::uint64_t backward_transient = 0;      // gradient temporaries during its backward
  std::uint64_t adapter_backward = 0;        // DoRA's, while its attention or MLP is stepped back
  // Inputs of its 4-bit linears, which bitsandbytes holds beyond the backward (ctx.tensors).
  std::uint64_t retained = 0;
  std::uint64_t residual = 0;  // its input (and output): the residual stream of its tokens
  // A cross-attention block whose key or value projection keeps the encoder's output itself for
  // its backward (one tensor all such blocks share: the step holds it, not the block).
  bool keeps_memory = false;
  // Its attention takes the boolean mask transformers builds once a forward (masked_sdpa).
  bool masked_attention = false;
  // Outputs a per-op selective checkpoint keeps from the forward beside the block's input
  // (torchtitan's policy); the recomputation takes them over for the block's backward.
  std::vector<std::uint64_t> op_cache;
};

// The run as every block sees it: this rank's tokens, the dtypes, what trains and how.
struct step_context {
  const model_spec& spec;
  const training_config& config;
  std::uint64_t seq = 0;       // tokens of each sequence on this rank (s / cp)
  std::uint64_t tokens = 0;    // B s / cp
  std::uint64_t h_tokens = 0;  // tokens of this rank's hidden-width tensors (B s / t with SP)
  std::uint64_t tp = 1;        // tensor-parallel degree
  std::uint64_t cp = 1;        // context-parallel degree
  std::uint64_t c = 2;         // compute bytes
  std::uint64_t r = 4;         // residual-stream bytes (the embedding weight's dtype)
  std::uint64_t adapter_bytes = 4;
  bool amp = false;
  bool full = true;
  bool norms_train = false;  // full fine-tuning, LLaMA-Adapter v2
  bool quantized = false;    // QLoRA: bitsandbytes 4-bit block linears (or LLM.int8)
  bool int8_base = false;    // bitsandbytes LLM.int8 block linears (MatMul8bitLt)
  // Its quantised linears keep their inputs in ctx.tensors (MatMul8bitLt always; MatMul4Bit
  // before bitsandbytes 0.45: software_stack::bnb_4bit_keeps_input).
  bool base_keeps_input = false;
  bool fp16_quant_state = false;  // 4-bit weights quantised from fp16, computed in bf16
  bool kbit_fp32_norms = false;   // PEFT's kbit preparation: fp32 norms with fp32 outputs
  bool autocast_copies = false;   // fp32 trainable weights under autocast get 16-bit copies
  // Encoder-decoders: the encoder's output that cross-attention reads, B x s_enc tokens.
  std::uint64_t memory_seq = 0;
  std::uint64_t memory_tokens = 0;
  // T5's `wo` kept fp32 beside a 16-bit or quantised model (tensor_spec::kept_fp32).
  bool fp32_kept = false;
};

// The element size of a norm's output.
std::uint64_t norm_output_bytes(const step_context& ctx, std::uint64_t input_bytes);
// unsloth's buffer for its largest dequantised 4-bit block linear (of block `layer`, or of all
// blocks when -1).
std::uint64_t unsloth_dequantised_bytes(const model_spec& spec, std::uint64_t c, int layer);

// What block `layer_index` keeps for backward and briefly needs, on this rank.
block_memory block_memory_of(const step_context& ctx, int layer_index);
// Whether block_memory_of reads the same of blocks `a` and `b` (over the same tokens): the same
// kind of layer (layer_spec but its index), tensors that differ only in their layer and in the
// numbers of their names, the same side of LLaMA-Adapter's first adapted layer. A model's
// identical layers are then described once.
bool same_block_description(const step_context& ctx, int a, int b);

}  // namespace gpumem
