// The JSON API: commands, the response envelope, and a coded error for every kind of bad input.

#include <doctest/doctest.h>

#include "gpumem/api/json_api.hpp"
#include "gpumem/model/config_parser.hpp"
#include "gpumem/training/training_step.hpp"
#include "test_files.hpp"

namespace gpumem {
namespace {

using nlohmann::json;
using test::call;

json params_request(const json& model) {
  return {{"api_version", 1}, {"command", "params"}, {"model", model}};
}

// A detailed estimate of Llama-3.2-1B on one H100 for `workload`.
json estimate_llama_1b(const json& workload) {
  return call({{"command", "estimate"},
               {"model", "meta-llama/Llama-3.2-1B"},
               {"cluster", {{"gpu", "h100-sxm"}}},
               {"workload", workload}});
}

void check_error(const json& response, const std::string& code, const std::string& field) {
  REQUIRE(response.is_object());
  CHECK(response.at("api_version") == 1);
  CHECK(response.at("ok") == false);
  CHECK(response.at("error").at("code") == code);
  CHECK(response.at("error").at("field") == field);
  CHECK_FALSE(response.at("error").at("message").get<std::string>().empty());
}

TEST_CASE("params for a preset: Llama-2-7b has 6,738,415,616 parameters") {
  json r = call(params_request("meta-llama/Llama-2-7b-hf"));
  REQUIRE(r.at("ok") == true);
  CHECK(r.at("command") == "params");
  const json& result = r.at("result");
  CHECK(result.at("total_params") == 6738415616ULL);
  CHECK(result.at("active_params") == 6738415616ULL);
  CHECK(result.at("groups").at("embedding").at("token") == 32000ULL * 4096);
  CHECK(result.at("groups").at("lm_head") == 32000ULL * 4096);
  CHECK(result.at("model").at("id") == "meta-llama/Llama-2-7b-hf");
  CHECK(result.at("model").at("num_layers") == 32);
  CHECK(result.at("blocks").size() == 1);
  CHECK(result.at("blocks")[0].at("count") == 32);
  CHECK(r.at("warnings").empty());
}

TEST_CASE("an error quoting a long multi-byte value is still valid JSON") {
  // The message cuts the quoted value after 37 characters: never inside a UTF-8 character.
  std::string value = "a";
  for (int i = 0; i < 30; ++i) value += "\u00e9";
  const json r = test::call({{"command", "params"},
                             {"model",
                              {{"config",
                                {{"model_type", "llama"},
                                 {"hidden_size", value},
                                 {"intermediate_size", 64},
                                 {"num_hidden_layers", 1},
                                 {"num_attention_heads", 1},
                                 {"vocab_size", 10}}}}}});
  REQUIRE(r.is_object());
  CHECK(r.at("ok") == false);
  CHECK(r.at("error").at("field").get<std::string>().find("hidden_size") != std::string::npos);
}

TEST_CASE("a static cache holds the prompt and all but the last new token") {
  // transformers' generate allocates prompt + new tokens - 1 positions (1,151 for 1,024 + 128).
  const auto with_cache = [](std::uint64_t tokens) {
    return test::call({{"command", "estimate"},
                       {"model", "meta-llama/Llama-3.2-1B"},
                       {"cluster", {{"gpu", "h100-sxm"}}},
                       {"workload",
                        {{"phase", "inference"},
                         {"micro_batch", 1},
                         {"seq_len", 1024},
                         {"new_tokens", 128},
                         {"kv_cache", {{"kind", "static"}, {"tokens", tokens}}}}}});
  };
  CHECK(with_cache(1151).at("ok") == true);
  const json refused = with_cache(1150);
  CHECK(refused.at("ok") == false);
  CHECK(refused.at("error").at("field") == "workload.kv_cache.tokens");
  // 0 is not a length (leave the field out for the default).
  CHECK(with_cache(0).at("error").at("field") == "workload.kv_cache.tokens");
}

TEST_CASE("workload.software.transformers: generate's release, checked and said") {
  const auto generating = [](const json& extra) {
    json workload = {
        {"phase", "inference"}, {"micro_batch", 4}, {"seq_len", 2048}, {"new_tokens", 64}};
    workload.update(extra);
    return call({{"command", "estimate"},
                 {"model", "meta-llama/Llama-3.2-1B"},
                 {"cluster", {{"gpu", "h100-sxm"}}},
                 {"workload", workload}});
  };
  const json old = generating({{"software", {{"transformers", "4.38.2"}}}});
  REQUIRE(old.at("ok") == true);
  bool said = false;
  for (const auto& n : old.at("result").at("notes"))
    said = said || n.get<std::string>().rfind("transformers 4.38: ", 0) == 0;
  CHECK(said);
  CHECK(old.at("result").at("peak_bytes") >
        generating(json::object()).at("result").at("peak_bytes"));
  // Before 4.36 an unstated attention is eager, transformers' default then.
  CHECK(generating({{"software", {{"transformers", "4.33.0"}}}}).at("result").at("peak_bytes") ==
        generating({{"software", {{"transformers", "4.33.0"}}}, {"attention", "eager"}})
            .at("result")
            .at("peak_bytes"));
  check_error(generating({{"software", {{"transformers", "four"}}}}), "request.invalid_value",
              "workload.software.transformers");
  check_error(generating({{"software", {{"torch", "2.1.0"}}}}), "request.unknown_field",
              "workload.software.torch");
  check_error(generating({{"software", 4}}), "request.invalid_type", "workload.software");
  check_error(generating({{"framework", "vllm"}, {"software", {{"transformers", "4.40.0"}}}}),
              "request.invalid_value", "workload.software.transformers");
}

TEST_CASE("a GPTQ checkpoint's desc_act is read: act-order's exllama buffer") {
  json config = test::read_presets().at("TheBloke/Llama-2-7B-GPTQ").at("config");
  const auto served = [&](bool act_order) {
    config["quantization_config"]["desc_act"] = act_order;
    const json r = call({{"command", "estimate"},
                         {"model", {{"config", config}}},
                         {"cluster", {{"gpu", "rtx-4090"}}},
                         {"workload",
                          {{"phase", "inference"},
                           {"micro_batch", 1},
                           {"seq_len", 512},
                           {"new_tokens", 16},
                           {"software", {{"transformers", "4.40.0"}}}}}});
    REQUIRE(r.at("ok") == true);
    return r.at("result");
  };
  const json without = served(false);
  const json with = served(true);
  CHECK(with.at("peak_bytes").get<std::uint64_t>() >=
        without.at("peak_bytes").get<std::uint64_t>() + 2048ULL * 11008 * 2);
  bool said = false;
  for (const auto& n : with.at("notes"))
    said = said || n.get<std::string>().find("desc_act") != std::string::npos;
  CHECK(said);
}

TEST_CASE("params accepts {preset} and {config} forms alike") {
  const json reference = test::read_presets();
  json by_id = call(params_request({{"preset", "gpt2"}}));
  json by_config = call(params_request({{"config", reference.at("gpt2").at("config")}}));
  REQUIRE(by_id.at("ok") == true);
  REQUIRE(by_config.at("ok") == true);
  CHECK(by_id.at("result").at("total_params") == 124439808);
  CHECK(by_config.at("result").at("total_params") == 124439808);
}

TEST_CASE("BERT task heads are chosen in the request") {
  json r = call(params_request({{"preset", "bert-large-uncased"},
                                {"task_head", "sequence_classification"},
                                {"num_labels", 2}}));
  REQUIRE(r.at("ok") == true);
  CHECK(r.at("result").at("total_params") == 335143938);
  r = call(params_request({{"preset", "bert-large-uncased"}, {"task_head", "poolerless"}}));
  check_error(r, "request.invalid_value", "model.task_head");
}

TEST_CASE("models lists every preset with computed counts") {
  json r = call({{"api_version", 1}, {"command", "models"}});
  REQUIRE(r.at("ok") == true);
  const json& models = r.at("result").at("models");
  CHECK(models.size() == test::read_presets().size());  // every file of presets/models/index.json
  for (const auto& m : models) {
    CHECK(m.at("total_params").get<std::uint64_t>() > 0);
    if (!m.at("published_params").is_null())
      CHECK(m.at("published_params") == m.at("total_params"));
  }
}

TEST_CASE("gpus returns the preset table") {
  json r = call({{"api_version", 1}, {"command", "gpus"}});
  REQUIRE(r.at("ok") == true);
  CHECK(r.at("result").at("gpus").size() >= 20);
  for (const auto& g : r.at("result").at("gpus")) CHECK_FALSE(g.contains("sources"));
}

TEST_CASE("sources: where every preset's config.json and every GPU's figures come from") {
  json r = call({{"api_version", 1}, {"command", "sources"}});
  REQUIRE(r.at("ok") == true);
  const json& models = r.at("result").at("models");
  CHECK(models.size() == test::read_presets().size());
  for (const auto& m : models) {
    CAPTURE(m.at("id"));
    REQUIRE(m.at("source").is_array());
    CHECK(m.at("source").at(0).get<std::string>().size() > 10);
  }
  const json gpus = call({{"api_version", 1}, {"command", "gpus"}}).at("result").at("gpus");
  REQUIRE(r.at("result").at("gpus").size() == gpus.size());
  for (std::size_t i = 0; i < gpus.size(); ++i) {
    const json& sourced = r.at("result").at("gpus").at(i);
    CHECK(sourced.at("id") == gpus.at(i).at("id"));
    for (const char* figure : {"memory_bytes", "flops", "memory_bandwidth", "link"})
      CHECK(sourced.at("sources").at(figure).get<std::string>().size() > 10);
  }
  // The estimates name the preset; its provenance is this command's.
  const json params = call(params_request("meta-llama/Llama-2-7b-hf")).at("result").at("model");
  CHECK(params.at("id") == "meta-llama/Llama-2-7b-hf");
  CHECK_FALSE(params.contains("source"));
  check_error(call({{"api_version", 1}, {"command", "sources"}, {"model", "gpt2"}}),
              "request.unknown_field", "model");
}

TEST_CASE("malformed JSON says where") {
  json r = json::parse(handle_request("{\"command\": \"params\","), nullptr, false);
  check_error(r, "json.parse_error", "");
  CHECK(r.at("error").at("message").get<std::string>().find("line 1") != std::string::npos);
  check_error(json::parse(handle_request(""), nullptr, false), "json.parse_error", "");
}

TEST_CASE("envelope errors") {
  check_error(call(json::array()), "request.invalid_type", "request");
  check_error(call({{"api_version", 2}, {"command", "params"}}), "request.unsupported_api_version",
              "api_version");
  check_error(call({{"api_version", 1}}), "request.missing_field", "command");
  check_error(call({{"api_version", 1}, {"command", "train"}}), "request.unknown_command",
              "command");
  check_error(call({{"api_version", 1}, {"command", "params"}}), "request.missing_field", "model");
  check_error(call({{"api_version", 1}, {"command", "params"}, {"model", "gpt2"}, {"modle", 1}}),
              "request.unknown_field", "modle");
  check_error(call(params_request(42)), "request.invalid_type", "model");
  check_error(call(params_request({{"config", {{"model_type", "llama"}}}, {"nmae", "x"}})),
              "request.unknown_field", "model.nmae");
  // A name that is not a string is refused, not thrown on; a preset takes no name. null means
  // absent (docs/api.md): the config is read, and this one lacks its keys.
  for (const json& name : {json(3), json::array(), json::object()}) {
    check_error(call(params_request({{"config", {{"model_type", "llama"}}}, {"name", name}})),
                "request.invalid_type", "model.name");
  }
  check_error(call(params_request({{"config", {{"model_type", "llama"}}}, {"name", nullptr}})),
              "config.missing_keys", "model.config");
  check_error(call(params_request({{"preset", "gpt2"}, {"label", "x"}})), "request.unknown_field",
              "model.label");
}

TEST_CASE("sizes past 2^53 bytes are refused in both modes; plans search below them") {
  const json workload = {{"micro_batch", 1048576}, {"seq_len", 16777216}};
  for (const char* mode : {"detailed", "llmem"}) {
    CAPTURE(mode);
    const json r = call({{"command", "estimate"},
                         {"mode", mode},
                         {"model", "meta-llama/Llama-3.1-8B"},
                         {"cluster", {{"gpu", "h100-sxm"}}},
                         {"workload", workload}});
    check_error(r, "request.too_large", "workload.micro_batch");
  }
  const json plan = call({{"command", "plan"},
                          {"mode", "llmem"},
                          {"model", "meta-llama/Llama-3.2-1B"},
                          {"cluster", {{"gpu", "h100-sxm"}, {"gpus", 2}}},
                          {"workload", {{"seq_len", 16777216}}}});
  REQUIRE(plan.at("ok") == true);
}

TEST_CASE("an empty LoRA target list, an unknown GPU generation and a 0 FLOP/s GPU are refused") {
  const auto estimate = [](const json& cluster, const json& workload) {
    return call({{"command", "estimate"},
                 {"model", "meta-llama/Llama-3.2-1B"},
                 {"cluster", cluster},
                 {"workload", workload}});
  };
  const json h100 = {{"gpu", "h100-sxm"}};
  const json one = {{"micro_batch", 1}};
  json lora = {{"micro_batch", 1}, {"finetune", "lora"}, {"lora", {{"targets", json::array()}}}};
  check_error(estimate(h100, lora), "request.invalid_value", "workload.lora.targets");
  lora["lora"]["targets"] = {"qproj"};
  check_error(estimate(h100, lora), "request.invalid_value", "workload.lora.targets");
  check_error(estimate({{"gpu", {{"preset", "h100-sxm"}, {"architecture", "hoper"}}}}, one),
              "request.invalid_value", "cluster.gpu.architecture");
  check_error(estimate({{"gpu", {{"preset", "h100-sxm"}, {"bf16_dense_flops", 1e-300}}}}, one),
              "request.invalid_value", "cluster.gpu.bf16_dense_flops");
  CHECK(estimate({{"gpu", {{"preset", "h100-sxm"}, {"architecture", "ampere"}}}}, one).at("ok") ==
        true);
  // 0 states a GPU without bf16 tensor cores.
  CHECK(estimate({{"gpu", {{"preset", "h100-sxm"}, {"bf16_dense_flops", 0}}}}, one).at("ok") ==
        true);
  // PEFT's string form of all-linear.
  lora["lora"]["targets"] = "all-linear";
  CHECK(estimate(h100, lora).at("ok") == true);
  // A plan answers a target error as the estimate does, not as "nothing fits".
  lora["lora"]["targets"] = {"qproj"};
  check_error(call({{"command", "plan"},
                    {"model", "meta-llama/Llama-3.2-1B"},
                    {"cluster", {{"gpu", "h100-sxm"}, {"gpus", 2}}},
                    {"workload", lora}}),
              "request.invalid_value", "workload.lora.targets");
  // A tied LM head named lm_head is adapted: A [8, 768] and B [50257, 8] on GPT-2.
  const json gpt2 = call({{"command", "estimate"},
                          {"model", "gpt2"},
                          {"cluster", h100},
                          {"workload",
                           {{"micro_batch", 1},
                            {"seq_len", 128},
                            {"finetune", "lora"},
                            {"lora", {{"r", 8}, {"targets", {"lm_head"}}}}}}});
  REQUIRE(gpt2.at("ok") == true);
  CHECK(gpt2.at("result").at("trainable_params") == 8 * (768 + 50257));
}

TEST_CASE("IA3 through the API: PEFT's default targets, its own target list, misplaced objects") {
  // Llama 3.2 1B: 16 blocks of k and v outputs (512 each, 8 KV heads of 64) and down_proj's
  // 8192 inputs.
  const json ia3 = estimate_llama_1b({{"micro_batch", 1}, {"finetune", "ia3"}});
  REQUIRE(ia3.at("ok") == true);
  CHECK(ia3.at("result").at("trainable_params") == 16 * (512 + 512 + 8192));
  const json only_v = estimate_llama_1b(
      {{"micro_batch", 1}, {"finetune", "ia3"}, {"ia3", {{"targets", {"v_proj"}}}}});
  REQUIRE(only_v.at("ok") == true);
  CHECK(only_v.at("result").at("trainable_params") == 16 * 512);
  check_error(estimate_llama_1b(
                  {{"micro_batch", 1}, {"finetune", "ia3"}, {"ia3", {{"targets", json::array()}}}}),
              "request.invalid_value", "workload.ia3.targets");
  // An adapter's settings under another fine-tuning kind are refused, not ignored.
  check_error(estimate_llama_1b({{"micro_batch", 1}, {"finetune", "full"}, {"lora", {{"r", 8}}}}),
              "request.invalid_value", "workload.lora");
  check_error(estimate_llama_1b(
                  {{"micro_batch", 1}, {"finetune", "lora"}, {"ia3", {{"targets", {"k_proj"}}}}}),
              "request.invalid_value", "workload.ia3");
}

TEST_CASE("prompt tuning's virtual tokens take learned positions too, in estimates and plans") {
  for (const char* command : {"estimate", "plan"}) {
    const auto gpt2 = [&](std::uint64_t virtual_tokens) {
      return call({{"command", command},
                   {"model", "gpt2"},
                   {"cluster", {{"gpu", "h100-sxm"}}},
                   {"workload",
                    {{"micro_batch", 1},
                     {"seq_len", 1000},
                     {"finetune", "prompt_tuning"},
                     {"prompt_tuning", {{"num_virtual_tokens", virtual_tokens}}}}}});
    };
    CHECK(gpt2(24).at("ok") == true);  // 1,024: GPT-2's n_positions
    check_error(gpt2(25), "request.invalid_value", "workload.prompt_tuning.num_virtual_tokens");
  }
}

TEST_CASE("AdamW's implementation is a choice for AdamW only") {
  const json fused = estimate_llama_1b({{"micro_batch", 1}, {"optimizer_impl", "fused"}});
  const json foreach = estimate_llama_1b({{"micro_batch", 1}, {"optimizer_impl", "foreach"}});
  REQUIRE(fused.at("ok") == true);
  REQUIRE(foreach.at("ok") == true);
  CHECK(fused.at("result").at("peak_bytes") < foreach.at("result").at("peak_bytes"));
  check_error(
      estimate_llama_1b({{"micro_batch", 1}, {"optimizer", "sgd"}, {"optimizer_impl", "fused"}}),
      "request.invalid_value", "workload.optimizer_impl");
  check_error(estimate_llama_1b({{"micro_batch", 1}, {"optimizer_impl", "apex"}}),
              "request.invalid_value", "workload.optimizer_impl");
}

TEST_CASE("the loss and the loop's outputs are choices of transformers runs") {
  // Pure bf16: the plain loss stays in bf16 where the model's upcasts to fp32.
  const json model = estimate_llama_1b({{"micro_batch", 4}, {"compute", "pure_bf16"}});
  const json plain = estimate_llama_1b(
      {{"micro_batch", 4}, {"compute", "pure_bf16"}, {"loss", "plain_cross_entropy"}});
  REQUIRE(model.at("ok") == true);
  REQUIRE(plain.at("ok") == true);
  CHECK(plain.at("result").at("peak_bytes") < model.at("result").at("peak_bytes"));
  check_error(estimate_llama_1b({{"micro_batch", 1}, {"loss", "focal"}}), "request.invalid_value",
              "workload.loss");
  check_error(estimate_llama_1b({{"micro_batch", 1},
                                 {"finetune", "lora"},
                                 {"framework", "litgpt"},
                                 {"loss", "plain_cross_entropy"}}),
              "request.invalid_value", "workload.loss");
  // A loop that holds its outputs keeps the bf16 logits beside the loss's gradients.
  const json kept =
      estimate_llama_1b({{"micro_batch", 4}, {"compute", "pure_bf16"}, {"keep_outputs", true}});
  REQUIRE(kept.at("ok") == true);
  CHECK(kept.at("result").at("peak_bytes") > model.at("result").at("peak_bytes"));
  check_error(estimate_llama_1b({{"micro_batch", 1},
                                 {"finetune", "lora"},
                                 {"framework", "torchtune"},
                                 {"keep_outputs", true}}),
              "request.invalid_value", "workload.keep_outputs");
  check_error(estimate_llama_1b({{"micro_batch", 1}, {"keep_outputs", "yes"}}),
              "request.invalid_value", "workload.keep_outputs");
}

TEST_CASE("workload.lora.dropout: a probability, PEFT's 0 by default, refused by unsloth") {
  const json none = estimate_llama_1b({{"micro_batch", 1}, {"finetune", "lora"}});
  const json dropped =
      estimate_llama_1b({{"micro_batch", 1}, {"finetune", "lora"}, {"lora", {{"dropout", 0.1}}}});
  REQUIRE(none.at("ok") == true);
  REQUIRE(dropped.at("ok") == true);
  CHECK(dropped.at("result").at("peak_bytes") > none.at("result").at("peak_bytes"));
  check_error(
      estimate_llama_1b({{"micro_batch", 1}, {"finetune", "lora"}, {"lora", {{"dropout", 1.5}}}}),
      "request.invalid_value", "workload.lora.dropout");
  check_error(estimate_llama_1b({{"micro_batch", 1},
                                 {"finetune", "lora"},
                                 {"framework", "unsloth"},
                                 {"lora", {{"targets", "all-linear"}, {"dropout", 0.05}}}}),
              "request.invalid_value", "workload.lora.dropout");
}

TEST_CASE("workload.software: library releases, read and checked, with what they change") {
  // torch 1.x has no SDPA: the attention defaults to eager there, and says so.
  const json torch1 = estimate_llama_1b({{"micro_batch", 1}, {"software", {{"torch", "1.13.1"}}}});
  REQUIRE(torch1.at("ok") == true);
  CHECK(torch1.at("result").at("workload").at("attention") == "eager");
  CHECK(torch1.at("result").at("notes").size() == 1);
  const json qlora = estimate_llama_1b({{"micro_batch", 1},
                                        {"finetune", "lora"},
                                        {"weights", "nf4"},
                                        {"software", {{"bitsandbytes", "0.45.2"}}}});
  const json older =
      estimate_llama_1b({{"micro_batch", 1}, {"finetune", "lora"}, {"weights", "nf4"}});
  REQUIRE(qlora.at("ok") == true);
  REQUIRE(older.at("ok") == true);
  CHECK(qlora.at("result").at("peak_bytes") < older.at("result").at("peak_bytes"));
  check_error(estimate_llama_1b({{"micro_batch", 1}, {"software", "2.4"}}), "request.invalid_type",
              "workload.software");
  check_error(estimate_llama_1b({{"micro_batch", 1}, {"software", {{"jax", "0.4"}}}}),
              "request.unknown_field", "workload.software.jax");
  check_error(estimate_llama_1b({{"micro_batch", 1}, {"software", {{"peft", "latest"}}}}),
              "request.invalid_value", "workload.software.peft");
  check_error(estimate_llama_1b({{"micro_batch", 1}, {"software", {{"torch", 2}}}}),
              "request.invalid_value", "workload.software.torch");
  check_error(estimate_llama_1b(
                  {{"micro_batch", 1}, {"attention", "sdpa"}, {"software", {{"torch", "1.12"}}}}),
              "request.invalid_value", "workload.attention");
}

TEST_CASE("framework torchtitan: its per-op selective checkpoint from grad_ckpt \"selective\"") {
  const auto run = [](const json& ckpt) {
    // Enough tokens that the activations, not the optimizer step, make the peak.
    return estimate_llama_1b(
        {{"micro_batch", 4}, {"seq_len", 4096}, {"framework", "torchtitan"}, {"grad_ckpt", ckpt}});
  };
  const json none = run(false);
  const json op = run("selective");
  const json full = run(true);
  REQUIRE(none.at("ok") == true);
  REQUIRE(op.at("ok") == true);
  REQUIRE(full.at("ok") == true);
  CHECK(full.at("result").at("peak_bytes") < op.at("result").at("peak_bytes"));
  CHECK(op.at("result").at("peak_bytes") < none.at("result").at("peak_bytes"));
  check_error(
      estimate_llama_1b({{"micro_batch", 1}, {"framework", "torchtitan"}, {"finetune", "lora"}}),
      "request.invalid_value", "workload.finetune");
}

TEST_CASE("JSON nested deeper than 64 levels is refused before it is parsed") {
  // 10,000 levels would overflow the stack when the request's values are copied.
  const std::string deep = std::string(10000, '[') + std::string(10000, ']');
  const std::string request =
      R"({"command": "params", "model": {"config": {"model_type": "gpt2", "x": )" + deep + "}}}";
  check_error(json::parse(handle_request(request), nullptr, false), "request.too_deep", "");
  CHECK(json_nesting_depth(request) == 10003);
  // Brackets inside strings do not count, escaped quotes included.
  CHECK(json_nesting_depth(R"({"a": "[[[\"{{{", "b": [{}]})") == 3);
  const std::string fine = std::string(60, '[') + std::string(60, ']');
  CHECK(json::parse(handle_request(R"({"command": "version", "x": )" + fine + "}"), nullptr, false)
            .at("error")
            .at("code") == "request.unknown_field");
}

TEST_CASE("model errors carry the config's codes") {
  check_error(call(params_request("meta-llama/Llama-9-1b")), "model.unknown_preset", "model");
  // An alias (an Instruct variant of the same architecture) answers as its preset, named as asked.
  const json alias = call(params_request("meta-llama/Llama-3.1-8B-Instruct"));
  REQUIRE(alias.at("ok") == true);
  CHECK(alias.at("result").at("model").at("id") == "meta-llama/Llama-3.1-8B-Instruct");
  CHECK(alias.at("result").at("model").at("architecture_of") == "meta-llama/Llama-3.1-8B");
  CHECK(alias.at("result").at("total_params") ==
        call(params_request("meta-llama/Llama-3.1-8B")).at("result").at("total_params"));
  check_error(call(params_request({{"config", {{"model_type", "mamba"}}}})),
              "config.unsupported_model_type", "model.config.model_type");
  check_error(call(params_request({{"config", {{"model_type", "gpt2"}, {"n_embd", -1}}}})),
              "config.missing_keys", "model.config");
  check_error(call(params_request({{"config",
                                    {{"model_type", "gpt2"},
                                     {"n_embd", -1},
                                     {"n_layer", 12},
                                     {"n_head", 12},
                                     {"vocab_size", 50257}}}})),
              "config.invalid_value", "model.config.n_embd");
  check_error(call(params_request({{"config",
                                    {{"model_type", "gpt2"},
                                     {"n_embd", 768},
                                     {"n_layer", 12},
                                     {"n_head", 7},
                                     {"vocab_size", 50257}}}})),
              "config.inconsistent_heads", "model.config.n_head");
  check_error(call(params_request({{"config", "not an object"}})), "config.not_an_object",
              "model.config");
}

TEST_CASE("version lists the commands and model types") {
  json r = call({{"command", "version"}});
  REQUIRE(r.at("ok") == true);
  CHECK(r.at("result").at("api_version") == api_version);
  CHECK(r.at("result").at("model_types").size() == 36);
}

}  // namespace
}  // namespace gpumem

namespace gpumem {
namespace {

TEST_CASE(
    "full fine-tuning weights: a string matching the precision, or an error naming the field") {
  auto request = [](const json& weights, const char* compute) {
    return json{
        {"api_version", 1},
        {"command", "estimate"},
        {"model", {{"preset", "gpt2"}}},
        {"cluster", {{"gpu", "h100-sxm"}}},
        {"workload",
         {{"micro_batch", 1}, {"seq_len", 64}, {"compute", compute}, {"weights", weights}}}};
  };
  check_error(call(request(5, "amp_bf16")), "request.invalid_value", "workload.weights");
  check_error(call(request("bf16", "fp32")), "request.invalid_value", "workload.weights");
  check_error(call(request("fp32", "pure_bf16")), "request.invalid_value", "workload.weights");
  CHECK(call(request(nullptr, "fp32")).at("ok") == true);  // null: not stated
  CHECK(call(request("fp32", "amp_bf16")).at("ok") == true);
  CHECK(call(request("bf16", "amp_bf16")).at("ok") == true);
}

}  // namespace
}  // namespace gpumem

namespace gpumem {
namespace {

TEST_CASE("3D parallelism: pipeline stages of tensor-parallel GPUs, replicated with ZeRO-1") {
  auto request = [](const json& parallel) {
    return json{{"api_version", 1},
                {"command", "estimate"},
                {"model", {{"preset", "meta-llama/Llama-3.1-8B"}}},
                {"cluster", {{"gpu", "h100-sxm"}, {"gpus", 16}}},
                {"workload", {{"micro_batch", 1}, {"seq_len", 2048}, {"grad_ckpt", true}}},
                {"parallel", parallel},
                {"metric", "allocated"}};
  };
  const json staged =
      call(request({{"method", "pipeline"}, {"tp", 2}, {"pp", 4}, {"dp_method", "zero1"}}));
  REQUIRE(staged.at("ok") == true);
  const json& r = staged.at("result");
  CHECK(r.at("parallel").at("dp") == 2);
  CHECK(r.at("parallel").at("tp") == 2);
  CHECK(r.at("parallel").at("pp") == 4);
  REQUIRE(r.at("per_gpu").size() == 4);
  // Stage s holds ranks 4s..4s+3 (tensor, then data, then pipeline).
  CHECK(r.at("per_gpu").at(1).at("ranks") == json{{"first", 4}, {"last", 7}});
  // ZeRO-1 over the 2 replicas halves each stage's optimizer states against DDP's.
  const json ddp = call(request({{"method", "pipeline"}, {"tp", 2}, {"pp", 4}}));
  REQUIRE(ddp.at("ok") == true);
  const auto states = [](const json& response) {
    return response.at("result").at("per_gpu").at(1).at("components").at("optimizer_states");
  };
  CHECK(states(staged).get<double>() ==
        doctest::Approx(states(ddp).get<double>() / 2).epsilon(0.01));
  check_error(call(request({{"method", "pipeline"}, {"pp", 3}})), "parallel.invalid_degree",
              "parallel.pp");
  check_error(call(request({{"method", "pipeline"}, {"pp", 4}, {"dp_method", "zero3"}})),
              "request.invalid_value", "parallel.dp_method");
  check_error(call(request({{"method", "zero1"}, {"pp", 4}})), "request.invalid_value",
              "parallel.pp");
  // tp over all GPUs leaves one stage: not a pipeline.
  check_error(call(request({{"method", "pipeline"}, {"tp", 16}})), "parallel.invalid_degree",
              "parallel.pp");
}

TEST_CASE("kbit_preparation applies to a transformers 4-bit LoRA base") {
  auto request = [](const json& workload) {
    json w = {{"micro_batch", 1}, {"seq_len", 512}, {"finetune", "lora"}};
    w.update(workload);
    return json{{"api_version", 1},
                {"command", "estimate"},
                {"model", {{"preset", "meta-llama/Llama-3.1-8B"}}},
                {"cluster", {{"gpu", "h100-sxm"}}},
                {"workload", w},
                {"metric", "allocated"}};
  };
  const json on = call(request({{"weights", "nf4"}}));
  const json off = call(request({{"weights", "nf4"}, {"kbit_preparation", false}}));
  REQUIRE(on.at("ok") == true);
  REQUIRE(off.at("ok") == true);
  CHECK(on.at("result").at("peak_bytes").get<double>() >
        off.at("result").at("peak_bytes").get<double>());
  check_error(call(request({{"weights", "bf16"}, {"kbit_preparation", true}})),
              "request.invalid_value", "workload.kbit_preparation");
  check_error(
      call(request({{"weights", "nf4"}, {"framework", "litgpt"}, {"kbit_preparation", true}})),
      "request.invalid_value", "workload.kbit_preparation");
  check_error(
      call(request({{"weights", "nf4"}, {"compute", "pure_bf16"}, {"kbit_preparation", true}})),
      "request.invalid_value", "workload.kbit_preparation");
  json sharded = request({{"weights", "nf4"}, {"kbit_preparation", true}});
  sharded["cluster"]["gpus"] = 2;
  sharded["parallel"] = {{"method", "fsdp_full_shard"}};
  check_error(call(sharded), "request.invalid_value", "workload.kbit_preparation");
  sharded["workload"].erase("kbit_preparation");
  CHECK(call(sharded).at("ok") == true);
}

TEST_CASE("grad_ckpt takes true, false or \"selective\", and says so") {
  auto request = [](const json& ckpt) {
    return json{{"api_version", 1},
                {"command", "estimate"},
                {"model", {{"preset", "meta-llama/Llama-3.2-1B"}}},
                {"cluster", {{"gpu", "h100-sxm"}}},
                {"workload", {{"micro_batch", 1}, {"seq_len", 512}, {"grad_ckpt", ckpt}}}};
  };
  const json selective = call(request("selective"));
  REQUIRE(selective.at("ok") == true);
  CHECK(selective.at("result").at("workload").at("grad_ckpt") == "selective");
  check_error(call(request("partial")), "request.invalid_value", "workload.grad_ckpt");
  check_error(call(request(1)), "request.invalid_value", "workload.grad_ckpt");
}

TEST_CASE("context parallelism: states sharded over the data- and context-parallel ranks") {
  auto request = [](const json& parallel, int seq_len) {
    return json{{"api_version", 1},
                {"command", "estimate"},
                {"model", {{"preset", "meta-llama/Llama-3.1-8B"}}},
                {"cluster", {{"gpu", "h100-sxm"}, {"gpus", 16}}},
                {"workload", {{"micro_batch", 1}, {"seq_len", seq_len}, {"grad_ckpt", true}}},
                {"parallel", parallel},
                {"metric", "allocated"}};
  };
  const json cp = call(request({{"method", "zero1"}, {"tp", 2}, {"cp", 4}}, 8192));
  REQUIRE(cp.at("ok") == true);
  const json& r = cp.at("result");
  CHECK(r.at("parallel").at("dp") == 2);
  CHECK(r.at("parallel").at("cp") == 4);
  CHECK(r.at("parallel").at("cp_kind") == "ring");
  // ZeRO-1 shards over dp x cp = 8 ranks, as it does over 8 data-parallel ranks without cp.
  const json dp = call(request({{"method", "zero1"}, {"tp", 2}}, 2048));
  REQUIRE(dp.at("ok") == true);
  const auto states = [](const json& response) {
    return response.at("result").at("per_gpu").at(0).at("components").at("optimizer_states");
  };
  CHECK(states(cp).get<double>() == doctest::Approx(states(dp).get<double>()));
  check_error(call(request({{"method", "zero1"}, {"cp", 3}}, 8193)), "parallel.invalid_degree",
              "parallel.cp");
  check_error(call(request({{"method", "zero1"}, {"cp", 4}}, 8194)), "parallel.invalid_degree",
              "parallel.cp");
  check_error(call(request({{"method", "zero1"}, {"cp", 2}, {"cp_kind", "stripe"}}, 8192)),
              "request.invalid_value", "parallel.cp_kind");
  check_error(call(request({{"method", "tensor_parallel"}, {"cp", 2}}, 8192)),
              "request.invalid_value", "parallel.cp");
  check_error(call(request({{"method", "zero3"}, {"cp", 16}, {"cp_kind", "ulysses"}}, 8192)),
              "parallel.invalid_degree", "parallel.cp");
  check_error(call(request({{"method", "zero1"}, {"cp_kind", "ring"}}, 8192)),
              "request.invalid_value", "parallel.cp_kind");
  check_error(call(request({{"method", "gemini"}, {"cp", 2}}, 8192)), "request.invalid_value",
              "parallel.cp");
  // The ring cuts each sequence into 2 x cp load-balanced chunks.
  check_error(call(request({{"method", "zero1"}, {"cp", 4}}, 8196)), "parallel.invalid_degree",
              "parallel.cp");
  CHECK(call(request({{"method", "zero1"}, {"cp", 4}, {"cp_kind", "ulysses"}}, 8196)).at("ok") ==
        true);
}

}  // namespace
}  // namespace gpumem
