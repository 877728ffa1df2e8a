#pragma once
// The one request/response API of gpumem (docs/api.md): a JSON request string in, a JSON
// response string out. The CLI and the wasm binding call nothing else.

#include <string>

namespace gpumem {

inline constexpr int api_version = 1;

// Never throws and never aborts: malformed input yields {"ok": false, "error": {...}}.
std::string handle_request(const std::string& request_json);

}  // namespace gpumem
