// libFuzzer target for the JSON API (scripts/fuzz.sh builds and runs it with clang): any bytes in,
// and the answer must keep the API's promises — valid JSON with a boolean `ok`; an error with a
// string code and message; no negative `*_bytes` and no integer above 2^53 anywhere. A broken
// promise aborts, which the fuzzer reports with the input that broke it.
#include <cstdint>
#include <cstdlib>
#include <nlohmann/json.hpp>
#include <string>

#include "gpumem/api/json_api.hpp"

namespace {

using nlohmann::json;

constexpr std::uint64_t exact = 1ULL << 53;

void check(bool promise) {
  if (!promise) std::abort();
}

void check_numbers(const json& value, const std::string& key) {
  if (value.is_number_unsigned()) check(value.get<std::uint64_t>() <= exact);
  if (value.is_number_integer() && !value.is_number_unsigned()) {
    const std::int64_t n = value.get<std::int64_t>();
    check(n <= static_cast<std::int64_t>(exact) && n >= -static_cast<std::int64_t>(exact));
    if (key.size() > 6 && key.compare(key.size() - 6, 6, "_bytes") == 0) check(n >= 0);
  }
  if (value.is_number_float() && key.size() > 6 && key.compare(key.size() - 6, 6, "_bytes") == 0)
    check(value.get<double>() >= 0);
  if (value.is_object()) {
    for (const auto& [k, v] : value.items()) check_numbers(v, k);
  } else if (value.is_array()) {
    for (const auto& v : value) check_numbers(v, key);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string request(reinterpret_cast<const char*>(data), size);
  const json answer = json::parse(gpumem::handle_request(request), nullptr, false);
  check(!answer.is_discarded() && answer.is_object());
  check(answer.contains("ok") && answer.at("ok").is_boolean());
  if (answer.at("ok") == false) {
    const json& e = answer.at("error");
    check(e.is_object() && e.contains("code") && e.at("code").is_string());
    check(e.contains("message") && e.at("message").is_string());
    check(!e.at("code").get<std::string>().empty());
  } else {
    check(answer.contains("result"));
  }
  check_numbers(answer, "");
  return 0;
}
