#pragma once
// The field helpers the request readers share (request_reader.cpp defines them): an object's
// member, its type, a choice among names and the sequence length against the model's positions.
// Each records or returns the same errors wherever a reader uses it.

#include <cstdint>
#include <initializer_list>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "api/request_reader.hpp"
#include "gpumem/model/model_spec.hpp"
#include "gpumem/result.hpp"
#include "gpumem/runtime/software_stack.hpp"
#include "model/config_reader.hpp"

namespace gpumem {

inline const nlohmann::ordered_json& member(const nlohmann::ordered_json& request,
                                            const char* key) {
  return member_object(request, key);
}

// request.invalid_type when `key` of `request` (at `where`, "" at the top) is neither an object
// nor absent (missing or null).
std::optional<error> check_object(const nlohmann::ordered_json& request, const char* key,
                                  const std::string& where = "");

// workload.software: the releases of `libraries` (each name and where its release goes), each a
// PEP 440 version; another library is request.unknown_field, a malformed release
// request.invalid_value ("a release such as `example`"). `object_example` shows the object.
struct library_slot {
  const char* name;
  std::optional<library_release>* release;
};
std::optional<error> read_library_releases(const nlohmann::ordered_json& workload,
                                           std::initializer_list<library_slot> libraries,
                                           const std::string& object_example,
                                           const std::string& example);

// Learned absolute positions stop at max_position_embeddings; rotary models only degrade.
std::optional<error> check_seq_len(const model_spec& model, std::uint64_t seq_len,
                                   std::vector<std::string>& warnings);

}  // namespace gpumem
