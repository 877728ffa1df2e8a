#pragma once
// Reading the golden and reference files the tests compare against. Paths are relative to the
// source tree (GPUMEM_SOURCE_DIR).

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>

#include "gpumem/api/json_api.hpp"

namespace gpumem::test {

inline std::string source_path(const std::string& relative) {
  return std::string(GPUMEM_SOURCE_DIR) + "/" + relative;
}

inline nlohmann::json read_json(const std::string& relative) {
  std::ifstream in(source_path(relative));
  std::stringstream text;
  text << in.rdbuf();
  return nlohmann::json::parse(text.str(), nullptr, false);
}

// The shipped model presets (presets/models/), by Hugging Face id: {id: preset object}.
inline nlohmann::json read_presets() {
  nlohmann::json out = nlohmann::json::object();
  const nlohmann::json index = read_json("presets/models/index.json");
  for (const auto& entry : index.at("models")) {
    out[entry.at("id").get<std::string>()] =
        read_json("presets/models/" + entry.at("file").get<std::string>());
  }
  return out;
}

// Calls the API with a request object and parses the response.
inline nlohmann::json call(const nlohmann::json& request) {
  return nlohmann::json::parse(handle_request(request.dump()), nullptr, false);
}

}  // namespace gpumem::test
