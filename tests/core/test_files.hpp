#pragma once
// Reading the golden and reference files the tests compare against. Paths are relative to the
// source tree (GPUMEM_SOURCE_DIR); ../shared sits beside it in every checkout and in CI.

#include <fstream>
#include <sstream>
#include <string>

#include <nlohmann/json.hpp>

#include "gpumem/json_api.hpp"

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

// Calls the API with a request object and parses the response.
inline nlohmann::json call(const nlohmann::json& request) {
  return nlohmann::json::parse(handle_request(request.dump()), nullptr, false);
}

}  // namespace gpumem::test
