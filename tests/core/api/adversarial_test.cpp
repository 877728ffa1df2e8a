// The adversarial corpus (tests/adversarial/requests.json, tools/adversarial/generate.py): every
// hostile request gets the outcome docs/api.md promises — an answer, or a coded error naming its
// field — and never a crash, here natively, under ASan+UBSan and in wasm. (Cases marked heavy take
// about a second in an optimised build: the facade's test and scripts/bench.sh run them.)

#include <doctest/doctest.h>

#include <string>

#include "gpumem/api/json_api.hpp"
#include "test_files.hpp"

namespace gpumem {
namespace {

using nlohmann::json;

std::string request_text(const json& c) {
  if (c.contains("request")) return c.at("request").dump();
  std::string text = c.at("raw").get<std::string>();
  if (c.contains("repeat")) {
    const json& r = c.at("repeat");
    const std::string piece = r.at("text").get<std::string>();
    text = r.at("before").get<std::string>();
    text.reserve(piece.size() * r.at("times").get<std::size_t>() + 64);
    for (std::size_t i = 0; i < r.at("times").get<std::size_t>(); ++i) text += piece;
    text += r.at("after").get<std::string>();
  }
  return text;
}

TEST_CASE("every hostile request gets the promised outcome") {
  const json corpus = test::read_json("tests/adversarial/requests.json");
  REQUIRE(corpus.at("cases").size() > 250);
  std::size_t run = 0;
  for (const json& c : corpus.at("cases")) {
    if (c.value("heavy", false)) continue;
    CAPTURE(c.at("name").get<std::string>());
    const std::string response = handle_request(request_text(c));
    const json answer = json::parse(response, nullptr, false);
    REQUIRE_FALSE(answer.is_discarded());
    const json& expect = c.at("expect");
    CHECK(answer.at("ok") == expect.at("ok"));
    if (expect.contains("code") && answer.at("ok") == false) {
      CHECK(answer.at("error").at("code") == expect.at("code"));
      if (expect.contains("field")) CHECK(answer.at("error").at("field") == expect.at("field"));
      if (expect.contains("range")) CHECK(answer.at("error").contains("range"));
    }
    if (expect.contains("max_response_bytes"))
      CHECK(response.size() <= expect.at("max_response_bytes").get<std::size_t>());
    if (expect.contains("limited_by") && answer.at("ok") == true)
      CHECK(answer.at("result").at("solution").at("limited_by") == expect.at("limited_by"));
    if (expect.contains("points") && answer.at("ok") == true)
      CHECK(answer.at("result").at("points").size() == expect.at("points"));
    ++run;
  }
  CHECK(run > 250);
}

}  // namespace
}  // namespace gpumem
