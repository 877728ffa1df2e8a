#pragma once
// A GPU preset of presets/gpus.json read into the figures the estimators use, and the fields a
// request may override on one (cluster.gpu).

#include <string>

#include "gpumem/result.hpp"
#include "gpumem/runtime/hardware.hpp"
#include "model/config_reader.hpp"

namespace gpumem {

// The GPU figures `in` states, each within its range, over those `gpu` holds.
void read_gpu_fields(config_reader& in, gpu_spec& gpu);

// The preset `id` (kept once read: presets do not change while the core runs); an unknown id is
// an error on `field` listing the presets.
result<gpu_spec> gpu_from_preset(const std::string& id, const std::string& field);

}  // namespace gpumem
