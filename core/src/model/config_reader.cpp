#include "model/config_reader.hpp"

#include <cmath>
#include <nlohmann/json.hpp>

namespace gpumem {

using json = nlohmann::ordered_json;

namespace {

std::string shown(const json& value) {
  // ASCII (\u escapes), so that cutting it never splits a multi-byte UTF-8 character.
  std::string text = value.dump(-1, ' ', true);
  return text.size() > 40 ? text.substr(0, 37) + "..." : text;
}

}  // namespace

config_reader::config_reader(const json& config, std::string field_prefix, std::string code_prefix)
    : config_(config), prefix_(std::move(field_prefix)), code_prefix_(std::move(code_prefix)) {}

bool config_reader::has(const char* key) const {
  auto it = config_.find(key);
  return it != config_.end() && !it->is_null();
}

bool config_reader::present(const char* key) const { return config_.contains(key); }

const json* config_reader::find(std::initializer_list<const char*> keys, const char** found) const {
  for (const char* key : keys) {
    if (has(key)) {
      *found = key;
      return &config_.at(key);
    }
  }
  return nullptr;
}

void config_reader::fail(std::string code, const std::string& key, std::string message) {
  if (!first_) first_ = error{std::move(code), field(key), std::move(message)};
}

void config_reader::fail_range(const std::string& key, std::string message, double min,
                               double max) {
  if (first_) return;
  fail(code_prefix_ + ".invalid_value", key, std::move(message));
  first_->has_range = true;
  first_->range_min = min;
  first_->range_max = max;
}

std::uint64_t config_reader::integer(const json& value, const char* key, std::uint64_t min,
                                     std::uint64_t max) {
  bool whole = value.is_number_integer();
  if (value.is_number_float()) {
    double v = value.get<double>();
    whole = std::isfinite(v) && v == std::floor(v) && std::fabs(v) < 9.0e15;
  }
  bool in_range = false;
  std::uint64_t result = 0;
  if (whole) {
    double as_double = value.get<double>();
    if (value.is_number_unsigned()) {
      result = value.get<std::uint64_t>();
      in_range = result >= min && result <= max;
    } else if (as_double >= static_cast<double>(min) && as_double <= static_cast<double>(max)) {
      result = static_cast<std::uint64_t>(value.get<std::int64_t>());
      in_range = true;
    }
  }
  if (!in_range) {
    fail_range(key,
               "[" + field(key) + "] must be an integer in " + std::to_string(min) + ".." +
                   std::to_string(max) + ", got " + shown(value),
               static_cast<double>(min), static_cast<double>(max));
    return min;
  }
  return result;
}

std::uint64_t config_reader::required(std::initializer_list<const char*> keys, std::uint64_t max) {
  const char* key = nullptr;
  const json* value = find(keys, &key);
  if (value == nullptr) {
    missing_.emplace_back(*keys.begin());
    return 0;
  }
  return integer(*value, key, 1, max);
}

std::uint64_t config_reader::optional(std::initializer_list<const char*> keys,
                                      std::uint64_t fallback, std::uint64_t max,
                                      std::uint64_t min) {
  const char* key = nullptr;
  const json* value = find(keys, &key);
  return value == nullptr ? fallback : integer(*value, key, min, max);
}

bool config_reader::flag(const char* key, bool fallback) {
  if (!has(key)) return fallback;
  const json& value = config_.at(key);
  if (!value.is_boolean()) {
    fail(code_prefix_ + ".invalid_value", key,
         "[" + field(key) + "] must be true or false, got " + shown(value));
    return fallback;
  }
  return value.get<bool>();
}

double config_reader::fraction(std::initializer_list<const char*> keys, double fallback) {
  const char* key = nullptr;
  const json* value = find(keys, &key);
  if (value == nullptr) return fallback;
  if (!value->is_number() || value->get<double>() < 0.0 || value->get<double>() > 1.0) {
    fail(code_prefix_ + ".invalid_value", key,
         "[" + field(key) + "] must be a probability in 0..1, got " + shown(*value));
    return 0.0;
  }
  return value->get<double>();
}

std::string config_reader::text(const char* key, const std::string& fallback) {
  if (!has(key)) return fallback;
  const json& value = config_.at(key);
  if (!value.is_string()) {
    fail(code_prefix_ + ".invalid_value", key,
         "[" + field(key) + "] must be a string, got " + shown(value));
    return fallback;
  }
  return value.get<std::string>();
}

std::vector<std::uint64_t> config_reader::index_list(const char* key, std::uint64_t max) {
  std::vector<std::uint64_t> out;
  if (!has(key)) return out;
  const json& value = config_.at(key);
  if (!value.is_array()) {
    fail(code_prefix_ + ".invalid_value", key,
         "[" + field(key) + "] must be a list of layer indices");
    return out;
  }
  for (const json& item : value) out.push_back(integer(item, key, 0, max));
  return out;
}

std::size_t config_reader::items(const char* key) const {
  if (!has(key)) return 1;
  const json& value = config_.at(key);
  return value.is_array() ? value.size() : 1;
}

std::vector<std::string> config_reader::text_list(const char* key) {
  std::vector<std::string> out;
  if (!has(key)) return out;
  const json& value = config_.at(key);
  if (!value.is_array()) {
    fail(code_prefix_ + ".invalid_value", key, "[" + field(key) + "] must be a list of strings");
    return out;
  }
  for (const json& item : value) {
    if (!item.is_string()) {
      fail(code_prefix_ + ".invalid_value", key, "[" + field(key) + "] must be a list of strings");
      return {};
    }
    out.push_back(item.get<std::string>());
  }
  return out;
}

std::optional<error> config_reader::problem(const std::string& purpose) const {
  if (!missing_.empty()) {
    std::string keys;
    for (const auto& key : missing_) keys += (keys.empty() ? "" : ", ") + key;
    const bool config = code_prefix_ == "config";
    return error{code_prefix_ + (config ? ".missing_keys" : ".missing_field"),
                 missing_.size() == 1 && !config ? field(missing_.front()) : prefix_,
                 "[" + prefix_ + "] lacks " + keys + (purpose.empty() ? "" : ", " + purpose)};
  }
  return first_;
}

double config_reader::number(const char* key, double fallback, double min, double max) {
  if (!has(key)) return fallback;
  const json& value = config_.at(key);
  if (!value.is_number() || !(value.get<double>() >= min) || !(value.get<double>() <= max)) {
    fail_range(key,
               "[" + field(key) + "] must be a number in " + json(min).dump() + ".." +
                   json(max).dump() + ", got " + shown(value),
               min, max);
    return fallback;
  }
  return value.get<double>();
}

std::optional<std::string> choose(config_reader& in, const char* key, const std::string& fallback,
                                  std::initializer_list<const char*> accepted) {
  const std::string value = in.text(key, fallback);
  for (const char* a : accepted) {
    if (value == a) return value;
  }
  std::string list;
  for (const char* a : accepted) list += (list.empty() ? "" : ", ") + std::string(a);
  in.fail("request.invalid_value", key,
          "[" + in.field(key) + "] must be one of " + list + "; got '" + value + "'");
  return std::nullopt;
}

}  // namespace gpumem
