#pragma once
// The answers of the `export` and `import` commands (docs/api.md), for json_api.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "api/model_resolver.hpp"
#include "gpumem/result.hpp"
#include "gpumem/runtime/hardware.hpp"

namespace gpumem {

// `format`: one of the formats export writes, or why not.
result<std::string> read_launch_format(const nlohmann::ordered_json& request);

// export's result for `request` (an estimate request with `format`), whose estimate's result is
// `estimate` (the setup estimates: json_api checked it first).
result<nlohmann::ordered_json> export_answer(const nlohmann::ordered_json& request,
                                             const std::string& format, const resolved_model& model,
                                             const cluster_spec& cluster,
                                             const nlohmann::ordered_json& estimate);

// import's result: {"format", "file", "request"} read into the request the file describes, the
// caller's `request` over it. `hidden_size` fills DeepSpeed's "auto" buckets (0: unknown).
result<nlohmann::ordered_json> import_answer(const nlohmann::ordered_json& request,
                                             std::uint64_t hidden_size);

}  // namespace gpumem
