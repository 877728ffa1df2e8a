#include "model/quantization_config.hpp"

#include <cstdint>

namespace gpumem {

namespace {

using json = nlohmann::ordered_json;

std::uint64_t whole(const json& q, const char* key, std::uint64_t fallback) {
  const json& v = q.contains(key) ? q.at(key) : json();
  return v.is_number_integer() && v.get<std::int64_t>() > 0 ? v.get<std::uint64_t>() : fallback;
}

void read_unconverted(const json& q, const char* key, checkpoint_quantization& out) {
  if (!q.contains(key) || !q.at(key).is_array()) return;
  for (const auto& name : q.at(key)) {
    if (name.is_string() && !name.get<std::string>().empty())
      out.unconverted.push_back(name.get<std::string>());
  }
}

// compressed-tensors (llm-compressor): the first config group's weights — num_bits and type
// ("int" or "float") and group_size — and the modules it ignores.
std::string compressed_tensors(const json& q, checkpoint_quantization& out) {
  read_unconverted(q, "ignore", out);
  const json& groups = q.contains("config_groups") ? q.at("config_groups") : json();
  if (!groups.is_object() || groups.empty()) return "";
  const json& group = groups.begin().value();
  const json& weights =
      group.is_object() && group.contains("weights") ? group.at("weights") : json();
  if (!weights.is_object()) return "";
  const std::uint64_t bits = whole(weights, "num_bits", 0);
  const bool floating = weights.value("type", "int") == "float";
  out.group_size = whole(weights, "group_size", 0);
  out.fp8_per_tensor = weights.value("strategy", "") == "tensor";
  if (bits == 8) return floating ? "fp8" : "int8";
  if (bits == 4 && !floating) return "gptq_4bit";  // group-wise int4 with 16-bit scales
  return "";
}

// bitsandbytes (transformers' BitsAndBytesConfig as saved with a pre-quantised checkpoint).
std::string bitsandbytes(const json& q, checkpoint_quantization& out) {
  read_unconverted(q, "llm_int8_skip_modules", out);
  if (q.value("load_in_8bit", false)) return "int8";
  if (!q.value("load_in_4bit", false)) return "";
  const bool fp4 = q.value("bnb_4bit_quant_type", "fp4") == "fp4";
  const bool twice = q.value("bnb_4bit_use_double_quant", false);
  return std::string(fp4 ? "fp4" : "nf4") + (twice ? "_double_quant" : "");
}

}  // namespace

// Whether a tensor's name holds a module pattern of a quantization_config (transformers matches
// modules_to_not_convert as parts of the module's name; gpt-oss writes "model.layers.*.self_attn":
// the parts between wildcards, in order).
bool names_quantization_module(const std::string& name, const std::string& pattern) {
  std::size_t at = 0;
  std::size_t from = 0;
  while (from <= pattern.size()) {
    const std::size_t star = std::min(pattern.find('*', from), pattern.size());
    const std::string part = pattern.substr(from, star - from);
    if (!part.empty()) {
      at = name.find(part, at);
      if (at == std::string::npos) return false;
      at += part.size();
    }
    from = star + 1;
  }
  return true;
}

// The methods transformers' quantizers save (transformers/utils/quantization_config.py): AWQ
// (bits, group_size; "w_bit", "q_group_size" in AutoAWQ's own), GPTQ (bits, group_size, -1 for
// one group per channel), bitsandbytes, FP8 (weight_block_size: per-block scales, read as
// per-channel ones), compressed-tensors and MXFP4 (gpt-oss), each with the modules it skips.
std::optional<error> read_quantization_config(const json& config, const std::string& field,
                                              model_spec& spec) {
  if (!config.is_object() || !config.contains("quantization_config")) return std::nullopt;
  const json& q = config.at("quantization_config");
  const std::string where = field + ".quantization_config";
  if (q.is_null()) return std::nullopt;
  if (!q.is_object() || !q.contains("quant_method") || !q.at("quant_method").is_string()) {
    return error{"config.invalid_value", where,
                 "[" + where + "] must be an object with a quant_method"};
  }
  checkpoint_quantization out;
  out.method = q.at("quant_method").get<std::string>();
  read_unconverted(q, "modules_to_not_convert", out);
  std::string weights;
  if (out.method == "awq") {
    const std::uint64_t bits = whole(q, "bits", whole(q, "w_bit", 4));
    out.group_size = whole(q, "group_size", whole(q, "q_group_size", 128));
    if (bits == 4) weights = "awq_4bit";
  } else if (out.method == "gptq") {
    const std::uint64_t bits = whole(q, "bits", 4);
    out.group_size = whole(q, "group_size", 0);  // -1: one group a channel, read as whole rows
    if (bits == 4) weights = "gptq_4bit";
    if (bits == 8) weights = "int8";  // one byte a weight and its scales, as LLM.int8's
    out.act_order =
        q.contains("desc_act") && q.at("desc_act").is_boolean() && q.at("desc_act").get<bool>();
  } else if (out.method == "bitsandbytes") {
    weights = bitsandbytes(q, out);
  } else if (out.method == "fp8" || out.method == "fbgemm_fp8") {
    weights = "fp8";
  } else if (out.method == "compressed-tensors") {
    weights = compressed_tensors(q, out);
  } else if (out.method == "mxfp4") {
    weights = "mxfp4";
  }
  if (weights.empty()) {
    return error{"config.unsupported_value", where + ".quant_method",
                 "[" + where + ".quant_method] '" + out.method +
                     "' with these bits is not a checkpoint format gpumem reads (AWQ and GPTQ "
                     "4-bit, GPTQ 8-bit, bitsandbytes 4- and 8-bit, FP8, compressed-tensors int4/"
                     "int8/fp8, MXFP4): pass the 16-bit model's config.json and choose the "
                     "weights"};
  }
  out.weights = weights;
  spec.quantized_checkpoint = true;
  spec.checkpoint = std::move(out);
  return std::nullopt;
}

}  // namespace gpumem
