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

// A plain scalar's value as YAML 1.1 resolves it (PyYAML's resolver, which accelerate and axolotl
// read their files with).
json plain_scalar(const std::string& text) {
  static const std::regex null_value("^(~|null|Null|NULL|)$");
  static const std::regex true_value("^(y|Y|yes|Yes|YES|true|True|TRUE|on|On|ON)$");
  static const std::regex false_value("^(n|N|no|No|NO|false|False|FALSE|off|Off|OFF)$");
  static const std::regex integer("^[-+]?[0-9][0-9_]*$");
  static const std::regex real(
      "^[-+]?([0-9][0-9_]*)?\\.[0-9_]*([eE][-+][0-9]+)?$|^[-+]?[0-9][0-9_]*[eE][-+]?[0-9]+$");
  if (std::regex_match(text, null_value)) return nullptr;
  if (std::regex_match(text, true_value)) return true;
  if (std::regex_match(text, false_value)) return false;
  std::string digits;
  for (char ch : text) {
    if (ch != '_') digits += ch;
  }
  if (std::regex_match(text, integer)) {
    const json number =
        json::parse(digits.front() == '+' ? digits.substr(1) : digits, nullptr, false);
    if (!number.is_discarded()) return number;
  }
  if (std::regex_match(text, real)) {
    char* end = nullptr;
    const double value = std::strtod(digits.c_str(), &end);
    if (end && *end == '\0') return value;
  }
  return text;
}

json node_tree(yaml_document_t& doc, yaml_node_t* node, int depth) {
  if (!node || depth > 64) return nullptr;
  if (node->type == YAML_SCALAR_NODE) {
    const std::string text(reinterpret_cast<const char*>(node->data.scalar.value),
                           node->data.scalar.length);
    return node->data.scalar.style == YAML_PLAIN_SCALAR_STYLE ? plain_scalar(text) : json(text);
  }
  if (node->type == YAML_SEQUENCE_NODE) {
    json out = json::array();
    for (yaml_node_item_t* item = node->data.sequence.items.start;
         item < node->data.sequence.items.top; ++item) {
      out.push_back(node_tree(doc, yaml_document_get_node(&doc, *item), depth + 1));
    }
    return out;
  }
  json out = json::object();
  for (yaml_node_pair_t* pair = node->data.mapping.pairs.start; pair < node->data.mapping.pairs.top;
       ++pair) {
    const json key = node_tree(doc, yaml_document_get_node(&doc, pair->key), depth + 1);
    out[key.is_string() ? key.get<std::string>() : key.dump()] =
        node_tree(doc, yaml_document_get_node(&doc, pair->value), depth + 1);
  }
  return out;
}

}  // namespace

bool yaml_tree(const std::string& text, json& tree, std::string& problem) {
  yaml_parser_t parser;
  yaml_parser_initialize(&parser);
  yaml_parser_set_input_string(&parser, reinterpret_cast<const unsigned char*>(text.data()),
                               text.size());
  yaml_document_t doc;
  const bool loaded = yaml_parser_load(&parser, &doc) == 1;
  if (!loaded) {
    problem = std::string(parser.problem ? parser.problem : "not YAML") + " at line " +
              std::to_string(parser.problem_mark.line + 1);
    yaml_parser_delete(&parser);
    return false;
  }
  tree = node_tree(doc, yaml_document_get_root_node(&doc), 0);
  yaml_document_delete(&doc);
  yaml_parser_delete(&parser);
  return true;
}

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
