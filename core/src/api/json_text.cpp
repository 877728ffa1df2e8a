#include "api/json_text.hpp"

#include <array>
#include <charconv>
#include <cmath>

namespace gpumem {

using json = nlohmann::ordered_json;

namespace {

// A string nlohmann writes unchanged between its quotes: printable ASCII, no quote or backslash.
bool plain_ascii(const std::string& text) {
  for (const char ch : text) {
    const auto byte = static_cast<unsigned char>(ch);
    if (byte < 0x20 || byte > 0x7E || ch == '"' || ch == '\\') return false;
  }
  return true;
}

void append_string(std::string& out, const std::string& text) {
  if (plain_ascii(text)) {
    out += '"';
    out += text;
    out += '"';
    return;
  }
  out += json(text).dump(-1, ' ', false, json::error_handler_t::replace);
}

template <typename Integer>
void append_integer(std::string& out, Integer value) {
  std::array<char, 24> digits{};
  const auto written = std::to_chars(digits.data(), digits.data() + digits.size(), value);
  out.append(digits.data(), written.ptr);
}

void append_float(std::string& out, double value) {
  // nlohmann's serializer::dump_float: non-finite numbers are null, the rest its Grisu2 text.
  if (!std::isfinite(value)) {
    out += "null";
    return;
  }
  std::array<char, 64> digits{};
  char* end = nlohmann::detail::to_chars(digits.data(), digits.data() + digits.size(), value);
  out.append(digits.data(), end);
}

}  // namespace

json json_object(std::size_t members) {
  json out = json::object();
  out.get_ref<json::object_t&>().reserve(members);
  return out;
}

void append_json_text(std::string& out, const json& value) {
  switch (value.type()) {
    case json::value_t::null:
      out += "null";
      return;
    case json::value_t::boolean:
      out += value.get<bool>() ? "true" : "false";
      return;
    case json::value_t::number_integer:
      append_integer(out, value.get<std::int64_t>());
      return;
    case json::value_t::number_unsigned:
      append_integer(out, value.get<std::uint64_t>());
      return;
    case json::value_t::number_float:
      append_float(out, value.get<double>());
      return;
    case json::value_t::string:
      append_string(out, value.get_ref<const std::string&>());
      return;
    case json::value_t::object: {
      out += '{';
      bool first = true;
      for (const auto& [key, item] : value.items()) {
        if (!first) out += ',';
        first = false;
        append_string(out, key);
        out += ':';
        append_json_text(out, item);
      }
      out += '}';
      return;
    }
    case json::value_t::array: {
      out += '[';
      bool first = true;
      for (const auto& item : value) {
        if (!first) out += ',';
        first = false;
        append_json_text(out, item);
      }
      out += ']';
      return;
    }
    default:  // binary and discarded values: never in an answer; nlohmann writes them
      out += value.dump(-1, ' ', false, json::error_handler_t::replace);
      return;
  }
}

}  // namespace gpumem
