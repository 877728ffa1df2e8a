// How config.json fields are read: defaults, variants and every kind of bad value.

#include "gpumem/model/config_parser.hpp"

#include <doctest/doctest.h>

#include "gpumem/model/param_count.hpp"
#include "test_files.hpp"

namespace gpumem {
namespace {

using nlohmann::json;

json tiny_llama() {
  return {{"model_type", "llama"},  {"hidden_size", 64},           {"intermediate_size", 128},
          {"num_hidden_layers", 2}, {"num_attention_heads", 4},    {"num_key_value_heads", 2},
          {"vocab_size", 100},      {"tie_word_embeddings", false}};
}

result<model_spec> parse(const json& config) {
  return parse_model_config(config, {}, "model.config");
}

TEST_CASE("a tiny Llama counted by hand") {
  auto spec = parse(tiny_llama());
  REQUIRE(spec.ok());
  auto c = count_params(spec.value());
  REQUIRE(c.ok());
  // Per layer: q 64x64, k and v 32x64 (2 kv heads of 16), o 64x64, gate/up/down 3x64x128, 2 norms.
  const std::uint64_t layer = 64 * 64 + 2 * 32 * 64 + 64 * 64 + 3 * 64 * 128 + 2 * 64;
  CHECK(c.value().total == 100 * 64 + 2 * layer + 64 + 100 * 64);
  CHECK(c.value().groups.lm_head == 6400);
  CHECK(c.value().blocks.size() == 1);
  CHECK(c.value().blocks[0].last == 1);
}

TEST_CASE("tied embeddings are counted once") {
  json config = tiny_llama();
  config["tie_word_embeddings"] = true;
  auto spec = parse(config);
  REQUIRE(spec.ok());
  CHECK(count_params(spec.value()).value().groups.lm_head == 0);
}

TEST_CASE("sliding-window layers follow each family's rule") {
  const json reference = test::read_presets();
  auto gemma2 = parse(reference.at("google/gemma-2-9b").at("config"));
  REQUIRE(gemma2.ok());
  CHECK(gemma2.value().layers[0].attention == attention_pattern::sliding);
  CHECK(gemma2.value().layers[0].sliding_window_tokens == 4096);
  CHECK(gemma2.value().layers[1].attention == attention_pattern::global);
  auto mistral = parse(reference.at("mistralai/Mistral-7B-v0.1").at("config"));
  REQUIRE(mistral.ok());
  CHECK(mistral.value().layers[31].sliding_window_tokens == 4096);
  auto neo = parse(reference.at("EleutherAI/gpt-neo-1.3B").at("config"));
  REQUIRE(neo.ok());
  CHECK(neo.value().layers[0].attention == attention_pattern::global);
  CHECK(neo.value().layers[1].sliding_window_tokens == 256);
  auto llama = parse(reference.at("meta-llama/Llama-3.1-8B").at("config"));
  REQUIRE(llama.ok());
  CHECK(llama.value().layers[0].attention == attention_pattern::global);
}

TEST_CASE("DeepSeek-V3 reads MLA and its dense first layers") {
  const json reference = test::read_presets();
  auto spec = parse(reference.at("deepseek-ai/DeepSeek-V3").at("config"));
  REQUIRE(spec.ok());
  CHECK(spec.value().mla);
  CHECK(spec.value().head_dim == 192);
  CHECK(spec.value().v_head_dim == 128);
  CHECK_FALSE(spec.value().layers[2].moe);
  CHECK(spec.value().layers[3].moe);
  CHECK(spec.value().moe.shared_intermediate == 2048);
}

TEST_CASE("unknown model types with the standard keys are read as Llama-like, with a warning") {
  json config = tiny_llama();
  config["model_type"] = "my_new_arch";
  auto spec = parse(config);
  REQUIRE(spec.ok());
  REQUIRE(spec.value().warnings.size() == 1);
  CHECK(spec.value().warnings[0].find("my_new_arch") != std::string::npos);
}

TEST_CASE("unknown model types without them name the missing keys") {
  auto spec = parse({{"model_type", "mamba"}, {"hidden_size", 768}});
  REQUIRE_FALSE(spec.ok());
  CHECK(spec.failure().code == "config.unsupported_model_type");
  CHECK(spec.failure().message.find("num_hidden_layers") != std::string::npos);
  CHECK(spec.failure().message.find("vocab_size") != std::string::npos);
  CHECK(spec.failure().message.find("hidden_size,") == std::string::npos);
}

TEST_CASE("every missing required key of a known type is named at once") {
  auto spec = parse({{"model_type", "opt"}, {"hidden_size", 768}});
  REQUIRE_FALSE(spec.ok());
  CHECK(spec.failure().code == "config.missing_keys");
  for (const char* key : {"vocab_size", "ffn_dim", "num_hidden_layers", "num_attention_heads"}) {
    CHECK(spec.failure().message.find(key) != std::string::npos);
  }
}

TEST_CASE("bad sizes give config.invalid_value naming the field and the range") {
  struct bad_value {
    json value;
    const char* shown;
  };
  for (const auto& bad :
       {bad_value{0, "got 0"}, bad_value{-5, "got -5"}, bad_value{4096.5, "got 4096.5"},
        bad_value{"4096", "got \"4096\""}, bad_value{1ULL << 40, "got 1099511627776"},
        bad_value{true, "got true"}}) {
    json config = tiny_llama();
    config["hidden_size"] = bad.value;
    auto spec = parse(config);
    CAPTURE(bad.shown);
    REQUIRE_FALSE(spec.ok());
    CHECK(spec.failure().code == "config.invalid_value");
    CHECK(spec.failure().field == "model.config.hidden_size");
    CHECK(spec.failure().message.find("1..1048576") != std::string::npos);
    CHECK(spec.failure().message.find(bad.shown) != std::string::npos);
  }
}

TEST_CASE("a whole-valued float is accepted as an integer") {
  json config = tiny_llama();
  config["hidden_size"] = 64.0;
  CHECK(parse(config).ok());
}

TEST_CASE("inconsistent heads are refused") {
  json config = tiny_llama();
  config["num_attention_heads"] = 5;  // 64 is not divisible by 5
  auto spec = parse(config);
  REQUIRE_FALSE(spec.ok());
  CHECK(spec.failure().code == "config.inconsistent_heads");
  CHECK(spec.failure().field == "model.config.num_attention_heads");

  config = tiny_llama();
  config["num_key_value_heads"] = 3;  // does not divide 4 heads
  spec = parse(config);
  REQUIRE_FALSE(spec.ok());
  CHECK(spec.failure().code == "config.inconsistent_heads");
  CHECK(spec.failure().field == "model.config.num_key_value_heads");
}

TEST_CASE("an explicit head_dim need not divide the hidden size (Gemma)") {
  json config = tiny_llama();
  config["num_attention_heads"] = 5;
  config["num_key_value_heads"] = 5;
  config["head_dim"] = 16;
  CHECK(parse(config).ok());
}

TEST_CASE("models over 2^53 parameters are refused, not wrapped") {
  json config = tiny_llama();
  config["model_type"] = "mixtral";
  config["hidden_size"] = 1 << 20;
  config["num_attention_heads"] = 1 << 10;
  config["num_key_value_heads"] = 1 << 10;
  config["intermediate_size"] = 1 << 20;
  config["num_hidden_layers"] = 4096;
  config["num_local_experts"] = 65536;
  config["num_experts_per_tok"] = 2;
  auto spec = parse(config);
  REQUIRE(spec.ok());
  auto counts = count_params(spec.value());
  REQUIRE_FALSE(counts.ok());
  CHECK(counts.failure().code == "config.too_large");
}

TEST_CASE("a config that is not an object") {
  auto spec = parse(json::array({1, 2}));
  REQUIRE_FALSE(spec.ok());
  CHECK(spec.failure().code == "config.not_an_object");
}

}  // namespace
}  // namespace gpumem
