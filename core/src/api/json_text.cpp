#include "api/json_text.hpp"

#include <array>
#include <charconv>
#include <cmath>
#include <vector>

namespace gpumem {

using json = nlohmann::ordered_json;

namespace {

// The text as it grows: a vector, whose appends inline (std::string's are calls into the
// standard library's compiled instantiation under Emscripten: a fifth of a params answer's time).
class writer {
 public:
  writer() { text_.reserve(4096); }
  void put(char ch) { text_.push_back(ch); }
  void put(const char* data, std::size_t size) { text_.insert(text_.end(), data, data + size); }
  void put(const std::string& text) { put(text.data(), text.size()); }
  const std::vector<char>& text() const { return text_; }

  void value(const json& v);

 private:
  void string(const std::string& text);
  template <typename Integer>
  void integer(Integer v) {
    std::array<char, 24> digits{};
    const auto written = std::to_chars(digits.data(), digits.data() + digits.size(), v);
    put(digits.data(), static_cast<std::size_t>(written.ptr - digits.data()));
  }
  void floating(double v);
  std::vector<char> text_;
};

// A string nlohmann writes unchanged between its quotes: printable ASCII, no quote or backslash.
bool plain_ascii(const std::string& text) {
  for (const char ch : text) {
    const auto byte = static_cast<unsigned char>(ch);
    if (byte < 0x20 || byte > 0x7E || ch == '"' || ch == '\\') return false;
  }
  return true;
}

void writer::string(const std::string& text) {
  if (plain_ascii(text)) {
    put('"');
    put(text);
    put('"');
    return;
  }
  put(json(text).dump(-1, ' ', false, json::error_handler_t::replace));
}

void writer::floating(double v) {
  // nlohmann's serializer::dump_float: non-finite numbers are null, the rest its Grisu2 text.
  if (!std::isfinite(v)) {
    put("null", 4);
    return;
  }
  std::array<char, 64> digits{};
  char* end = nlohmann::detail::to_chars(digits.data(), digits.data() + digits.size(), v);
  put(digits.data(), static_cast<std::size_t>(end - digits.data()));
}

void writer::value(const json& v) {
  switch (v.type()) {
    case json::value_t::null:
      put("null", 4);
      return;
    case json::value_t::boolean:
      if (v.get<bool>()) {
        put("true", 4);
      } else {
        put("false", 5);
      }
      return;
    case json::value_t::number_integer:
      integer(v.get<std::int64_t>());
      return;
    case json::value_t::number_unsigned:
      integer(v.get<std::uint64_t>());
      return;
    case json::value_t::number_float:
      floating(v.get<double>());
      return;
    case json::value_t::string:
      string(v.get_ref<const std::string&>());
      return;
    case json::value_t::object: {
      put('{');
      bool first = true;
      for (const auto& [key, item] : v.get_ref<const json::object_t&>()) {
        if (!first) put(',');
        first = false;
        string(key);
        put(':');
        value(item);
      }
      put('}');
      return;
    }
    case json::value_t::array: {
      put('[');
      bool first = true;
      for (const auto& item : v.get_ref<const json::array_t&>()) {
        if (!first) put(',');
        first = false;
        value(item);
      }
      put(']');
      return;
    }
    default:  // binary and discarded values: never in an answer; nlohmann writes them
      put(v.dump(-1, ' ', false, json::error_handler_t::replace));
      return;
  }
}

}  // namespace

json json_object(std::size_t members) {
  json out = json::object();
  out.get_ref<json::object_t&>().reserve(members);
  return out;
}

void append_json_text(std::string& out, const json& value) {
  writer w;
  w.value(value);
  out.append(w.text().data(), w.text().size());
}

}  // namespace gpumem
