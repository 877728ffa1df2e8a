// A config.json's quantization_config read as the checkpoint stores its weights, and what the
// estimates make of it.

#include "model/quantization_config.hpp"

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "gpumem/api/json_api.hpp"
#include "gpumem/model/config_parser.hpp"

namespace gpumem {
namespace {

using json = nlohmann::ordered_json;

json qwen_7b(const json& quantization) {
  json config = {{"model_type", "qwen2"},      {"hidden_size", 3584},
                 {"intermediate_size", 18944}, {"num_hidden_layers", 28},
                 {"num_attention_heads", 28},  {"num_key_value_heads", 4},
                 {"vocab_size", 152064},       {"tie_word_embeddings", false}};
  if (!quantization.is_null()) config["quantization_config"] = quantization;
  return config;
}

checkpoint_quantization read(const json& quantization) {
  auto spec = parse_model_config(qwen_7b(quantization), {}, "model.config");
  REQUIRE(spec.ok());
  REQUIRE(spec.value().quantized_checkpoint);
  return spec.value().checkpoint;
}

TEST_CASE("quantization_config: each method's format, group size and skipped modules") {
  auto q = read({{"quant_method", "awq"}, {"bits", 4}, {"group_size", 128}, {"version", "gemm"}});
  CHECK(q.weights == "awq_4bit");
  CHECK(q.group_size == 128);
  q = read({{"quant_method", "gptq"}, {"bits", 4}, {"group_size", -1}, {"desc_act", false}});
  CHECK(q.weights == "gptq_4bit");
  CHECK(q.group_size == 0);  // one group a channel
  CHECK(read({{"quant_method", "gptq"}, {"bits", 8}, {"group_size", 128}}).weights == "int8");
  q = read({{"quant_method", "bitsandbytes"},
            {"load_in_4bit", true},
            {"bnb_4bit_quant_type", "nf4"},
            {"bnb_4bit_use_double_quant", true},
            {"llm_int8_skip_modules", {"lm_head"}}});
  CHECK(q.weights == "nf4_double_quant");
  CHECK(q.unconverted == std::vector<std::string>{"lm_head"});
  CHECK(read({{"quant_method", "bitsandbytes"}, {"load_in_8bit", true}}).weights == "int8");
  CHECK(read({{"quant_method", "fp8"}, {"weight_block_size", {128, 128}}}).weights == "fp8");
  q = read({{"quant_method", "compressed-tensors"},
            {"ignore", {"lm_head"}},
            {"config_groups",
             {{"group_0",
               {{"targets", {"Linear"}},
                {"weights", {{"num_bits", 4}, {"type", "int"}, {"group_size", 128}}}}}}}});
  CHECK(q.weights == "gptq_4bit");
  CHECK(q.group_size == 128);
  q = read({{"quant_method", "compressed-tensors"},
            {"config_groups",
             {{"group_0",
               {{"weights", {{"num_bits", 8}, {"type", "float"}, {"strategy", "tensor"}}}}}}}});
  CHECK(q.weights == "fp8");
  CHECK(q.fp8_per_tensor);
  q = read({{"quant_method", "mxfp4"},
            {"modules_to_not_convert", {"model.layers.*.self_attn", "lm_head"}}});
  CHECK(q.weights == "mxfp4");
  CHECK(q.unconverted.size() == 2);
}

TEST_CASE("quantization_config: what gpumem cannot read is a coded error naming the field") {
  for (const json& bad : {json{{"quant_method", "hqq"}}, json{{"quant_method", "awq"}, {"bits", 3}},
                          json{{"bits", 4}}, json("awq")}) {
    auto spec = parse_model_config(qwen_7b(bad), {}, "model.config");
    REQUIRE_FALSE(spec.ok());
    CHECK(spec.failure().field.rfind("model.config.quantization_config", 0) == 0);
  }
}

// An estimate of the quantised Qwen on one RTX 4090 with `workload`.
json estimate(const json& quantization, const json& workload) {
  const json request = {{"command", "estimate"},
                        {"model", {{"config", qwen_7b(quantization)}}},
                        {"cluster", {{"gpu", "rtx-4090"}}},
                        {"workload", workload}};
  return json::parse(handle_request(request.dump()));
}

json serve(const json& quantization, const json& extra = json::object()) {
  json workload = {{"phase", "inference"}, {"seq_len", 1024}, {"new_tokens", 128}};
  workload.update(extra);
  return estimate(quantization, workload);
}

TEST_CASE("a quantised checkpoint serves as it is stored; a contradicting format is refused") {
  const json awq = {{"quant_method", "awq"}, {"bits", 4}, {"group_size", 128}};
  const json as_stored = serve(awq);
  REQUIRE(as_stored.at("ok") == true);
  // The same as stating the format, less than the 16-bit model.
  CHECK(as_stored.at("result").at("peak_bytes") ==
        serve(json(), {{"weights", "awq_4bit"}}).at("result").at("peak_bytes"));
  CHECK(as_stored.at("result").at("peak_bytes") < serve(json()).at("result").at("peak_bytes"));
  const json contradicted = serve(awq, {{"weights", "bf16"}});
  CHECK(contradicted.at("error").at("field") == "workload.weights");
  // Modules the checkpoint leaves unquantised stay 16-bit: more memory.
  json skipping = awq;
  skipping["modules_to_not_convert"] = {"mlp"};
  CHECK(serve(skipping).at("result").at("peak_bytes") > as_stored.at("result").at("peak_bytes"));
  // MXFP4 may also run dequantised to 16 bits (transformers' Mxfp4Config(dequantize=True)).
  CHECK(serve({{"quant_method", "mxfp4"}}, {{"weights", "bf16"}}).at("ok") == true);
  CHECK(serve({{"quant_method", "fp8"}}, {{"weights", "bf16"}}).at("ok") == true);
  CHECK(serve({{"quant_method", "fp8"}}, {{"weights", "awq_4bit"}}).at("error").at("field") ==
        "workload.weights");
}

TEST_CASE("training over a quantised checkpoint: LoRA on a bitsandbytes base, else refused") {
  auto train = [](const json& quantization, const std::string& finetune,
                  const json& extra = json::object()) {
    json workload = {{"finetune", finetune}, {"seq_len", 512}, {"micro_batch", 1}};
    workload.update(extra);
    return estimate(quantization, workload);
  };
  const json nf4 = {
      {"quant_method", "bitsandbytes"}, {"load_in_4bit", true}, {"bnb_4bit_quant_type", "nf4"}};
  const json qlora = train(nf4, "lora");
  REQUIRE(qlora.at("ok") == true);
  // As QLoRA over the 16-bit model's config with weights nf4.
  CHECK(qlora.at("result").at("peak_bytes") ==
        train(json(), "lora", {{"weights", "nf4"}}).at("result").at("peak_bytes"));
  CHECK(train(nf4, "lora", {{"weights", "bf16"}}).at("error").at("field") == "workload.weights");
  CHECK(train(nf4, "full").at("error").at("field") == "workload.finetune");
  CHECK(train({{"quant_method", "awq"}, {"bits", 4}}, "lora").at("error").at("field") == "model");
  // FP8 and MXFP4 checkpoints train dequantised to 16 bits: as the 16-bit model.
  CHECK(train({{"quant_method", "fp8"}}, "full").at("result").at("peak_bytes") ==
        train(json(), "full").at("result").at("peak_bytes"));
}

}  // namespace
}  // namespace gpumem
