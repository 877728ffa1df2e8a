#pragma once
// Typed, range-checked access to a config.json object. Every getter records the first problem
// (a wrong type or an out-of-range value) and every missing required key, so that one parse
// reports all missing keys at once and never throws (architecture.md "Errors").

#include <cstdint>
#include <initializer_list>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "gpumem/result.hpp"

namespace gpumem {

// Accepted ranges for config dimensions: far above any published model (Llama-3.1-405B has
// hidden 16384, 126 layers, vocab 128256; DeepSeek-V3 256 experts), low enough that no tensor
// size overflows 64 bits.
inline constexpr std::uint64_t max_width = 1ULL << 20;  // hidden, intermediate, head dims
inline constexpr std::uint64_t max_vocab = 1ULL << 24;
inline constexpr std::uint64_t max_layers = 1ULL << 12;
inline constexpr std::uint64_t max_heads = 1ULL << 16;
inline constexpr std::uint64_t max_experts = 1ULL << 16;
inline constexpr std::uint64_t max_positions = 1ULL << 27;

class config_reader {
 public:
  // `code_prefix` starts the error codes ("config" or "request").
  config_reader(const nlohmann::ordered_json& config, std::string field_prefix,
                std::string code_prefix = "config");

  bool has(const char* key) const;      // present and not null
  bool present(const char* key) const;  // present, null or not

  // The first of `keys` that is present must be an integer in [1, max]; if none is, the first
  // key is reported missing and 0 returned.
  std::uint64_t required(std::initializer_list<const char*> keys, std::uint64_t max);
  // Same, but `fallback` when none is present; `min` may be 0.
  std::uint64_t optional(std::initializer_list<const char*> keys, std::uint64_t fallback,
                         std::uint64_t max, std::uint64_t min = 1);
  bool flag(const char* key, bool fallback);
  // A probability in [0, 1] (dropout), else `fallback`: the model's config-class default.
  double fraction(std::initializer_list<const char*> keys, double fallback = 0.0);
  // A number in [min, max] (max exclusive of nothing: both ends accepted), else `fallback`.
  double number(const char* key, double fallback, double min, double max);
  std::string text(const char* key, const std::string& fallback);
  std::vector<std::uint64_t> index_list(const char* key, std::uint64_t max);
  std::vector<std::string> text_list(const char* key);
  // How many items a key that takes one item or a list of them holds (1 when absent).
  std::size_t items(const char* key) const;

  void fail(std::string code, const std::string& key, std::string message);
  // A value outside [min, max]: the error carries the range too.
  void fail_range(const std::string& key, std::string message, double min, double max);
  std::string field(const std::string& key) const { return prefix_ + "." + key; }

  // The problems found, missing keys first; empty when the config was read cleanly. `purpose`
  // ends the missing-keys message, e.g. "required for model_type 'opt'".
  std::optional<error> problem(const std::string& purpose) const;

 private:
  const nlohmann::ordered_json* find(std::initializer_list<const char*> keys,
                                     const char** found) const;
  std::uint64_t integer(const nlohmann::ordered_json& value, const char* key, std::uint64_t min,
                        std::uint64_t max);

  const nlohmann::ordered_json& config_;
  std::string prefix_;
  std::string code_prefix_;
  std::vector<std::string> missing_;
  std::optional<error> first_;
};

// One of `accepted` for `key` of the object `in` reads, else `fallback`; a value outside the
// list is recorded as a request.invalid_value naming them (requests alone choose among names).
std::optional<std::string> choose(config_reader& in, const char* key, const std::string& fallback,
                                  std::initializer_list<const char*> accepted);

}  // namespace gpumem
