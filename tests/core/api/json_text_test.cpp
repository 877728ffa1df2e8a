// The answers' JSON writer against nlohmann's own dump: the same bytes for every kind of value,
// including the strings it hands back to nlohmann (escapes, non-ASCII, invalid UTF-8).

#include "api/json_text.hpp"

#include <doctest/doctest.h>

#include <limits>

namespace gpumem {
namespace {

using json = nlohmann::ordered_json;

std::string written(const json& value) {
  std::string out;
  append_json_text(out, value);
  return out;
}

std::string dumped(const json& value) {
  return value.dump(-1, ' ', false, json::error_handler_t::replace);
}

TEST_CASE("the answers' JSON text is nlohmann's dump, byte for byte") {
  json value = json::object();
  value["null"] = nullptr;
  value["flags"] = {true, false};
  value["integers"] = {0, -1, 42, std::numeric_limits<std::int64_t>::min(),
                       std::numeric_limits<std::int64_t>::max()};
  value["unsigned"] = std::numeric_limits<std::uint64_t>::max();
  value["floats"] = {0.0,
                     -0.0,
                     1.0,
                     0.1,
                     1e-7,
                     2.297908367763175,
                     1e300,
                     123456789012345680.0,
                     std::numeric_limits<double>::quiet_NaN(),
                     std::numeric_limits<double>::infinity()};
  value["plain"] = "Llama-3.1-8B on one RTX 4090: 24 GiB (fits)";
  value["escapes"] = "quote \" backslash \\ tab \t newline \n bell \x07 delete \x7f";
  value["utf-8"] = "≈ 1,594 tokens/s — Grüße";
  value["invalid utf-8"] = std::string("cut \xE2\x89 here \xFF");
  value["key \"quoted\""] = json::array();
  value["nested"] = {{"empty", json::object()}, {"list", {json::object(), json::array(), "x"}}};
  CHECK(written(value) == dumped(value));
  for (const auto& member : value.items()) {
    const std::string name = member.key();
    CAPTURE(name);
    CHECK(written(member.value()) == dumped(member.value()));
  }
}

TEST_CASE("UTF-8 is written unchanged exactly where nlohmann would: every edge of RFC 3629") {
  // Well-formed: the lowest and highest of each length, U+007F, U+D7FF and U+E000 around the
  // surrogates, U+10FFFF. Ill-formed: overlong forms, surrogates, above U+10FFFF, cut sequences,
  // stray continuation bytes, bytes that never start a sequence.
  const char* const texts[] = {"\x7f",
                               "\xC2\x80",
                               "\xDF\xBF",
                               "\xE0\xA0\x80",
                               "\xEF\xBF\xBF",
                               "\xED\x9F\xBF",
                               "\xEE\x80\x80",
                               "\xF0\x90\x80\x80",
                               "\xF4\x8F\xBF\xBF",
                               "\xC0\xAF",
                               "\xC1\xBF",
                               "\xE0\x9F\xBF",
                               "\xED\xA0\x80",
                               "\xF0\x8F\xBF\xBF",
                               "\xF4\x90\x80\x80",
                               "\xF5\x80\x80\x80",
                               "\xE2\x89",
                               "\xF0\x90\x80",
                               "\x80",
                               "\xBF",
                               "\xFE",
                               "\xFF",
                               "a\xC3",
                               "\xC3(",
                               "tab\tand \xE2\x80\x94 dash"};
  for (const char* text : texts) {
    const json value = std::string(text);
    CAPTURE(dumped(value));
    CHECK(written(value) == dumped(value));
  }
}

TEST_CASE(
    "a byte to escape or check is found wherever it falls in a string read 8 bytes at a time") {
  // Every kind of byte the plain-ASCII test must stop at (each of the quotes, the edges of the
  // control characters and of ASCII, a UTF-8 lead and a continuation byte) at every position of
  // strings of 1 to 24 bytes, and its neighbours that must pass ('!', '#', '[', ']', ' ', '~').
  const unsigned char probes[] = {'"',  '\\', 0x00, 0x1F, 0x7F, 0x80, 0xC3, 0xA9,
                                  0xFF, '!',  '#',  '[',  ']',  ' ',  '~'};
  for (std::size_t length = 1; length <= 24; ++length) {
    for (std::size_t at = 0; at < length; ++at) {
      for (const unsigned char probe : probes) {
        std::string text(length, 'a');
        text[at] = static_cast<char>(probe);
        const json value = text;
        CAPTURE(length);
        CAPTURE(at);
        CAPTURE(static_cast<unsigned>(probe));
        CHECK(written(value) == dumped(value));
      }
    }
  }
}

TEST_CASE("a long answer grows the text, after what the string held already") {
  json value = json::array();
  for (int i = 0; i < 2000; ++i)
    value.push_back({{"index", i}, {"name", "block " + std::to_string(i)}});
  std::string out = "prefix:";
  append_json_text(out, value);
  CHECK(out.size() > 4096 * 4);
  CHECK(out == "prefix:" + dumped(value));
}

}  // namespace
}  // namespace gpumem
