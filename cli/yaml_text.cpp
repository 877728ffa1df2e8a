#include "yaml_text.hpp"

#include <yaml.h>

#include <regex>

namespace gpumem::cli {

namespace {

using json = nlohmann::ordered_json;

// Plain scalars YAML 1.1 resolves to a boolean, null or number (its core types): a string that
// looks like one is quoted.
bool reads_as_other_type(const std::string& text) {
  static const std::regex other(
      "^(y|Y|yes|Yes|YES|n|N|no|No|NO|true|True|TRUE|false|False|FALSE|on|On|ON|off|Off|OFF|"
      "null|Null|NULL|~|[-+]?[0-9][0-9_]*(\\.[0-9_]*)?([eE][-+]?[0-9]+)?|[-+]?\\.[0-9]+|"
      "[-+]?\\.(inf|Inf|INF)|\\.(nan|NaN|NAN))$");
  return text.empty() || std::regex_match(text, other);
}

struct emitter {
  yaml_emitter_t yaml{};
  std::string out;
  bool ok = true;

  static int write(void* data, unsigned char* buffer, size_t size) {
    static_cast<emitter*>(data)->out.append(reinterpret_cast<const char*>(buffer), size);
    return 1;
  }
  void emit(yaml_event_t& event) { ok = ok && yaml_emitter_emit(&yaml, &event) == 1; }

  void scalar(const std::string& text, bool plain) {
    yaml_event_t event;
    auto* value = reinterpret_cast<yaml_char_t*>(const_cast<char*>(text.c_str()));
    yaml_scalar_event_initialize(&event, nullptr, nullptr, value, static_cast<int>(text.size()),
                                 plain ? 1 : 0, 1,
                                 plain ? YAML_PLAIN_SCALAR_STYLE : YAML_ANY_SCALAR_STYLE);
    emit(event);
  }

  void string(const std::string& text) { scalar(text, !reads_as_other_type(text)); }

  void node(const json& value) {
    yaml_event_t event;
    if (value.is_object()) {
      yaml_mapping_start_event_initialize(&event, nullptr, nullptr, 1, YAML_BLOCK_MAPPING_STYLE);
      emit(event);
      for (const auto& item : value.items()) {
        string(item.key());
        node(item.value());
      }
      yaml_mapping_end_event_initialize(&event);
      emit(event);
    } else if (value.is_array()) {
      yaml_sequence_start_event_initialize(&event, nullptr, nullptr, 1, YAML_BLOCK_SEQUENCE_STYLE);
      emit(event);
      for (const auto& item : value) node(item);
      yaml_sequence_end_event_initialize(&event);
      emit(event);
    } else if (value.is_string()) {
      string(value.get<std::string>());
    } else {
      scalar(value.is_null() ? "null" : value.dump(), true);  // numbers and booleans as JSON
    }
  }
};

}  // namespace

std::string yaml_text(const json& tree) {
  emitter e;
  yaml_emitter_initialize(&e.yaml);
  yaml_emitter_set_output(&e.yaml, &emitter::write, &e);
  yaml_emitter_set_unicode(&e.yaml, 1);
  yaml_event_t event;
  yaml_stream_start_event_initialize(&event, YAML_UTF8_ENCODING);
  e.emit(event);
  yaml_document_start_event_initialize(&event, nullptr, nullptr, nullptr, 1);
  e.emit(event);
  e.node(tree);
  yaml_document_end_event_initialize(&event, 1);
  e.emit(event);
  yaml_stream_end_event_initialize(&event);
  e.emit(event);
  yaml_emitter_delete(&e.yaml);
  return e.ok ? e.out : std::string();
}

}  // namespace gpumem::cli
