#pragma once
// How an inference run stores a model's weights on the GPU, and the bytes every stored tensor
// takes in each format: 16/32-bit floats, fp8, bitsandbytes LLM.int8 and 4-bit (NF4/FP4, with
// or without double quantisation), GPTQ and AWQ group-wise 4-bit, and llama.cpp's GGUF types.
// docs/methodology.md ("Inference: weights") derives every format's bytes per weight.

#include <cstdint>
#include <optional>
#include <string>

#include "gpumem/model/model_spec.hpp"

namespace gpumem {

enum class weight_format {
  fp32,
  fp16,
  bf16,
  fp8,               // e4m3, one byte per weight plus fp32 scales
  int8,              // bitsandbytes LLM.int8
  nf4,               // bitsandbytes 4-bit, block 64, fp32 absmax
  fp4,               //   the same layout with the FP4 code book
  nf4_double_quant,  // bitsandbytes 4-bit with 8-bit absmax (double quantisation)
  fp4_double_quant,
  gptq_4bit,  // group-wise 4-bit with fp16 scales, packed zeros and g_idx (AutoGPTQ layout)
  awq_4bit,   // group-wise 4-bit with fp16 scales and packed zeros (AutoAWQ GEMM layout)
  mxfp4,      // OCP microscaling FP4 of the routed experts (gpt-oss checkpoints)
  gguf_q8_0,  // llama.cpp GGUF file types (tensor types chosen per tensor, see gguf_tensor_type)
  gguf_q6_k,
  gguf_q5_k_m,
  gguf_q4_k_m,
  gguf_q3_k_m,
  gguf_q2_k,
};

// fp8 weight scales: one per tensor, or one per output channel.
enum class fp8_scaling { per_tensor, per_channel };

struct weight_storage {
  weight_format format = weight_format::bf16;
  fp8_scaling fp8 = fp8_scaling::per_channel;
  std::uint64_t group_size = 128;  // GPTQ / AWQ quantisation group along the input features
  std::uint64_t dense_bytes = 2;   // what stays unquantised is stored in the compute dtype
  bool act_order = false;          // GPTQ's desc_act (the checkpoint's quantization_config)
};

// The format's name in requests ("bf16", "nf4_double_quant", "gguf_q4_k_m", ...), if it is one.
std::optional<weight_format> weight_format_named(const std::string& name);
const char* weight_format_name(weight_format format);

bool is_bitsandbytes_4bit(weight_format format);
bool is_gguf(weight_format format);
// 16- or 32-bit storage: nothing is quantised.
bool is_dense(weight_format format);

// ggml tensor types a GGUF file mixes (ggml-common.h block layouts).
enum class gguf_type { f32, f16, q8_0, q6_k, q5_k, q4_k, q3_k, q2_k, q4_0, q5_0, q5_1 };

// Bytes of `numel` weights stored as `type`, in whole blocks of the type's size.
std::uint64_t gguf_tensor_bytes(std::uint64_t numel, gguf_type type);

// The type llama.cpp's quantiser gives `tensor` for a file type (src/llama-quant.cpp
// llama_tensor_get_type): the K-quant mixes keep some attention-value and feed-forward-down
// matrices and the output matrix at higher precision; 1-D tensors stay f32; rows that are not a
// multiple of 256 fall back to 32-weight types.
gguf_type gguf_tensor_type(weight_format format, const tensor_spec& tensor,
                           const model_spec& model);

// Bytes of a quantised weight matrix with `out_features` x `in_features` elements stored in
// `storage` (not a GGUF format): codes plus their scales, zeros and indices.
std::uint64_t quantized_matrix_bytes(std::uint64_t out_features, std::uint64_t in_features,
                                     const weight_storage& storage);

}  // namespace gpumem
