#pragma once
// A request's `presets`: model presets the caller brings, in the preset files' format (id, family,
// config, published_params, aliases, verified; source and notes are allowed and not read). The
// request's `model` names one by id or alias as it names a built-in preset, and the `models`
// command lists them first. The page's download embeds its default model alone and sends the one
// preset a request names from catalogue.json (wasm/gpumem.mjs).

#include <nlohmann/json_fwd.hpp>
#include <optional>

#include "gpumem/result.hpp"

namespace gpumem {

// At most this many presets in one request (the catalogue holds about 150).
inline constexpr std::size_t max_supplied_presets = 4096;

// Checks `presets` when the request has it: an array of presets, each with a non-empty `id`
// string and a `config` object, and the other members of the types the preset files use.
std::optional<error> check_supplied_presets(const nlohmann::ordered_json& request);

// The request's `presets` (checked), or null when it has none.
const nlohmann::ordered_json& supplied_presets(const nlohmann::ordered_json& request);

}  // namespace gpumem
