// LLMem mode against golden numbers derived independently (tools/golden/llmem_formula.py, from
// transformers' own parameter list), and its m_init parts by hand.

#include "gpumem/plan/llmem.hpp"

#include <doctest/doctest.h>

#include "gpumem/model/config_parser.hpp"
#include "gpumem/parallel/gemini_chunks.hpp"
#include "gpumem/runtime/hardware.hpp"
#include "test_files.hpp"

namespace gpumem {
namespace {

using nlohmann::json;

json estimate_request(const std::string& model, const std::string& method, std::uint64_t gpus,
                      std::uint64_t tp, std::uint64_t batch, std::uint64_t seq) {
  return {{"api_version", 1},
          {"command", "estimate"},
          {"mode", "llmem"},
          {"model", model},
          {"cluster", {{"gpu", "v100-sxm2-16gb"}, {"gpus", gpus}}},
          {"parallel", {{"method", method}, {"tp", tp}}},
          {"workload", {{"micro_batch", batch}, {"seq_len", seq}}}};
}

TEST_CASE("every LLMem term equals the golden formula, to the byte") {
  const json golden = test::read_json("tests/golden/llmem.json");
  REQUIRE(golden.is_object());
  int checked = 0;
  for (const auto& c : golden.at("cases")) {
    json request = estimate_request(c.at("model"), c.at("method"), c.at("gpus"), c.at("tp"),
                                    c.at("micro_batch"), c.at("seq_len"));
    if (c.contains("dp_tp_fraction"))
      request["parallel"]["dp_tp_fraction"] = c.at("dp_tp_fraction");
    const json r = test::call(request);
    CAPTURE(request.dump());
    REQUIRE(r.at("ok") == true);
    const json& components = r.at("result").at("per_gpu")[0].at("components");
    for (const auto& term : c.at("components").items()) {
      CAPTURE(term.key());
      CHECK(components.at(term.key()) == term.value());
    }
    ++checked;
  }
  CHECK(checked == 372);
}

TEST_CASE("the OPT-1.3b example of the design doc: 11614 MiB + m_init") {
  const json r = test::call(estimate_request("facebook/opt-1.3b", "single", 1, 1, 4, 512));
  REQUIRE(r.at("ok") == true);
  const json& rank = r.at("result").at("per_gpu")[0];
  const std::uint64_t m_init = rank.at("components").at("m_init");
  CHECK(rank.at("peak_bytes").get<std::uint64_t>() - m_init == 11614ULL << 20);
  std::uint64_t sum = 0;
  for (const auto& c : rank.at("components").items()) sum += c.value().get<std::uint64_t>();
  CHECK(sum == rank.at("peak_bytes"));
}

TEST_CASE("Gemini's chunk layout equals the golden plain scan") {
  const json golden = test::read_json("tests/golden/llmem.json");
  for (const auto& c : golden.at("gemini")) {
    const std::uint64_t dp = c.at("dp");
    const std::uint64_t tp = c.at("tp");
    // dp = gpus / tp: single (1 GPU), adp (dp GPUs), tp (tp GPUs) or dp_tp.
    const std::uint64_t gpus = dp * tp;
    const std::string method =
        gpus == 1 ? "single" : (tp == 1 ? "adp" : (dp == 1 ? "tp" : "dp_tp"));
    const json r = test::call(estimate_request(c.at("model"), method, gpus, tp, 1, 512));
    CAPTURE(c.dump());
    REQUIRE(r.at("ok") == true);
    const json& gemini = r.at("result").at("m_init").at("gemini");
    CHECK(gemini.at("chunk_size_elements") == c.at("chunk_size_elements"));
    CHECK(gemini.at("chunks_per_dtype") == c.at("chunks"));
    CHECK(gemini.at("dp_degree") == dp);
  }
}

// The plain scan of search_chunk_configuration, for comparison with the breakpoint search.
std::uint64_t scanned_chunk_size(const std::vector<std::uint64_t>& sizes, std::uint64_t start,
                                 std::uint64_t range, std::uint64_t interval) {
  std::uint64_t best = start;
  std::uint64_t best_waste = ~0ULL;
  for (std::uint64_t size = start; size <= start + range; size += interval) {
    const std::uint64_t waste = gemini_unused_elements(sizes, size);
    if (waste < best_waste) {
      best_waste = waste;
      best = size;
    }
  }
  return best;
}

TEST_CASE("the breakpoint search finds the plain scan's chunk size") {
  std::uint64_t seed = 12345;
  auto next = [&seed](std::uint64_t bound) {
    seed = seed * 6364136223846793005ULL + 1442695040888963407ULL;
    return (seed >> 33) % bound + 1;
  };
  for (int trial = 0; trial < 200; ++trial) {
    std::vector<std::uint64_t> sizes;
    const std::uint64_t count = next(60);
    for (std::uint64_t i = 0; i < count; ++i) sizes.push_back(next(5000));
    gemini_search_options options;
    options.min_chunk_elements = 1000;
    options.search_range_elements = next(20000);
    options.search_interval = next(64);
    options.filter_exlarge_params = false;
    std::uint64_t total = 0;
    std::uint64_t largest = options.min_chunk_elements;
    for (auto s : sizes) {
      total += s;
      largest = std::max(largest, s);
    }
    if (total < options.min_chunk_elements) continue;
    const std::uint64_t start =
        (largest + options.search_interval - 1) / options.search_interval * options.search_interval;
    CAPTURE(trial);
    CHECK(gemini_chunk_layout(sizes, 1, options).chunk_size ==
          scanned_chunk_size(sizes, start, options.search_range_elements, options.search_interval));
  }
}

TEST_CASE("registration: oversize tensors get their own chunk, rounded to the DP degree") {
  gemini_search_options options;
  options.min_chunk_elements = 100;
  options.search_range_elements = 0;
  options.search_interval = 1;
  // 5000 lies above mean + 3 sigma of the sizes, so the search ignores it: chunk size
  // max(100, 90) = 100, rounded up to the DP degree 3 -> 102.
  const std::vector<std::uint64_t> sizes = {60, 30, 20, 60, 30,   20, 60, 30,
                                            20, 60, 30, 20, 5000, 5,  90};
  const auto layout = gemini_chunk_layout(sizes, 3, options);
  CHECK(layout.chunk_size == 102);
  // Next-fit: [60 30] [20 60] [30 20] [60 30] [20 60] [30 20] [5000 in its own 5001] [5 90].
  CHECK(layout.chunks == std::vector<std::uint64_t>{102, 102, 102, 102, 102, 102, 5001, 102});
  // A model under the minimum chunk is one chunk kept gathered.
  const auto small = gemini_chunk_layout({10, 20}, 4, options);
  CHECK(small.keep_gathered);
  CHECK(small.chunks == std::vector<std::uint64_t>{30});
}

TEST_CASE("m_init of OPT-125m on one GPU, by hand") {
  // Three chunks of 44,101,632 elements (golden scan), kept gathered (DP degree 1):
  // fp16 88,203,264 B -> 43 x 2 MiB segments; fp32 176,406,528 B -> 85 x 2 MiB.
  const json r = test::call(estimate_request("facebook/opt-125m", "single", 1, 1, 1, 512));
  REQUIRE(r.at("ok") == true);
  const json& m = r.at("result").at("m_init");
  CHECK(m.at("fp16_chunks") == 3ULL * 88203264);
  CHECK(m.at("fp32_chunks") == 3ULL * 176406528);
  CHECK(m.at("allocator_rounding") ==
        3ULL * (43 + 85) * (2ULL << 20) - 3ULL * (88203264 + 176406528));
  CHECK(m.at("cuda_context") == default_cuda_context_bytes("volta"));
  CHECK(m.at("bytes") ==
        m.at("cuda_context").get<std::uint64_t>() + 3ULL * (43 + 85) * (2ULL << 20));
  CHECK(m.at("gemini").at("keep_gathered") == true);
}

TEST_CASE("m_init counts GPT-Neo's causal-mask buffers") {
  const json r = test::call(estimate_request("EleutherAI/gpt-neo-1.3B", "single", 1, 1, 1, 512));
  REQUIRE(r.at("ok") == true);
  // 24 blocks x (2048 x 2048 bool mask + 4-byte masked_bias).
  CHECK(r.at("result").at("m_init").at("model_buffers") == 24ULL * (2048 * 2048 + 4));
}

TEST_CASE("the max batch search equals LLMem's linear scan") {
  const json reference = test::read_presets();
  auto spec = parse_model_config(reference.at("facebook/opt-350m").at("config"), {}, "c");
  REQUIRE(spec.ok());
  auto model = prepare_llmem(spec.value());
  REQUIRE(model.ok());
  cluster_spec cluster;
  cluster.gpu.memory_bytes = 6442450944ULL;  // RTX 2060, LLMem's single-GPU card
  cluster.gpus = 1;
  cluster.cuda_context_bytes = default_cuda_context_bytes("turing");
  for (std::uint64_t seq : {128, 512, 2048}) {
    auto fixed = llmem_fixed_terms(spec.value(), model.value(), cluster, {}, seq);
    REQUIRE(fixed.ok());
    std::uint64_t linear = 0;
    while (llmem_estimate(model.value(), fixed.value(), cluster, linear + 1, seq).fits) ++linear;
    CAPTURE(seq);
    CHECK(llmem_max_batch(model.value(), fixed.value(), cluster, seq, 4096) == linear);
    CHECK((linear > 0) == (seq < 2048));
  }
}

TEST_CASE("LLMem-mode request errors") {
  auto error_code = [](const json& request) {
    const json r = test::call(request);
    return r.at("ok") == false ? r.at("error").at("code").get<std::string>() : std::string("ok");
  };
  json request = estimate_request("facebook/opt-1.3b", "single", 2, 1, 1, 512);
  CHECK(error_code(request) == "parallel.invalid_method");
  request = estimate_request("facebook/opt-1.3b", "adp", 1, 1, 1, 512);
  CHECK(error_code(request) == "parallel.invalid_method");
  request = estimate_request("facebook/opt-1.3b", "dp_tp", 4, 4, 1, 512);
  CHECK(error_code(request) == "parallel.invalid_tp");
  request = estimate_request("facebook/opt-1.3b", "tp", 3, 3, 1, 512);  // 2048 % 3 != 0
  CHECK(error_code(request) == "parallel.invalid_tp");
  request = estimate_request("facebook/opt-1.3b", "single", 1, 1, 1, 4096);  // > 2048 positions
  CHECK(error_code(request) == "request.invalid_value");
  request = estimate_request("facebook/opt-1.3b", "single", 1, 1, 0, 512);
  CHECK(error_code(request) == "request.invalid_value");
  request = estimate_request("facebook/opt-1.3b", "adp", 4, 1, 1, 512);
  request.erase("mode");  // LLMem's methods are not the detailed estimator's
  request["parallel"].erase("tp");
  CHECK(error_code(request) == "mode.unavailable");
  request = estimate_request("bert-large-uncased", "single", 1, 1, 1, 128);
  CHECK(error_code(request) == "mode.unsupported_model");
  request = estimate_request("facebook/opt-1.3b", "single", 1, 1, 1, 512);
  request["cluster"]["gpu"] = "tpu-v5";
  CHECK(error_code(request) == "cluster.unknown_gpu");
  request["cluster"]["gpu"] = {{"memory_bytes", 1ULL << 34}};
  CHECK(error_code(request) == "request.missing_field");
  request["cluster"]["gpu"] = {{"preset", "t4"}, {"memory_bytes", 1ULL << 34}};
  CHECK(error_code(request) == "ok");
  request["cluster"]["gpu"] = {{"memory_bytes", 1ULL << 34},
                               {"fp16_dense_flops", 1e14},
                               {"link_bandwidth_bytes_per_s", 1e10}};
  CHECK(error_code(request) == "ok");
  request["workload"]["micro_btach"] = 2;
  CHECK(error_code(request) == "request.unknown_field");
}

}  // namespace
}  // namespace gpumem
