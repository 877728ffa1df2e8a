#pragma once
// Reading a validation point (the format of ../shared/validation/README.md) into the
// estimators' requests, field group by field group, never throwing on a malformed point;
// validation.cpp scores what is read.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>

#include "gpumem/inference/inference_step.hpp"
#include "gpumem/training/training_step.hpp"

namespace gpumem {

// A point's member object, else an empty one.
nlohmann::ordered_json object_at(const nlohmann::ordered_json& point, const char* key);
// A string member, or `fallback`.
const char* text_or(const nlohmann::ordered_json& object, const char* key, const char* fallback);
// Whether `value` is an integer in [low, high].
bool whole_in(const nlohmann::ordered_json& value, std::uint64_t low, std::uint64_t high);
// A flag member, or `fallback`.
bool flag_or(const nlohmann::ordered_json& object, const char* key, bool fallback);
// A degree or GPU count, or 1.
std::uint64_t count_or_one(const nlohmann::ordered_json& object, const char* key);
// Why a stated GPU count or degree is unusable ("" when none is).
std::string malformed_degree(const nlohmann::ordered_json& parallel);
// The GPU preset a point's GPU name describes, or "".
std::string gpu_preset_for(const nlohmann::ordered_json& gpu);
// Whether a point's run moved states to host memory or NVMe.
bool is_offloaded(const nlohmann::ordered_json& parallel);
// The point's parallel method with the format's offloaded names read as the methods they offload
// from (zero3_cpu_offload as zero3, fsdp_cpu_offload as fsdp_full_shard; the placement is in
// `offload`).
std::string method_without_offload(const nlohmann::ordered_json& parallel);
// The dropout probability a point's measure option sets, if any.
std::optional<double> dropout_option(const nlohmann::ordered_json& p);

// The estimators' requests for a point, or why it cannot be read ("" when it can).
std::string training_config_for(const nlohmann::ordered_json& p, training_config& config,
                                std::string& defaults_note);
std::string inference_config_for(const nlohmann::ordered_json& p, inference_config& config,
                                 std::string& defaults_note);

}  // namespace gpumem
