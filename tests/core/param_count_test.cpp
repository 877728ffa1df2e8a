// Parameter tensors and counts against ground truth: every tensor's name, shape and order as
// transformers 5.17 builds the model on the meta device (tests/golden/hf_param_counts.json, made
// by tools/measure/param_counts.py), and the published counts the presets carry (from
// ../shared/reference/models.json).

#include "gpumem/param_count.hpp"

#include <doctest/doctest.h>

#include <string>

#include "gpumem/config_parser.hpp"
#include "test_files.hpp"

namespace gpumem {
namespace {

using nlohmann::json;

json config_for(const std::string& id, const json& reference) {
  if (id.rfind("tests/configs/", 0) == 0) return test::read_json(id);
  return reference.at(id).at("config");
}

std::string shape_text(const json& shape) { return shape.dump(); }

std::string shape_text(const tensor_shape& shape) {
  return json(std::vector<std::uint64_t>(shape.begin(), shape.end())).dump();
}

TEST_CASE("every tensor matches transformers, name by name, in registration order") {
  const json golden = test::read_json("tests/golden/hf_param_counts.json");
  const json corrections = test::read_json("tests/golden/param_count_corrections.json");
  const json reference = test::read_presets();
  REQUIRE(golden.is_object());
  REQUIRE(reference.is_object());
  int compared = 0;
  for (const auto& model : golden.at("models").items()) {
    const std::string id = model.key();
    for (const auto& variant : model.value().items()) {
      const std::string head = variant.key();
      const json& expected = variant.value();
      CAPTURE(id);
      CAPTURE(head);
      model_options options;
      if (head != "causal_lm") options.task_head = head;
      auto spec = parse_model_config(config_for(id, reference), options, "model.config");
      REQUIRE_MESSAGE(spec.ok(), (spec.ok() ? "" : spec.failure().message));
      json tensors = expected.at("tensors");
      if (corrections.at("append").contains(id)) {
        for (const auto& extra : corrections.at("append").at(id)) tensors.push_back(extra);
      }
      if (expected.contains("class")) CHECK(spec.value().architecture == expected.at("class"));
      const auto& ours = spec.value().tensors;
      CHECK(ours.size() == tensors.size());
      for (std::size_t i = 0; i < ours.size() && i < tensors.size(); ++i) {
        CAPTURE(i);
        CHECK(ours[i].name == tensors[i][0].get<std::string>());
        CHECK(shape_text(ours[i].shape) == shape_text(tensors[i][1]));
      }
      std::uint64_t expected_total = 0;
      for (const auto& t : tensors) {
        std::uint64_t n = 1;
        for (const auto& d : t[1]) n *= d.get<std::uint64_t>();
        expected_total += n;
      }
      auto counts = count_params(spec.value());
      REQUIRE(counts.ok());
      CHECK(counts.value().total == expected_total);
      ++compared;
    }
  }
  CHECK(compared == 52);  // 41 presets, BERT under 6 heads, 5 extra architectures
}

TEST_CASE("published parameter counts are reproduced exactly") {
  const json reference = test::read_presets();
  REQUIRE(reference.is_object());
  int checked = 0;
  for (const auto& item : reference.items()) {
    const std::string id = item.key();
    const json& entry = item.value();
    if (entry.at("published_params").is_null()) continue;
    CAPTURE(id);
    auto spec = parse_model_config(entry.at("config"), {}, "model.config");
    REQUIRE(spec.ok());
    auto counts = count_params(spec.value());
    REQUIRE(counts.ok());
    CHECK(counts.value().total == entry.at("published_params").get<std::uint64_t>());
    ++checked;
  }
  CHECK(checked >= 1);
}

TEST_CASE("group sums add up to the total and blocks cover every block tensor") {
  const json reference = test::read_presets();
  for (const auto& item : reference.items()) {
    const std::string id = item.key();
    const json& entry = item.value();
    CAPTURE(id);
    auto spec = parse_model_config(entry.at("config"), {}, "model.config");
    REQUIRE(spec.ok());
    auto c = count_params(spec.value());
    REQUIRE(c.ok());
    const auto& g = c.value().groups;
    CHECK(g.token_embedding + g.position_embedding + g.attention + g.mlp + g.router +
              g.routed_experts + g.shared_experts + g.norm + g.projection + g.lm_head +
              g.task_head ==
          c.value().total);
    std::uint64_t in_blocks = 0;
    std::uint64_t blocks = 0;
    for (const auto& b : c.value().blocks) {
      in_blocks += b.total * static_cast<std::uint64_t>(b.last - b.first + 1);
      blocks += static_cast<std::uint64_t>(b.last - b.first + 1);
    }
    std::uint64_t expected = 0;
    for (const auto& t : spec.value().tensors) expected += t.layer >= 0 ? t.numel() : 0;
    CHECK(in_blocks == expected);
    CHECK(blocks == spec.value().num_layers);
  }
}

TEST_CASE("active parameters of mixture-of-experts models, by hand") {
  const json reference = test::read_presets();
  SUBCASE("Mixtral-8x7B: 2 of 8 experts per token") {
    auto spec =
        parse_model_config(reference.at("mistralai/Mixtral-8x7B-v0.1").at("config"), {}, "c");
    REQUIRE(spec.ok());
    auto c = count_params(spec.value());
    REQUIRE(c.ok());
    // One expert: 3 x 4096 x 14336; 6 idle experts in each of 32 layers.
    const std::uint64_t idle = 32ULL * 6 * 3 * 4096 * 14336;
    CHECK(c.value().total == 46702792704ULL);
    CHECK(c.value().active == 46702792704ULL - idle);
    CHECK(c.value().active == 12879925248ULL);  // the "12.9B active" of Mistral's announcement
  }
  SUBCASE("DeepSeek-V3: 8 of 256 routed experts in 58 MoE layers") {
    auto spec = parse_model_config(reference.at("deepseek-ai/DeepSeek-V3").at("config"), {}, "c");
    REQUIRE(spec.ok());
    auto c = count_params(spec.value());
    REQUIRE(c.ok());
    const std::uint64_t idle = 58ULL * 248 * 3 * 7168 * 2048;
    CHECK(c.value().active == c.value().total - idle);
    // The model card's "37B activated" (main model, without the multi-token-prediction module).
    CHECK(c.value().active > 37000000000ULL);
    CHECK(c.value().active < 38000000000ULL);
  }
  SUBCASE("a dense model is fully active") {
    auto spec = parse_model_config(reference.at("meta-llama/Llama-3.1-8B").at("config"), {}, "c");
    REQUIRE(spec.ok());
    auto c = count_params(spec.value());
    REQUIRE(c.ok());
    CHECK(c.value().active == c.value().total);
  }
}

}  // namespace
}  // namespace gpumem
