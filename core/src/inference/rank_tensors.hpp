#pragma once
// The tensors one inference rank holds and how they are stored: its stage's blocks and the
// embedding or head, each split over the tensor-parallel degree the framework splits it over, in
// the weights' storage format, and the transient a quantised matrix allocates to multiply.

#include <cstdint>

#include "gpumem/inference/inference_step.hpp"
#include "gpumem/model/model_spec.hpp"

namespace gpumem::inference_tensors {

// Which tensors this rank holds: its stage's blocks; the embedding on the first stage and the
// final norm and LM head on the last (litgpt's generate/sequentially.py keeps everything that is
// not a block on cuda:0). A tied LM head is loaded again on the last stage.
struct rank_layout {
  std::size_t first = 0;
  std::size_t last = 0;
  bool first_stage = true;
  bool last_stage = true;
  std::uint64_t tp = 1;
};

// A weight matrix's features on this rank: rows x in-features per matrix (3-D expert tensors
// [experts, out, in] count `experts` matrices).
struct matrix_dims {
  std::uint64_t count = 1;
  std::uint64_t out = 0;
  std::uint64_t in = 0;
};

bool embedding_role(tensor_role r);

bool holds(const rank_layout& r, const inference_config& c, const tensor_spec& t);

// The tensor-parallel degree a tensor is split over: Megatron-style for the blocks' linears;
// the vocabulary matrices are split by vLLM (VocabParallelEmbedding, ParallelLMHead), only the
// LM head by transformers (tp_plan "lm_head": "colwise_rep"), neither by litgpt (generate/tp.py
// shards the blocks' linears only).
std::uint64_t split_over(const tensor_spec& t, const inference_config& c, std::uint64_t tp);

matrix_dims local_matrix(const tensor_spec& t, std::uint64_t tp);

// This rank's elements of a tensor.
std::uint64_t local_numel(const tensor_spec& t, std::uint64_t tp);

// Quantised formats replace the blocks' linear layers and experts (transformers'
// replace_with_bnb_linear, GPTQ/AWQ checkpoints, vLLM's quantised linear methods); embeddings,
// norms and biases stay in the compute dtype, and so does the LM head (transformers
// get_keys_to_not_convert), except in litgpt, whose Fabric BitsandbytesPrecision converts every
// nn.Linear.
bool quantized_tensor(const tensor_spec& t, const inference_config& c);

std::uint64_t stored_bytes(const tensor_spec& t, const model_spec& spec, const inference_config& c,
                           std::uint64_t rank_tp);

// The transient a quantised linear allocates to multiply `rows` token rows: bitsandbytes 4-bit
// dequantises the whole weight to 16 bits unless it is a single row (autograd/_functions.py
// matmul_4bit: gemv_4bit for one row, else F.linear(A, dequantize_4bit(B).to(A.dtype).t())); a
// weight Lightning quantised from fp16 (fabric/plugins/precision/bitsandbytes.py quantize:
// `.to(dtype=torch.half)`) is dequantised to fp16 and converted again for bf16 compute.
// LLM.int8 quantises the input rows to int8 and multiplies into int32 (int8_vectorwise_quant,
// int8_linear_matmul); fp8 quantises the input rows to one byte; AWQ's GEMM kernel dequantises
// the weight to fp16 from 1024 rows on (awq/modules/linear/gemm.py).
std::uint64_t matmul_transient(const matrix_dims& m, std::uint64_t rows, const inference_config& c);

}  // namespace gpumem::inference_tensors
