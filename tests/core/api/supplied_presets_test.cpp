// A request's own model presets (`presets`): named like the embedded ones, listed by `models`,
// checked field by field, and never confused with an embedded preset of the same id.

#include <doctest/doctest.h>

#include "gpumem/api/json_api.hpp"
#include "test_files.hpp"

namespace gpumem {
namespace {

using nlohmann::json;
using test::call;

// GPT-2 small's config.json with `layers` blocks: 124,439,808 parameters at 12 blocks, each
// block 7,087,872 (two LayerNorms, c_attn, c_proj, c_fc, c_proj with biases, at 768 wide).
json gpt2_config(int layers) {
  json config = test::read_presets().at("gpt2").at("config");
  config["n_layer"] = layers;
  return config;
}

json tiny_preset() {
  return {{"id", "someone/gpt2-two-blocks"},
          {"family", "GPT-2"},
          {"config", gpt2_config(2)},
          {"published_params", nullptr},
          {"aliases", {"someone/gpt2-two-blocks-chat"}}};
}

json params_with(const json& model, const json& presets) {
  return call({{"command", "params"}, {"model", model}, {"presets", presets}});
}

void check_refused(const json& presets, const std::string& field) {
  const json r = params_with("gpt2", presets);
  REQUIRE(r.at("ok") == false);
  CHECK(r.at("error").at("field") == field);
  CHECK(r.at("error").at("message").get<std::string>().find("[" + field + "]") !=
        std::string::npos);
}

TEST_CASE("a request's own preset is named by id or alias, as an embedded one is") {
  const std::uint64_t two_blocks = 124439808 - 10 * 7087872;
  json r = params_with("someone/gpt2-two-blocks", json::array({tiny_preset()}));
  REQUIRE(r.at("ok") == true);
  CHECK(r.at("result").at("total_params") == two_blocks);
  CHECK(r.at("result").at("model").at("id") == "someone/gpt2-two-blocks");
  CHECK(r.at("result").at("model").at("family") == "GPT-2");
  r = params_with({{"preset", "someone/gpt2-two-blocks-chat"}}, json::array({tiny_preset()}));
  REQUIRE(r.at("ok") == true);
  CHECK(r.at("result").at("total_params") == two_blocks);
  CHECK(r.at("result").at("model").at("architecture_of") == "someone/gpt2-two-blocks");
  // Without it the id is unknown; the embedded presets are still there beside it.
  CHECK(
      call({{"command", "params"}, {"model", "someone/gpt2-two-blocks"}}).at("error").at("code") ==
      "model.unknown_preset");
  CHECK(params_with("gpt2", json::array({tiny_preset()})).at("result").at("total_params") ==
        124439808);
}

TEST_CASE("a request's preset replaces an embedded one of the same id, request by request") {
  json mine = tiny_preset();
  mine["id"] = "gpt2";
  // (the model cache keys on the presets too: each answer is its own request's)
  for (int round = 0; round < 2; ++round) {
    CHECK(params_with("gpt2", json::array({mine})).at("result").at("total_params") ==
          124439808 - 10 * 7087872);
    CHECK(call({{"command", "params"}, {"model", "gpt2"}}).at("result").at("total_params") ==
          124439808);
  }
  const json plan = call({{"command", "plan"},
                          {"model", "gpt2"},
                          {"presets", json::array({mine})},
                          {"cluster", {{"gpu", "rtx-4090"}}},
                          {"workload", {{"finetune", "full"}, {"seq_len", 128}}}});
  CHECK(plan.at("ok") == true);
}

TEST_CASE("models lists a request's presets first, then the embedded ones they leave") {
  const json embedded = call({{"command", "models"}}).at("result").at("models");
  json replacing = tiny_preset();
  replacing["id"] = "gpt2";
  const json r =
      call({{"command", "models"}, {"presets", json::array({tiny_preset(), replacing})}});
  REQUIRE(r.at("ok") == true);
  const json& models = r.at("result").at("models");
  CHECK(models.size() == embedded.size() + 1);
  CHECK(models.at(0).at("id") == "someone/gpt2-two-blocks");
  CHECK(models.at(0).at("aliases") == json::array({"someone/gpt2-two-blocks-chat"}));
  CHECK(models.at(0).at("verified") == false);
  CHECK(models.at(1).at("id") == "gpt2");
  CHECK(models.at(1).at("total_params") == 124439808 - 10 * 7087872);
  json broken = tiny_preset();
  broken["config"]["n_embd"] = -4;
  const json refused =
      call({{"command", "models"}, {"presets", json::array({tiny_preset(), broken})}});
  REQUIRE(refused.at("ok") == false);
  CHECK(refused.at("error").at("field").get<std::string>().rfind("presets[1].config", 0) == 0);
}

TEST_CASE("a request's presets are checked field by field") {
  check_refused("gpt2", "presets");
  check_refused(json::array({7}), "presets[0]");
  json p = tiny_preset();
  p.erase("config");
  check_refused(json::array({p}), "presets[0].config");
  p = tiny_preset();
  p["id"] = "";
  check_refused(json::array({tiny_preset(), p}), "presets[1].id");
  p = tiny_preset();
  p["aliases"] = {"a", 3};
  check_refused(json::array({p}), "presets[0].aliases[1]");
  p = tiny_preset();
  p["published_params"] = -1;
  check_refused(json::array({p}), "presets[0].published_params");
  p["published_params"] = 1e300;
  check_refused(json::array({p}), "presets[0].published_params");
  p = tiny_preset();
  p["famly"] = "GPT-2";
  const json unknown = params_with("gpt2", json::array({p}));
  CHECK(unknown.at("error").at("code") == "request.unknown_field");
  CHECK(unknown.at("error").at("field") == "presets[0].famly");
  check_refused(json(std::vector<json>(4097, tiny_preset())), "presets");
  // Presets in the files' own format (source and notes beside the config) are accepted as they are.
  json file = tiny_preset();
  file["source"] = json::array({"https://example.org/config.json"});
  file["notes"] = "kept by hand";
  file["verified"] = true;
  CHECK(params_with("gpt2", json::array({file})).at("ok") == true);
}

}  // namespace
}  // namespace gpumem
