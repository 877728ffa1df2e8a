// The presets as the core embeds them (cmake/embed_presets.cmake leaves out the config.json keys
// the core never reads): every preset answers the same from its embedded copy as from its file.

#include <doctest/doctest.h>

#include "gpumem/model/preset_catalog.hpp"
#include "test_files.hpp"

namespace gpumem {
namespace {

using nlohmann::json;

// What an answer says of the model and the estimate, without its identity (a preset's id against
// a pasted config's name).
json without_identity(json response) {
  json& result = response.at("result");
  for (const char* key : {"id", "family", "published_params", "name", "architecture_of"})
    result.at("model").erase(key);
  return response;
}

TEST_CASE("every preset answers the same from its embedded copy as from its config.json file") {
  const json presets = test::read_presets();
  REQUIRE(presets.size() >= 100);
  for (const auto& entry : presets.items()) {
    const std::string id = entry.key();
    const json& file = entry.value();
    CAPTURE(id);
    const auto embedded = find_model_preset(id, "model", nlohmann::ordered_json());
    REQUIRE(embedded.ok());
    const json by_id = test::call({{"command", "params"}, {"model", id}});
    const json by_file =
        test::call({{"command", "params"}, {"model", {{"config", file.at("config")}}}});
    REQUIRE(by_id.at("ok") == true);
    CHECK(without_identity(by_id) == without_identity(by_file));
    // A serving estimate (tensor parallelism by default) and a ZeRO-3 training one, whether
    // they answer or refuse.
    for (const auto& asked :
         {std::pair{
              json{{"phase", "inference"}, {"micro_batch", 1}, {"seq_len", 64}, {"new_tokens", 8}},
              json::object()},
          std::pair{json{{"finetune", "lora"}, {"micro_batch", 1}, {"seq_len", 64}},
                    json{{"method", "zero3"}}}}) {
      const json& workload = asked.first;
      const auto estimate = [&](const json& model) {
        json request = {{"command", "estimate"},
                        {"model", model},
                        {"cluster", {{"gpu", "h200"}, {"gpus", 8}}},
                        {"workload", workload}};
        if (!asked.second.empty()) request["parallel"] = asked.second;
        return test::call(request);
      };
      const json for_id = estimate(id);
      const json for_file = estimate({{"config", file.at("config")}});
      CAPTURE(workload);
      if (for_id.at("ok") == true) {
        CHECK(without_identity(for_id) == without_identity(for_file));
      } else {
        CHECK(for_id.at("error") == for_file.at("error"));
      }
    }
  }
}

}  // namespace
}  // namespace gpumem
