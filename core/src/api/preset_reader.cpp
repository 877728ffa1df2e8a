#include "api/preset_reader.hpp"

#include <nlohmann/json.hpp>
#include <string>

#include "api/json_text.hpp"
#include "api/request_reader.hpp"

namespace gpumem {

using json = nlohmann::ordered_json;

namespace {

error invalid(const std::string& field, const std::string& expected, const json& got) {
  return error{"request.invalid_type", field,
               "[" + field + "] must be " + expected + ", got " + readable(got.dump(), 60)};
}

std::optional<error> check_preset(const json& preset, const std::string& where) {
  if (!preset.is_object()) return invalid(where, "a model preset object", preset);
  if (auto e = unknown_keys(preset, where,
                            {"id", "family", "config", "published_params", "aliases", "verified",
                             "source", "notes"})) {
    return e;
  }
  const auto id = preset.find("id");
  if (id == preset.end() || !id->is_string() || id->get_ref<const std::string&>().empty() ||
      id->get_ref<const std::string&>().size() > 256) {
    return invalid(where + ".id", "a model id of 1 to 256 characters",
                   id == preset.end() ? json() : *id);
  }
  const auto config = preset.find("config");
  if (config == preset.end() || !config->is_object()) {
    return invalid(where + ".config", "the model's config.json object",
                   config == preset.end() ? json() : *config);
  }
  if (preset.contains("family") && !preset.at("family").is_string()) {
    return invalid(where + ".family", "a string", preset.at("family"));
  }
  if (preset.contains("verified") && !preset.at("verified").is_boolean()) {
    return invalid(where + ".verified", "true or false", preset.at("verified"));
  }
  if (preset.contains("published_params")) {
    // A count above 2^53 is not exact in JavaScript (architecture.md, Units and numbers).
    const json& count = preset.at("published_params");
    const bool whole = count.is_number_unsigned() && count.get<std::uint64_t>() <= (1ULL << 53);
    if (!count.is_null() && !whole) {
      return invalid(where + ".published_params", "null or a whole number up to 2^53", count);
    }
  }
  if (preset.contains("aliases")) {
    const json& aliases = preset.at("aliases");
    if (!aliases.is_array()) return invalid(where + ".aliases", "an array of model ids", aliases);
    for (std::size_t i = 0; i < aliases.size(); ++i) {
      if (!aliases[i].is_string()) {
        return invalid(where + ".aliases[" + std::to_string(i) + "]", "a model id", aliases[i]);
      }
    }
  }
  return std::nullopt;
}

}  // namespace

std::optional<error> check_supplied_presets(const json& request) {
  const auto presets = request.find("presets");
  if (presets == request.end() || presets->is_null()) return std::nullopt;
  if (!presets->is_array() || presets->size() > max_supplied_presets) {
    return invalid("presets",
                   "an array of at most " + std::to_string(max_supplied_presets) + " model presets",
                   presets->is_array() ? json(presets->size()) : *presets);
  }
  for (std::size_t i = 0; i < presets->size(); ++i) {
    if (auto e = check_preset((*presets)[i], "presets[" + std::to_string(i) + "]")) return e;
  }
  return std::nullopt;
}

const json& supplied_presets(const json& request) {
  static const json none;
  const auto presets = request.find("presets");
  return presets == request.end() ? none : *presets;
}

}  // namespace gpumem
