#include "gpumem/model/preset_catalog.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>

namespace gpumem {

using json = nlohmann::ordered_json;
using nlohmann::ordered_json;

namespace {

// The preset files are part of the build and checked by the tests, so a parse failure here is
// a build defect; it still yields a discarded value rather than an abort.
template <class json_type>
json_type parse_embedded(const char* text) {
  return json_type::parse(text, nullptr, false);
}

// A supplied preset with the members the embedded ones always have (family, published_params,
// aliases, verified), so that its readers need not tell them apart.
json completed(const json& preset) {
  json out = {{"id", preset.at("id")},
              {"family", preset.value("family", "")},
              {"config", preset.at("config")},
              {"published_params",
               preset.contains("published_params") ? preset.at("published_params") : json(nullptr)},
              {"verified", preset.value("verified", false)},
              {"aliases", preset.value("aliases", json::array())}};
  return out;
}

bool names(const json& preset, const std::string& id) {
  if (preset.at("id") == id) return true;
  const auto aliases = preset.find("aliases");
  return aliases != preset.end() && aliases->is_array() &&
         std::find(aliases->begin(), aliases->end(), id) != aliases->end();
}

}  // namespace

result<json> find_model_preset(const std::string& id, const std::string& field,
                               const json& supplied) {
  if (supplied.is_array()) {
    for (const auto& preset : supplied) {
      if (preset.at("id") == id) return completed(preset);
    }
    for (const auto& preset : supplied) {
      if (names(preset, id)) return completed(preset);
    }
  }
  // Files are named after the id with '/' as "--" (scripts/import_reference_models.py), so only
  // the matching file is parsed.
  std::string name = id;
  for (auto at = name.find('/'); at != std::string::npos; at = name.find('/', at + 2)) {
    name.replace(at, 1, "--");
  }
  name += ".json";
  for (const auto& file : embedded_model_presets()) {
    if (name != file.name) continue;
    json preset = parse_embedded<json>(file.text);
    if (preset.is_object() && preset.value("id", "") == id) return preset;
  }
  for (const auto& alias : embedded_model_aliases()) {
    if (id != alias.name) continue;
    for (const auto& file : embedded_model_presets()) {
      if (std::string(file.name) == alias.text) return parse_embedded<json>(file.text);
    }
  }
  return error{"model.unknown_preset", field,
               "[" + field + "] '" + id +
                   "' is not a model preset; run `gpumem models` for the list, or pass the model's "
                   "config.json as {\"config\": {...}}"};
}

json all_model_presets(const json& supplied) {
  json out = json::array();
  if (supplied.is_array()) {
    for (const auto& preset : supplied) out.push_back(completed(preset));
  }
  const std::size_t brought = out.size();
  for (const auto& file : embedded_model_presets()) {
    json preset = parse_embedded<json>(file.text);
    if (!preset.is_object()) continue;
    const auto replaced =
        std::find_if(out.begin(), out.begin() + static_cast<std::ptrdiff_t>(brought),
                     [&](const json& p) { return p.at("id") == preset.at("id"); });
    if (replaced == out.begin() + static_cast<std::ptrdiff_t>(brought))
      out.push_back(std::move(preset));
  }
  return out;
}

ordered_json gpu_presets() {
  ordered_json gpus = ordered_json::array();
  for (const auto& file : embedded_gpu_presets())
    gpus.push_back(parse_embedded<ordered_json>(file.text));
  return {{"gpus", std::move(gpus)}};
}

ordered_json preset_sources() {
  ordered_json models = ordered_json::array();
  for (const auto& file : embedded_model_sources())
    models.push_back({{"id", file.name}, {"source", parse_embedded<ordered_json>(file.text)}});
  ordered_json gpus = ordered_json::array();
  for (const auto& file : embedded_gpu_sources())
    gpus.push_back({{"id", file.name}, {"sources", parse_embedded<ordered_json>(file.text)}});
  return {{"models", std::move(models)}, {"gpus", std::move(gpus)}};
}

json find_gpu_preset(const std::string& id) {
  for (const auto& file : embedded_gpu_presets()) {
    if (id == file.name) return parse_embedded<json>(file.text);
  }
  return json(json::value_t::discarded);
}

}  // namespace gpumem
