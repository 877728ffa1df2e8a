// The KV cache kinds' and serving frameworks' names, as requests and answers write them.
#include <optional>
#include <string>
#include <utility>

#include "gpumem/inference/inference_step.hpp"

namespace gpumem {

namespace {

constexpr std::pair<const char*, kv_cache_kind> kv_kinds[] = {
    {"static", kv_cache_kind::static_cache},
    {"dynamic", kv_cache_kind::dynamic},
    {"paged", kv_cache_kind::paged}};
constexpr std::pair<const char*, serving_framework> frameworks[] = {
    {"transformers", serving_framework::transformers},
    {"litgpt", serving_framework::litgpt},
    {"vllm", serving_framework::vllm},
    {"llama_cpp", serving_framework::llama_cpp},
    {"autoawq", serving_framework::autoawq}};

template <typename T, std::size_t N>
std::optional<T> named(const std::pair<const char*, T> (&table)[N], const std::string& name) {
  for (const auto& [n, value] : table) {
    if (name == n) return value;
  }
  return std::nullopt;
}

template <typename T, std::size_t N>
const char* name_of(const std::pair<const char*, T> (&table)[N], T value) {
  for (const auto& [n, v] : table) {
    if (value == v) return n;
  }
  return table[0].first;
}

}  // namespace

std::optional<kv_cache_kind> kv_cache_kind_named(const std::string& name) {
  return named(kv_kinds, name);
}
const char* kv_cache_kind_name(kv_cache_kind kind) { return name_of(kv_kinds, kind); }
std::optional<serving_framework> serving_framework_named(const std::string& name) {
  return named(frameworks, name);
}
const char* serving_framework_name(serving_framework framework) {
  return name_of(frameworks, framework);
}

}  // namespace gpumem
