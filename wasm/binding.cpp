// The embind binding: exposes the core's JSON API (handle_request) and nothing else. All
// estimation logic lives in core/; the ES-module facade (gpumem.mjs) wraps this for JS callers.

#include <emscripten/bind.h>

#include "gpumem/api/json_api.hpp"

EMSCRIPTEN_BINDINGS(gpumem) { emscripten::function("handleRequest", &gpumem::handle_request); }
