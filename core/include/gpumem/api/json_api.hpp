#pragma once
// The one request/response API of gpumem (docs/api.md): a JSON request string in, a JSON
// response string out. The CLI and the wasm binding call nothing else.

#include <cstddef>
#include <string>
#include <string_view>

namespace gpumem {

inline constexpr int api_version = 1;

// The deepest nesting of arrays and objects a request may have (a validation point nests about
// six levels). Deeper JSON is refused before it is parsed: copying and printing nested values
// recurse, and a stack overflow cannot be caught.
inline constexpr std::size_t max_json_depth = 64;

// The largest request read, in bytes (16 MiB: the development set's validation points are 0.5 MB).
// Larger text is refused before it is parsed: 80 MB of [0,0,...] took the wasm module past its
// 2 GB heap. The facade (wasm/gpumem.mjs) refuses it before copying it into the module.
inline constexpr std::size_t max_request_bytes = 16ULL << 20;

// What an error may echo of the request: its field path and its message, cut to these many bytes.
inline constexpr std::size_t max_error_field = 200;
inline constexpr std::size_t max_error_message = 1000;

// The deepest nesting of arrays and objects in a JSON text (brackets inside strings do not
// count); a linear scan that works on malformed text too.
std::size_t json_nesting_depth(std::string_view text);

// Never throws and never aborts: malformed input yields {"ok": false, "error": {...}}.
std::string handle_request(const std::string& request_json);

// The estimator's commands alone (params, estimate, plan, models, gpus, version), answered as
// handle_request answers them; export, import and validate are refused. The page's first
// download is a module built on this entry, which leaves the launch formats and the validation
// scorer out (wasm/CMakeLists.txt).
std::string handle_estimator_request(const std::string& request_json);

}  // namespace gpumem
