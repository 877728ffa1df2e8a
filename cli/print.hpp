#pragma once
// How the command line prints the parts of an estimate: sizes in GiB, the components of a rank,
// the KV cache and serving speed, an offloaded step's host footprint, a verdict.

#include <nlohmann/json.hpp>
#include <string>

namespace gpumem::cli {

// Bytes as GiB (2^30) with two decimals.
std::string gib(const nlohmann::ordered_json& bytes);
void print_components(const nlohmann::ordered_json& rank);
void print_kv_cache(const nlohmann::ordered_json& result);
void print_offload(const nlohmann::ordered_json& offload);
std::string verdict_text(const nlohmann::ordered_json& verdict);

}  // namespace gpumem::cli
