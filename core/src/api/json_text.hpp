#pragma once
// An answer's tree written as compact JSON text, byte for byte what nlohmann's
// dump(-1, ' ', false, error_handler_t::replace) writes, without its serializer's per-node
// dispatch: plain ASCII strings (nearly all of an answer) are copied as they are, numbers go
// through nlohmann's own shortest round-trip formatting, and anything else (a string with control
// characters, non-ASCII or invalid UTF-8) is written by nlohmann itself.

#include <nlohmann/json.hpp>
#include <string>

namespace gpumem {

void append_json_text(std::string& out, const nlohmann::ordered_json& value);

// An empty object with room for `members` keys. nlohmann's ordered objects are vectors whose
// entries (a const key and a value) are copied, not moved, when the vector grows: an answer
// object that outgrew its capacity deep-copied every subtree already in it.
nlohmann::ordered_json json_object(std::size_t members);

// Text an error echoes from the request, cut to a readable length at a character's start (a 10 MB
// key made a 20 MB error).
std::string readable(const std::string& text, std::size_t limit);

// An object's members, for appending keys it does not have yet: no search for the key and none of
// the deep copies nlohmann's initializer lists make of every nested value (a tenth of an LLMem
// answer's time went to building its cluster object that way).
inline nlohmann::ordered_json::object_t& members_of(nlohmann::ordered_json& object) {
  return object.get_ref<nlohmann::ordered_json::object_t&>();
}

}  // namespace gpumem
