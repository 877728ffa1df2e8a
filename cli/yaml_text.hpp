#pragma once
// A JSON tree written as YAML by libyaml's emitter (Debian's libyaml-dev): block style, keys in
// order, and a string quoted wherever YAML 1.1 would read it as something else ('no', '1.0').

#include <nlohmann/json.hpp>
#include <string>

namespace gpumem::cli {

// The YAML text, or "" when the emitter fails (it does not for a JSON tree).
std::string yaml_text(const nlohmann::ordered_json& tree);

// A YAML document read by libyaml's parser into a JSON tree: mappings, sequences, and plain
// scalars resolved as YAML 1.1 resolves them (null, booleans, integers, floats), quoted ones as
// strings. False with `problem` (libyaml's message and line) for text that is not YAML.
bool yaml_tree(const std::string& text, nlohmann::ordered_json& tree, std::string& problem);

}  // namespace gpumem::cli
