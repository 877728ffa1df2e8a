#include "gpumem/model/weight_format.hpp"

#include <utility>

namespace gpumem {

namespace {

constexpr std::pair<const char*, weight_format> format_names[] = {
    {"fp32", weight_format::fp32},
    {"fp16", weight_format::fp16},
    {"bf16", weight_format::bf16},
    {"fp8", weight_format::fp8},
    {"int8", weight_format::int8},
    {"nf4", weight_format::nf4},
    {"fp4", weight_format::fp4},
    {"nf4_double_quant", weight_format::nf4_double_quant},
    {"fp4_double_quant", weight_format::fp4_double_quant},
    {"gptq_4bit", weight_format::gptq_4bit},
    {"awq_4bit", weight_format::awq_4bit},
    {"mxfp4", weight_format::mxfp4},
    {"gguf_q8_0", weight_format::gguf_q8_0},
    {"gguf_q6_k", weight_format::gguf_q6_k},
    {"gguf_q5_k_m", weight_format::gguf_q5_k_m},
    {"gguf_q4_k_m", weight_format::gguf_q4_k_m},
    {"gguf_q3_k_m", weight_format::gguf_q3_k_m},
    {"gguf_q2_k", weight_format::gguf_q2_k},
};

// Block layouts of ggml-common.h: (weights per block, bytes per block).
//   q8_0: fp16 scale + 32 int8;                         34 B / 32
//   q6_k: ql[128] + qh[64] + int8 scales[16] + fp16 d;  210 B / 256
//   q5_k: fp16 d, dmin + scales[12] + qh[32] + qs[128]; 176 B / 256
//   q4_k: fp16 d, dmin + scales[12] + qs[128];          144 B / 256
//   q3_k: hmask[32] + qs[64] + scales[12] + fp16 d;     110 B / 256
//   q2_k: scales[16] + qs[64] + fp16 d, dmin;            84 B / 256
// and the 32-weight fallbacks for rows that are not a multiple of 256.
std::pair<std::uint64_t, std::uint64_t> gguf_block(gguf_type type) {
  switch (type) {
    case gguf_type::f32:
      return {1, 4};
    case gguf_type::f16:
      return {1, 2};
    case gguf_type::q8_0:
      return {32, 34};
    case gguf_type::q6_k:
      return {256, 210};
    case gguf_type::q5_k:
      return {256, 176};
    case gguf_type::q4_k:
      return {256, 144};
    case gguf_type::q3_k:
      return {256, 110};
    case gguf_type::q2_k:
      return {256, 84};
    case gguf_type::q4_0:
      return {32, 18};  // fp16 d + 16 bytes of 4-bit codes
    case gguf_type::q5_0:
      return {32, 22};  // fp16 d + qh[4] + qs[16]
    case gguf_type::q5_1:
      return {32, 24};  // fp16 d, m + qh[4] + qs[16]
  }
  return {1, 2};
}

gguf_type gguf_base_type(weight_format format) {
  switch (format) {
    case weight_format::gguf_q8_0:
      return gguf_type::q8_0;
    case weight_format::gguf_q6_k:
      return gguf_type::q6_k;
    case weight_format::gguf_q5_k_m:
      return gguf_type::q5_k;
    case weight_format::gguf_q4_k_m:
      return gguf_type::q4_k;
    case weight_format::gguf_q3_k_m:
      return gguf_type::q3_k;
    case weight_format::gguf_q2_k:
      return gguf_type::q2_k;
    default:
      return gguf_type::f16;
  }
}

// llama-quant.cpp use_more_bits: the first and last eighth of the layers and every third one
// in between get the higher-precision type.
bool use_more_bits(std::uint64_t layer, std::uint64_t layers) {
  return layer < layers / 8 || layer >= 7 * layers / 8 || (layer - layers / 8) % 3 == 2;
}

// The tensor's role in llama.cpp's naming, from its Hugging Face name.
bool name_ends(const std::string& name, const char* suffix) {
  const std::string s(suffix);
  return name.size() >= s.size() && name.compare(name.size() - s.size(), s.size(), s) == 0;
}
bool is_attention_value(const tensor_spec& t) { return name_ends(t.name, "v_proj.weight"); }
bool is_fused_qkv(const tensor_spec& t) {
  return name_ends(t.name, "query_key_value.weight") || name_ends(t.name, "qkv_proj.weight") ||
         name_ends(t.name, "c_attn.weight") || name_ends(t.name, "Wqkv.weight");
}
bool is_attention_output(const tensor_spec& t) {
  return name_ends(t.name, "o_proj.weight") || name_ends(t.name, "attn.c_proj.weight") ||
         name_ends(t.name, "attention.dense.weight") ||
         name_ends(t.name, "self_attn.dense.weight") || name_ends(t.name, "out_proj.weight");
}
bool is_ffn_down(const tensor_spec& t) {
  return name_ends(t.name, "down_proj.weight") || name_ends(t.name, "dense_4h_to_h.weight") ||
         name_ends(t.name, "fc2.weight") || name_ends(t.name, "mlp.c_proj.weight") ||
         name_ends(t.name, "w2.weight");
}

// The K-quant mix before the row-length fallback.
gguf_type gguf_mixed_type(weight_format format, const tensor_spec& tensor,
                          const model_spec& model) {
  const gguf_type base = gguf_base_type(format);
  const bool output = tensor.role == tensor_role::lm_head ||
                      (tensor.role == tensor_role::token_embedding && model.tied_embeddings);
  if (output) {
    // output.weight (or the tied token_embd): Q6_K, Q8_0 kept; Falcon keeps Q8_0.
    return format == weight_format::gguf_q8_0 || model.model_type == "falcon" ? gguf_type::q8_0
                                                                              : gguf_type::q6_k;
  }
  if (format == weight_format::gguf_q8_0 || format == weight_format::gguf_q6_k) return base;
  if (tensor.layer < 0 || tensor.role == tensor_role::router) return base;
  const auto layer = static_cast<std::uint64_t>(tensor.layer);
  const std::uint64_t layers = model.num_layers;
  const bool q2 = format == weight_format::gguf_q2_k;
  const bool q3 = format == weight_format::gguf_q3_k_m;
  if (is_attention_value(tensor)) {
    gguf_type type =
        q2   ? (model.num_heads >= 4 * model.num_kv_heads ? gguf_type::q4_k : gguf_type::q3_k)
        : q3 ? (layer < 2 ? gguf_type::q5_k : gguf_type::q4_k)
        : use_more_bits(layer, layers) ? gguf_type::q6_k
                                       : base;
    // LLM_TYPE_70B (Llama with 80 layers): attn_v's Q3_K / Q4_K is raised to Q5_K.
    const bool llama_70b = model.model_type == "llama" && layers == 80;
    if (llama_70b && (type == gguf_type::q3_k || type == gguf_type::q4_k)) type = gguf_type::q5_k;
    return type;
  }
  if (is_fused_qkv(tensor)) {
    if (q3) return gguf_type::q4_k;
    if (format == weight_format::gguf_q4_k_m) return gguf_type::q5_k;
    if (format == weight_format::gguf_q5_k_m) return gguf_type::q6_k;
    return base;
  }
  if (is_ffn_down(tensor)) {
    if (q2) return gguf_type::q3_k;
    if (q3) return layer < layers / 16 ? gguf_type::q5_k : gguf_type::q4_k;
    return use_more_bits(layer, layers) ? gguf_type::q6_k : base;
  }
  if (is_attention_output(tensor)) {
    if (q2) return gguf_type::q3_k;
    if (q3) return gguf_type::q4_k;
  }
  return base;
}

}  // namespace

std::optional<weight_format> weight_format_named(const std::string& name) {
  for (const auto& [n, f] : format_names) {
    if (name == n) return f;
  }
  return std::nullopt;
}

const char* weight_format_name(weight_format format) {
  for (const auto& [n, f] : format_names) {
    if (format == f) return n;
  }
  return "bf16";
}

bool is_bitsandbytes_4bit(weight_format format) {
  return format == weight_format::nf4 || format == weight_format::fp4 ||
         format == weight_format::nf4_double_quant || format == weight_format::fp4_double_quant;
}

bool is_gguf(weight_format format) { return gguf_base_type(format) != gguf_type::f16; }

bool is_dense(weight_format format) {
  return format == weight_format::fp32 || format == weight_format::fp16 ||
         format == weight_format::bf16;
}

std::uint64_t gguf_tensor_bytes(std::uint64_t numel, gguf_type type) {
  const auto [per_block, bytes] = gguf_block(type);
  return ceil_div(numel, per_block) * bytes;
}

gguf_type gguf_tensor_type(weight_format format, const tensor_spec& tensor,
                           const model_spec& model) {
  // convert_hf_to_gguf.py stores 1-D tensors (norms, biases) as F32.
  if (tensor.shape.size() < 2) return gguf_type::f32;
  const gguf_type type = gguf_mixed_type(format, tensor, model);
  // Rows (ne[0], the input features) not a multiple of 256 cannot hold K-quant blocks.
  const std::uint64_t row =
      tensor.module == module_kind::conv1d ? tensor.shape[0] : tensor.shape.back();
  if (gguf_block(type).first == 256 && row % 256 != 0) {
    switch (type) {
      case gguf_type::q2_k:
      case gguf_type::q3_k:
        return gguf_type::q4_0;
      case gguf_type::q4_k:
        return gguf_type::q5_0;
      case gguf_type::q5_k:
        return gguf_type::q5_1;
      default:
        return gguf_type::q8_0;
    }
  }
  return type;
}

std::uint64_t quantized_matrix_bytes(std::uint64_t out_features, std::uint64_t in_features,
                                     const weight_storage& storage) {
  const std::uint64_t numel = out_features * in_features;
  const std::uint64_t blocks = ceil_div(numel, 64);
  const std::uint64_t groups = ceil_div(in_features, storage.group_size);
  switch (storage.format) {
    case weight_format::fp8:
      // torch.float8_e4m3fn weight + fp32 weight_scale (per tensor, or [out, 1] per channel).
      return numel + 4 * (storage.fp8 == fp8_scaling::per_tensor ? 1 : out_features);
    case weight_format::int8:
      // bitsandbytes Int8Params: int8 CB [out, in] + fp32 row absmax SCB [out].
      return numel + 4 * out_features;
    case weight_format::nf4:
    case weight_format::fp4:
      // functional.quantize_4bit, blocksize 64: packed uint8 codes + fp32 absmax per block.
      return ceil_div(numel, 2) + 4 * blocks;
    case weight_format::nf4_double_quant:
    case weight_format::fp4_double_quant:
      // compress_statistics: the absmax quantised to uint8 in blocks of 256, their fp32 absmax,
      // and the fp32 offset.
      return ceil_div(numel, 2) + blocks + 4 * ceil_div(blocks, 256) + 4;
    case weight_format::gptq_4bit:
      // qweight int32 [in/8, out], qzeros int32 [groups, out/8], fp16 scales [groups, out],
      // g_idx int32 [in] (AutoGPTQ QuantLinear).
      return ceil_div(numel, 2) + groups * ceil_div(out_features, 8) * 4 +
             groups * out_features * 2 + 4 * in_features;
    case weight_format::mxfp4:
      // OCP MX FP4 (E2M1) codes packed two a byte and one E8M0 scale byte per 32 weights along
      // the input (gpt-oss: `*_blocks` uint8 [..., in/32, 16] and `*_scales` uint8 [..., in/32]).
      return ceil_div(numel, 2) + out_features * ceil_div(in_features, 32);
    case weight_format::awq_4bit:
      // qweight int32 [in, out/8], qzeros int32 [groups, out/8], fp16 scales [groups, out]
      // (AutoAWQ WQLinear_GEMM).
      return ceil_div(numel, 2) + groups * ceil_div(out_features, 8) * 4 +
             groups * out_features * 2;
    default:
      return numel * storage.dense_bytes;
  }
}

}  // namespace gpumem
