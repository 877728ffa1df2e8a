// AutoAWQ's fused modules, release by release: the cache of max_seq_len tokens and the RoPE tables
// allocated at load, the prefill's attention, and what AutoAWQ refuses.

#include <doctest/doctest.h>

#include "gpumem/api/json_api.hpp"
#include "gpumem/inference/inference_step.hpp"
#include "gpumem/model/config_parser.hpp"
#include "test_files.hpp"

namespace gpumem {
namespace {

constexpr std::uint64_t mib = 1ULL << 20;

// Llama-2-7B's AWQ checkpoint as AutoAWQ serves it: 32 layers of 32 heads of 128, 4096 positions.
struct llama2_awq {
  model_spec spec;
  inference_config config;
  gpu_spec gpu;
  llama2_awq() {
    spec = parse_model_config(test::read_presets().at("meta-llama/Llama-2-7b-hf").at("config"), {},
                              "c")
               .value();
    config.framework = serving_framework::autoawq;
    config.kv = kv_cache_kind::static_cache;
    config.weights.format = weight_format::awq_4bit;
    config.activation_bf16 = false;
    gpu.architecture = "ampere";
    gpu.memory_bytes = 80ULL << 30;
  }
  inference_estimate run(unsigned minor, unsigned patch, std::uint64_t prompt,
                         std::uint64_t batch = 1) {
    config.autoawq = library_release{0, minor, patch};
    config.prompt_tokens = prompt;
    config.new_tokens = 32;
    config.batch = batch;
    auto out = estimate_inference(spec, config, gpu);
    REQUIRE(out.ok());
    return out.value();
  }
};

std::uint64_t by(const inference_estimate& e, memory_category c) {
  return e.peak.by_category[static_cast<std::size_t>(c)];
}

TEST_CASE("AutoAWQ's cache: max_seq_len tokens by release, allocated at load in fp16") {
  llama2_awq m;
  // 2 x 32 layers x 4096 features x 2 bytes a token: 512 KiB; 2048 tokens (0.2.x's default).
  CHECK(by(m.run(2, 9, 512), memory_category::kv_cache) == 2048 * 512 * 1024ULL);
  // Before 0.2.0: max_new_tokens=None reads the config's max_position_embeddings (4096).
  CHECK(by(m.run(1, 8, 512), memory_category::kv_cache) == 4096 * 512 * 1024ULL);
  // Four sequences: four times the cache (AWQ_BATCH_SIZE grown to the batch).
  CHECK(by(m.run(2, 9, 512, 4), memory_category::kv_cache) == 4 * 2048 * 512 * 1024ULL);
  // A run longer than the default must have raised max_seq_len: at least its length.
  // (Each of its 64 tensors, 3031 x 8 KiB, takes whole 2 MiB blocks in the allocator model.)
  const auto longer = m.run(2, 9, 3000);
  CHECK(longer.notes.front().find("max_seq_len 3031 tokens") != std::string::npos);
  CHECK(longer.notes.front().find("raised to the run's length") != std::string::npos);
  CHECK(by(longer, memory_category::kv_cache) == 64 * 12 * 2 * mib);
  // A stated max_seq_len is kept.
  m.config.kv_cache_tokens = 8192;
  CHECK(by(m.run(2, 9, 512), memory_category::kv_cache) == 8192 * 512 * 1024ULL);
}

TEST_CASE("AutoAWQ's RoPE tables: complex64 over 2 x max_seq_len positions before 0.2.7") {
  llama2_awq m;
  // One per layer: positions x 64 frequencies x 8 bytes; 2 x 2048 positions, then 2048. (The
  // fp32 staging of the cache, 0.2.7 and before, is gone by the peak.)
  CHECK(by(m.run(2, 6, 512), memory_category::other) == 32 * 4096 * 64 * 8ULL);
  CHECK(by(m.run(2, 6, 512), memory_category::other) == 64 * mib);
  CHECK(by(m.run(2, 8, 512), memory_category::other) == 32 * mib);
}

TEST_CASE("AutoAWQ's prefill: fp16 and fp32 scores before 0.2.7, flash attention from 0.2.8") {
  llama2_awq m;
  const std::uint64_t tokens = 1024;
  const auto eager = m.run(2, 6, tokens);
  const auto sdpa = m.run(2, 7, tokens);
  const auto flash = m.run(2, 8, tokens);
  CHECK(eager.peak.phase == "prefill");
  // 32 heads x 1024^2 scores alive as fp16, fp32 and the fp32 softmax at once: 10 bytes each,
  // beside the keys and values repeated to every head (2 x 1024 x 4096 x 2 bytes) and the fp16
  // mask (1024^2 x 2).
  const std::uint64_t scores = 32 * tokens * tokens * 10;
  const std::uint64_t activations = by(eager, memory_category::activations);
  CHECK(activations >= scores + 2 * tokens * 4096 * 2 + tokens * tokens * 2);
  CHECK(activations < scores + 96 * mib);
  // SDPA and flash attention keep no scores; SDPA's repeated K/V and mask cost a little more.
  CHECK(by(flash, memory_category::activations) < scores / 2);
  CHECK(sdpa.peak.allocated >= flash.peak.allocated);
  CHECK(sdpa.peak.allocated < flash.peak.allocated + 64 * mib);
}

TEST_CASE("AutoAWQ refuses what it does not serve, naming the field") {
  llama2_awq m;
  m.config.prompt_tokens = 512;
  const auto refused = [&](const inference_config& c, const char* field) {
    auto out = estimate_inference(m.spec, c, m.gpu);
    REQUIRE_FALSE(out.ok());
    CHECK(out.failure().field == field);
  };
  inference_config c = m.config;
  c.weights.format = weight_format::nf4;
  refused(c, "workload.weights");
  c = m.config;
  c.kv = kv_cache_kind::dynamic;
  refused(c, "workload.kv_cache.kind");
  c = m.config;
  c.kv_cache_tokens = 256;
  refused(c, "workload.kv_cache.tokens");
  c = m.config;
  c.tp_degree = 2;
  refused(c, "parallel.method");
  auto mixtral = parse_model_config(
      test::read_presets().at("mistralai/Mixtral-8x7B-v0.1").at("config"), {}, "c");
  REQUIRE(mixtral.ok());
  auto out = estimate_inference(mixtral.value(), m.config, m.gpu);
  REQUIRE_FALSE(out.ok());
  CHECK(out.failure().field == "workload.framework");
}

TEST_CASE("AutoAWQ through the API: an AWQ checkpoint read as it is, its release checked") {
  const nlohmann::json request = {
      {"command", "estimate"},
      {"model", "Qwen/Qwen2.5-14B-Instruct-AWQ"},
      {"cluster", {{"gpu", "a100-sxm4-80gb"}}},
      {"workload",
       {{"phase", "inference"},
        {"framework", "autoawq"},
        {"seq_len", 1024},
        {"new_tokens", 64},
        {"software", {{"autoawq", "0.2.6"}, {"transformers", "4.44.2"}}}}}};
  const auto r = test::call(request);
  REQUIRE(r.at("ok") == true);
  CHECK(r.at("result").at("workload").at("weights") == "awq_4bit");
  CHECK(r.at("result").at("notes").dump().find("AutoAWQ 0.2.6") != std::string::npos);
  nlohmann::json other = request;
  other["workload"]["framework"] = "transformers";
  CHECK(test::call(other).at("error").at("field") == "workload.software.autoawq");
  other = request;
  other["workload"]["weights"] = "nf4";
  CHECK(test::call(other).at("error").at("field") == "workload.weights");
}

}  // namespace
}  // namespace gpumem
