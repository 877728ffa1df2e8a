// The module's two exports: the core's JSON API (handle_request) over the module's memory, and
// nothing else. All estimation logic lives in core/; the ES-module facade (gpumem.mjs) copies a
// request's UTF-8 bytes in and decodes the answer's out with the browser's TextEncoder and
// TextDecoder (embind's string conversion, a JavaScript loop over every byte, took an eighth of
// a params answer's time).

#include <emscripten/emscripten.h>

#include <cstddef>
#include <string>

#include "gpumem/api/json_api.hpp"

namespace {

std::string last_response;  // kept until the next request, for the facade to read

}  // namespace

extern "C" {

// The answer to the request of `size` bytes at `request` (JSON text): a pointer to its UTF-8
// text, valid until the next call; gpumem_response_size() gives its length.
EMSCRIPTEN_KEEPALIVE const char* gpumem_respond(const char* request, std::size_t size) {
#ifdef GPUMEM_ESTIMATOR_ONLY
  // The page's first download (gpumem_estimator.wasm): the estimator's commands alone.
  last_response = gpumem::handle_estimator_request(std::string(request, size));
#else
  last_response = gpumem::handle_request(std::string(request, size));
#endif
  return last_response.data();
}

EMSCRIPTEN_KEEPALIVE std::size_t gpumem_response_size() { return last_response.size(); }
}
