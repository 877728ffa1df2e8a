#include "api/model_resolver.hpp"

#include <string>
#include <utility>
#include <vector>

#include "api/preset_reader.hpp"
#include "api/request_reader.hpp"
#include "gpumem/model/config_parser.hpp"
#include "gpumem/model/preset_catalog.hpp"

namespace gpumem {

using json = nlohmann::ordered_json;
using nlohmann::ordered_json;

namespace {

// `model`: a preset id, {"preset": id}, or {"config": {...}} with optional name, task_head
// and num_labels.
result<resolved_model> read_model(const json& request) {
  if (!request.contains("model")) {
    return error{"request.missing_field", "model",
                 "[model] is required: a preset id such as \"meta-llama/Llama-2-7b-hf\", or "
                 "{\"config\": {...config.json...}}"};
  }
  if (auto e = check_supplied_presets(request)) return *e;
  const json& model = request.at("model");
  if (model.is_object() && model.contains("name") && !model.at("name").is_string()) {
    return error{"request.invalid_type", "model.name",
                 "[model.name] must be a string, got " + model.at("name").dump()};
  }
  model_options options;
  ordered_json identity;
  json config;
  std::string config_field = "model.config";
  if (model.is_string() || (model.is_object() && model.contains("preset"))) {
    const json& id = model.is_string() ? model : model.at("preset");
    const std::string field = model.is_string() ? "model" : "model.preset";
    if (model.is_object()) {
      if (auto e = unknown_keys(model, "model", {"preset", "task_head", "num_labels"})) return *e;
    }
    if (!id.is_string()) {
      return error{"request.invalid_type", field, "[" + field + "] must be a preset id string"};
    }
    auto preset = find_model_preset(id.get<std::string>(), field, supplied_presets(request));
    if (!preset.ok()) return preset.failure();
    const json& found = preset.value();
    for (const char* key : {"id", "family", "published_params"}) {
      identity[key] = ordered_json(found.at(key));
    }
    // Asked for by an alias: named as asked, and which preset's architecture it is.
    if (found.at("id") != id) {
      identity["id"] = id.get<std::string>();
      identity["architecture_of"] = ordered_json(found.at("id"));
    }
    config = found.at("config");
  } else if (model.is_object() && model.contains("config")) {
    if (auto e = unknown_keys(model, "model", {"config", "name", "task_head", "num_labels"})) {
      return *e;
    }
    config = model.at("config");
    identity["name"] = model.value("name", "custom config.json");
  } else {
    return error{"request.invalid_type", "model",
                 "[model] must be a preset id string, {\"preset\": id} or {\"config\": {...}}"};
  }
  if (model.is_object()) {
    if (model.contains("task_head")) {
      const json& head = model.at("task_head");
      if (!head.is_string() || !is_task_head(head.get<std::string>())) {
        return error{"request.invalid_value", "model.task_head",
                     "[model.task_head] must be one of base, masked_lm, pretraining, "
                     "sequence_classification, token_classification, question_answering; got " +
                         head.dump()};
      }
      options.task_head = head.get<std::string>();
    }
    if (model.contains("num_labels")) {
      const json& labels = model.at("num_labels");
      if (!labels.is_number_integer() || labels.get<std::int64_t>() < 1 ||
          labels.get<std::int64_t>() > 1000000) {
        return error{"request.invalid_value", "model.num_labels",
                     "[model.num_labels] must be an integer in 1..1000000, got " + labels.dump()};
      }
      options.num_labels = labels.get<std::uint64_t>();
    }
  }
  auto spec = parse_model_config(config, options, config_field);
  if (!spec.ok()) return spec.failure();
  auto counts = count_params(spec.value());
  if (!counts.ok()) return counts.failure();
  return resolved_model{std::move(spec.value()), counts.value(), std::move(identity)};
}

// The models read lately, by the text of the request's `model`; at most `kept`, the most recently
// used first. (The core's one piece of state: the page asks about the same model edit after edit.)
class model_cache {
 public:
  std::shared_ptr<const resolved_model> find(const std::string& key) {
    for (std::size_t i = 0; i < entries_.size(); ++i) {
      if (entries_[i].first != key) continue;
      auto hit = entries_[i].second;
      entries_.erase(entries_.begin() + static_cast<std::ptrdiff_t>(i));
      entries_.insert(entries_.begin(), {key, hit});
      return hit;
    }
    return nullptr;
  }
  void keep(std::string key, std::shared_ptr<const resolved_model> model) {
    entries_.insert(entries_.begin(), {std::move(key), std::move(model)});
    if (entries_.size() > kept) entries_.pop_back();
  }

 private:
  static constexpr std::size_t kept = 6;
  std::vector<std::pair<std::string, std::shared_ptr<const resolved_model>>> entries_;
};

}  // namespace

const result<llmem_model>& resolved_model::llmem() const {
  if (!llmem_prepared) llmem_prepared.emplace(prepare_llmem(spec));
  return *llmem_prepared;
}

result<std::shared_ptr<const resolved_model>> resolve_model(const json& request) {
  static thread_local model_cache cache;
  const auto found = request.find("model");
  // (A preset the request brings is part of what names the model.)
  const auto presets = request.find("presets");
  const std::string key = found == request.end()     ? ""
                          : presets == request.end() ? found->dump()
                                                     : found->dump() + '\n' + presets->dump();
  if (!key.empty()) {
    if (auto hit = cache.find(key)) return hit;
  }
  auto model = read_model(request);
  if (!model.ok()) return model.failure();
  auto shared = std::make_shared<const resolved_model>(std::move(model.value()));
  if (!key.empty()) cache.keep(key, shared);
  return shared;
}

}  // namespace gpumem
