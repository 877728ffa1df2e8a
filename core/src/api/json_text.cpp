#include "api/json_text.hpp"

#include <algorithm>
#include <array>
#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>

namespace gpumem {

using json = nlohmann::ordered_json;

namespace {

// The text as it grows, written straight into the answer's string: its room is made (resize) only
// when a write would pass the end, and each write is a copy to a raw pointer (std::string's and
// std::vector's appends are calls into the standard library's compiled code under Emscripten, and
// vector's range insert was a fifth of a params answer's writing).
class writer {
 public:
  // Room for 4 KB at first: the bench's params, LLMem, detailed and inference answers are 1.1-2.9
  // KB; a plan's grows the text a few times.
  explicit writer(std::string& out) : out_(out), used_(out.size()) { out_.resize(used_ + 4096); }
  ~writer() { out_.resize(used_); }
  writer(const writer&) = delete;
  writer& operator=(const writer&) = delete;

  void put(char ch) {
    if (used_ == out_.size()) grow(1);
    out_[used_++] = ch;
  }
  void put(const char* data, std::size_t size) {
    if (size > out_.size() - used_) grow(size);
    std::memcpy(&out_[used_], data, size);
    used_ += size;
  }
  void put(const std::string& text) { put(text.data(), text.size()); }

  void value(const json& v);

 private:
  void grow(std::size_t more) { out_.resize(std::max(2 * out_.size(), used_ + more)); }
  void string(const std::string& text);
  template <typename Integer>
  void integer(Integer v) {
    std::array<char, 24> digits{};
    const auto written = std::to_chars(digits.data(), digits.data() + digits.size(), v);
    put(digits.data(), static_cast<std::size_t>(written.ptr - digits.data()));
  }
  void floating(double v);
  std::string& out_;
  std::size_t used_;
};

// The length of the well-formed UTF-8 sequence starting at `at` (RFC 3629: no overlong forms,
// no surrogates, nothing above U+10FFFF), or 0 when it is not one.
std::size_t utf8_sequence(const std::string& text, std::size_t at) {
  const auto byte = [&](std::size_t i) {
    return i < text.size() ? static_cast<unsigned char>(text[i]) : 0U;
  };
  const unsigned lead = byte(at);
  const auto continuation = [&](std::size_t i, unsigned low = 0x80, unsigned high = 0xBF) {
    return byte(i) >= low && byte(i) <= high;
  };
  if (lead >= 0xC2 && lead <= 0xDF) return continuation(at + 1) ? 2 : 0;
  if (lead >= 0xE0 && lead <= 0xEF) {
    const unsigned low = lead == 0xE0 ? 0xA0 : 0x80;
    const unsigned high = lead == 0xED ? 0x9F : 0xBF;
    return continuation(at + 1, low, high) && continuation(at + 2) ? 3 : 0;
  }
  if (lead >= 0xF0 && lead <= 0xF4) {
    const unsigned low = lead == 0xF0 ? 0x90 : 0x80;
    const unsigned high = lead == 0xF4 ? 0x8F : 0xBF;
    return continuation(at + 1, low, high) && continuation(at + 2) && continuation(at + 3) ? 4 : 0;
  }
  return 0;
}

// Whether any of the eight bytes of `word` is below 0x20, is '"' or '\\', or has its top bit set
// (not ASCII): the zero-byte test of Anderson's "Bit Twiddling Hacks" (Stanford), "Determine if a
// word has a byte less than n", applied to the word and to the word xor each quote byte.
bool plain_ascii_word(std::uint64_t word) {
  constexpr std::uint64_t ones = 0x0101010101010101ULL;
  constexpr std::uint64_t highs = 0x8080808080808080ULL;
  const auto has_below = [](std::uint64_t x, std::uint64_t n) {
    return (x - ones * n) & ~x & highs;
  };
  const std::uint64_t special = (word & highs) | has_below(word, 0x20) |
                                has_below(word ^ (ones * '"'), 1) |
                                has_below(word ^ (ones * '\\'), 1);
  return special == 0;
}

// A string nlohmann writes unchanged between its quotes (dump without ensure_ascii): well-formed
// UTF-8 with no control character, quote or backslash. Eight bytes at a time while they are plain
// ASCII (nearly every string of an answer), then byte by byte.
bool written_unchanged(const std::string& text) {
  std::size_t at = 0;
  for (; at + 8 <= text.size(); at += 8) {
    std::uint64_t word = 0;
    std::memcpy(&word, text.data() + at, 8);
    if (!plain_ascii_word(word)) break;
  }
  while (at < text.size()) {
    const auto byte = static_cast<unsigned char>(text[at]);
    if (byte < 0x80) {
      if (byte < 0x20 || byte == '"' || byte == '\\') return false;
      ++at;
      continue;
    }
    const std::size_t length = utf8_sequence(text, at);
    if (length == 0) return false;
    at += length;
  }
  return true;
}

void writer::string(const std::string& text) {
  if (written_unchanged(text)) {
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

std::string readable(const std::string& text, std::size_t limit) {
  if (text.size() <= limit) return text;
  std::size_t cut = limit;
  while (cut > 0 && (static_cast<unsigned char>(text[cut]) & 0xC0) == 0x80) --cut;
  return text.substr(0, cut) + "…";
}

json json_object(std::size_t members) {
  json out = json::object();
  out.get_ref<json::object_t&>().reserve(members);
  return out;
}

void append_json_text(std::string& out, const json& value) {
  writer w(out);
  w.value(value);
}

}  // namespace gpumem
