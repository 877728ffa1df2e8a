#include "inference/rank_tensors.hpp"

#include <algorithm>

#include "gpumem/model/param_count.hpp"
#include "model/quantization_config.hpp"

namespace gpumem::inference_tensors {

bool embedding_role(tensor_role r) {
  return r == tensor_role::token_embedding || r == tensor_role::position_embedding;
}

bool holds(const rank_layout& r, const inference_config& c, const tensor_spec& t) {
  if (t.layer >= 0) {
    const auto layer = static_cast<std::size_t>(t.layer);
    return layer >= r.first && layer < r.last;
  }
  if (c.framework == serving_framework::litgpt && c.pp_degree > 1) return r.first_stage;
  // A vision tower runs before the first block.
  return embedding_role(t.role) || t.role == tensor_role::vision ? r.first_stage : r.last_stage;
}

// The tensor-parallel degree a tensor is split over: Megatron-style for the blocks' linears;
// the vocabulary matrices are split by vLLM (VocabParallelEmbedding, ParallelLMHead), only the
// LM head by transformers (tp_plan "lm_head": "colwise_rep"), neither by litgpt (generate/tp.py
// shards the blocks' linears only).
std::uint64_t split_over(const tensor_spec& t, const inference_config& c, std::uint64_t tp) {
  if (t.layer >= 0) return tp;
  if (t.role == tensor_role::lm_head) return c.framework == serving_framework::litgpt ? 1 : tp;
  if (t.role == tensor_role::token_embedding)
    return c.framework == serving_framework::vllm ? tp : 1;
  return 1;
}

matrix_dims local_matrix(const tensor_spec& t, std::uint64_t tp) {
  if (t.shape.size() == 3) {
    // Fused experts [experts, out, in]: tensor parallelism splits every expert's width, the
    // output of gate/up and the input of down (vLLM FusedMoE, Megatron's expert MLPs).
    const bool down = t.name.find("down") != std::string::npos;
    return {t.shape[0], down ? t.shape[1] : t.shape[1] / tp, down ? t.shape[2] / tp : t.shape[2]};
  }
  const std::uint64_t numel = tensor_parallel_numel(t, tp);
  const std::uint64_t in = tensor_parallel_in_features(t, tp);
  return {1, numel / in, in};
}

// This rank's elements of a tensor.
std::uint64_t local_numel(const tensor_spec& t, std::uint64_t tp) {
  if (t.shape.size() == 3) {
    const matrix_dims m = local_matrix(t, tp);
    return m.count * m.out * m.in;
  }
  return tensor_parallel_numel(t, tp);
}

// Quantised formats replace the blocks' linear layers and experts (transformers'
// replace_with_bnb_linear, GPTQ/AWQ checkpoints, vLLM's quantised linear methods); embeddings,
// norms and biases stay in the compute dtype, and so does the LM head (transformers
// get_keys_to_not_convert), except in litgpt, whose Fabric BitsandbytesPrecision converts every
// nn.Linear.
bool quantized_tensor(const tensor_spec& t, const inference_config& c) {
  if (is_dense(c.weights.format) || t.is_bias || t.shape.size() < 2) return false;
  if (t.role == tensor_role::lm_head) return c.framework == serving_framework::litgpt;
  if (t.layer < 0) return false;
  for (const auto& module : c.unquantized_modules) {
    if (names_quantization_module(t.name, module)) return false;
  }
  // MXFP4 checkpoints (gpt-oss's quantization_config: modules_to_not_convert lists the attention,
  // router, embeddings and LM head) hold only the routed experts in 4 bits.
  if (c.weights.format == weight_format::mxfp4) return t.role == tensor_role::routed_experts;
  // transformers fuses routed experts into 3-D parameters, which bitsandbytes (replacing
  // nn.Linear modules only) leaves in 16 bits; GPTQ/AWQ/fp8 checkpoints and vLLM's FusedMoE
  // quantise them.
  const bool bitsandbytes =
      c.weights.format == weight_format::int8 || is_bitsandbytes_4bit(c.weights.format);
  if (t.role == tensor_role::routed_experts)
    return !(bitsandbytes && c.framework == serving_framework::transformers);
  return t.module == module_kind::linear || t.module == module_kind::conv1d ||
         t.role == tensor_role::shared_experts;
}

std::uint64_t stored_bytes(const tensor_spec& t, const model_spec& spec, const inference_config& c,
                           std::uint64_t rank_tp) {
  const std::uint64_t tp = split_over(t, c, rank_tp);
  const std::uint64_t numel = local_numel(t, tp);
  if (is_gguf(c.weights.format))
    return gguf_tensor_bytes(numel, gguf_tensor_type(c.weights.format, t, spec));
  if (c.weights.format == weight_format::fp32) return numel * 4;
  if (!quantized_tensor(t, c)) return numel * c.weights.dense_bytes;
  const matrix_dims m = local_matrix(t, tp);
  return m.count * quantized_matrix_bytes(m.out, m.in, c.weights);
}

// The transient a quantised linear allocates to multiply `rows` token rows: bitsandbytes 4-bit
// dequantises the whole weight to 16 bits unless it is a single row (autograd/_functions.py
// matmul_4bit: gemv_4bit for one row, else F.linear(A, dequantize_4bit(B).to(A.dtype).t())); a
// weight Lightning quantised from fp16 (fabric/plugins/precision/bitsandbytes.py quantize:
// `.to(dtype=torch.half)`) is dequantised to fp16 and converted again for bf16 compute.
// LLM.int8 quantises the input rows to int8 and multiplies into int32 (int8_vectorwise_quant,
// int8_linear_matmul); fp8 quantises the input rows to one byte; AWQ's GEMM kernel dequantises
// the weight to fp16 from 1024 rows on (awq/modules/linear/gemm.py).
std::uint64_t matmul_transient(const matrix_dims& m, std::uint64_t rows,
                               const inference_config& c) {
  const std::uint64_t weight = m.out * m.in;
  switch (c.weights.format) {
    case weight_format::nf4:
    case weight_format::fp4:
    case weight_format::nf4_double_quant:
    case weight_format::fp4_double_quant: {
      if (rows <= 1) return 0;
      const bool from_fp16 = c.framework == serving_framework::litgpt && c.activation_bf16;
      return weight * 2 * (from_fp16 ? 2 : 1);
    }
    case weight_format::int8:
      return rows * m.in + rows * m.out * 4 + rows * 4;
    case weight_format::fp8:
      return rows * m.in + rows * 4;
    case weight_format::awq_4bit:
      // (AutoAWQ before 0.2.0 always ran its GEMM kernel: awq/modules/linear.py.)
      if (c.framework == serving_framework::autoawq && c.autoawq && c.autoawq->before(0, 2))
        return 0;
      return rows >= 1024 ? weight * 2 : 0;
    default:
      return 0;
  }
}

}  // namespace gpumem::inference_tensors
