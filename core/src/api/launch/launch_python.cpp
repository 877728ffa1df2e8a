// The transformers export written as the Python a training script starts with: one call per
// object, keyword arguments as Python literals (torch dtypes as torch attributes, the
// quantisation config by its variable).
#include <string>

#include "api/launch/launch.hpp"

namespace gpumem {

using json = nlohmann::ordered_json;

namespace {

std::string literal(const json& value, const std::string& key) {
  if (value.is_boolean()) return value.get<bool>() ? "True" : "False";
  if (value.is_null()) return "None";
  if (value.is_string()) {
    const std::string& text = value.get_ref<const std::string&>();
    if (key == "torch_dtype" || key == "bnb_4bit_compute_dtype") return "torch." + text;
    if (key == "quantization_config") return "quantization_config";
    return value.dump();  // a JSON string is a Python string literal
  }
  if (value.is_array()) {
    std::string out = "[";
    for (const auto& item : value) out += (out.size() > 1 ? ", " : "") + literal(item, "");
    return out + "]";
  }
  if (value.is_object()) {
    std::string out = "{";
    for (const auto& item : value.items()) {
      out += (out.size() > 1 ? ", " : "") + json(item.key()).dump() + ": " +
             literal(item.value(), item.key());
    }
    return out + "}";
  }
  return value.dump();
}

std::string call(const std::string& target, const std::string& callable, const json& kwargs,
                 const std::string& first) {
  std::string out = target + " = " + callable + "(\n";
  if (!first.empty()) out += "    " + first + ",\n";
  for (const auto& item : kwargs.items()) {
    out += "    " + item.key() + "=" + literal(item.value(), item.key()) + ",\n";
  }
  return out + ")\n";
}

}  // namespace

std::string python_text(const json& content, const std::string& model_id) {
  std::string out =
      "import torch\nfrom transformers import AutoModelForCausalLM, TrainingArguments";
  if (content.contains("BitsAndBytesConfig")) out += ", BitsAndBytesConfig";
  out += "\n";
  if (content.contains("LoraConfig")) out += "from peft import LoraConfig, get_peft_model\n";
  out += "\n";
  if (content.contains("BitsAndBytesConfig")) {
    out += call("quantization_config", "BitsAndBytesConfig", content.at("BitsAndBytesConfig"), "");
  }
  const std::string id = model_id.empty() ? "MODEL_ID" : model_id;
  out += call("model", "AutoModelForCausalLM.from_pretrained",
              content.at("AutoModelForCausalLM.from_pretrained"), json(id).dump());
  if (content.contains("LoraConfig")) {
    out += call("lora_config", "LoraConfig", content.at("LoraConfig"), "");
    out += "model = get_peft_model(model, lora_config)\n";
  }
  out += call("args", "TrainingArguments", content.at("TrainingArguments"), "output_dir=\"out\"");
  return out;
}

}  // namespace gpumem
