// The field helpers every reader shares (request_fields.hpp) and the small readers: mode, the
// LLMem estimate's parallel and workload, metric and options. The others have files of their own
// (request_reader.hpp lists them).
#include "api/request_reader.hpp"

#include <nlohmann/json.hpp>
#include <vector>

#include "api/request_fields.hpp"
#include "model/config_reader.hpp"

namespace gpumem {

using json = nlohmann::ordered_json;

const json& member_object(const json& parent, const char* key) {
  static const json empty = json::object();
  if (!parent.is_object()) return empty;
  auto it = parent.find(key);
  return it == parent.end() || it->is_null() ? empty : *it;
}

std::optional<error> check_object(const json& request, const char* key, const std::string& where) {
  const auto it = request.find(key);
  if (it == request.end() || it->is_null() || it->is_object()) return std::nullopt;
  const std::string path = where.empty() ? std::string(key) : where + "." + key;
  return error{"request.invalid_type", path,
               "[" + path + "] must be an object, got " + std::string(it->type_name())};
}

std::optional<error> check_seq_len(const model_spec& model, std::uint64_t seq_len,
                                   std::vector<std::string>& warnings) {
  if (model.max_positions == 0 || seq_len <= model.max_positions) return std::nullopt;
  bool learned_positions = false;
  for (const auto& t : model.tensors)
    learned_positions |= t.role == tensor_role::position_embedding;
  const std::string text = "[workload.seq_len] " + std::to_string(seq_len) +
                           " exceeds the model's " + std::to_string(model.max_positions) +
                           " positions";
  if (learned_positions) return error{"request.invalid_value", "workload.seq_len", text};
  warnings.push_back(text + "; the estimate assumes the model runs at that length");
  return std::nullopt;
}

namespace {

std::optional<error> unknown_keys_of(const json& object, const std::string& where,
                                     const std::vector<const char*>& accepted) {
  if (object.is_null()) return std::nullopt;  // absent
  if (!object.is_object()) {
    return error{"request.invalid_type", where.empty() ? "request" : where,
                 "[" + (where.empty() ? std::string("request") : where) +
                     "] must be an object, got " + std::string(object.type_name())};
  }
  for (const auto& item : object.items()) {
    bool known = false;
    for (const char* name : accepted) known = known || item.key() == name;
    if (known) continue;
    std::string list;
    for (const char* name : accepted) list += (list.empty() ? "" : ", ") + std::string(name);
    const std::string path = where.empty() ? item.key() : where + "." + item.key();
    return error{"request.unknown_field", path,
                 "[" + path + "] is not a field here; accepted: " + list};
  }
  return std::nullopt;
}

}  // namespace

std::optional<error> unknown_keys(const json& object, const std::string& where,
                                  std::initializer_list<const char*> accepted) {
  return unknown_keys_of(object, where, std::vector<const char*>(accepted));
}

std::optional<error> read_library_releases(const json& workload,
                                           std::initializer_list<library_slot> libraries,
                                           const std::string& object_example,
                                           const std::string& example) {
  const json& software = workload.value("software", json());
  if (software.is_null()) return std::nullopt;
  if (!software.is_object()) {
    return error{
        "request.invalid_type", "workload.software",
        "[workload.software] must be an object of library releases, e.g. " + object_example};
  }
  std::vector<const char*> names;
  for (const auto& slot : libraries) names.push_back(slot.name);
  if (auto e = unknown_keys_of(software, "workload.software", names)) return e;
  for (const auto& slot : libraries) {
    const json& value = software.value(slot.name, json());
    if (value.is_null()) continue;
    *slot.release =
        value.is_string() ? parse_library_release(value.get<std::string>()) : std::nullopt;
    if (!*slot.release) {
      const std::string field = std::string("workload.software.") + slot.name;
      return error{"request.invalid_value", field,
                   "[" + field + "] a release such as \"" + example +
                       "\": numbers separated by dots, then optionally a pre-, post- or "
                       "dev-release or a +local part; got " +
                       value.dump()};
    }
  }
  return std::nullopt;
}

result<std::string> read_mode(const json& request) {
  const std::string mode = request.contains("mode") && request.at("mode").is_string()
                               ? request.at("mode").get<std::string>()
                               : (request.contains("mode") ? "" : "detailed");
  if (mode != "detailed" && mode != "llmem") {
    return error{"request.invalid_value", "mode",
                 "[mode] must be \"detailed\" or \"llmem\", got " + request.at("mode").dump()};
  }
  return mode;
}

result<parallel_config> read_parallel(const json& request) {
  if (auto e = check_object(request, "parallel")) return *e;
  const json& parallel = member(request, "parallel");
  if (auto e = unknown_keys(parallel, "parallel", {"method", "tp", "dp_tp_fraction"})) return *e;
  config_reader in(parallel, "parallel", "request");
  parallel_config out;
  const std::string method = in.text("method", "single");
  bool known = false;
  for (auto m : {parallel_method::single, parallel_method::cdp, parallel_method::adp,
                 parallel_method::tp, parallel_method::dp_tp}) {
    if (method == method_name(m)) {
      out.method = m;
      known = true;
    }
  }
  if (!known) {
    return error{
        "request.invalid_value", "parallel.method",
        "[parallel.method] must be one of single, cdp, adp, tp, dp_tp; got '" + method + "'"};
  }
  out.tp = in.optional({"tp"}, 1, 65536);
  const std::string fraction = in.text("dp_tp_fraction", "llmem");
  if (fraction != "llmem" && fraction != "exact") {
    return error{
        "request.invalid_value", "parallel.dp_tp_fraction",
        "[parallel.dp_tp_fraction] must be \"llmem\" or \"exact\", got '" + fraction + "'"};
  }
  out.exact_dp_tp_fraction = fraction == "exact";
  if (auto problem = in.problem("")) return *problem;
  return out;
}

result<training_workload> read_training_workload(const json& request, const model_spec& model,
                                                 bool for_plan,
                                                 std::vector<std::string>& warnings) {
  if (auto e = check_object(request, "workload")) return *e;
  const json& workload = member(request, "workload");
  if (auto e = unknown_keys(workload, "workload", {"phase", "micro_batch", "seq_len"})) return *e;
  config_reader in(workload, "workload", "request");
  if (in.text("phase", "train") != "train") {
    return error{
        "request.invalid_value", "workload.phase",
        "[workload.phase] must be \"train\" in this mode (LLMem models fine-tuning steps)"};
  }
  training_workload out;
  if (for_plan && in.present("micro_batch")) {
    return error{"request.invalid_value", "workload.micro_batch",
                 "[workload.micro_batch] LLMem's planner (its Algorithm 1) searches the batch: "
                 "leave it out, or estimate one method at a fixed batch"};
  }
  out.micro_batch = for_plan ? 1 : in.required({"micro_batch"}, 1ULL << 20);
  out.seq_len = in.optional({"seq_len"}, out.seq_len, max_positions);
  if (auto problem = in.problem("required for an estimate")) return *problem;
  if (auto e = check_seq_len(model, out.seq_len, warnings)) return *e;
  return out;
}

result<std::string> read_metric(const json& request) {
  const std::string metric = request.value("metric", json("device_used")).is_string()
                                 ? request.value("metric", std::string("device_used"))
                                 : std::string();
  if (metric != "allocated" && metric != "reserved" && metric != "device_used") {
    return error{"request.invalid_value", "metric",
                 "[metric] must be \"allocated\", \"reserved\" or \"device_used\", got " +
                     request.value("metric", json()).dump()};
  }
  return metric;
}

result<plan_settings> read_options(const json& request) {
  if (auto e = check_object(request, "options")) return *e;
  const json& options = member(request, "options");
  if (auto e =
          unknown_keys(options, "options", {"mfu", "max_micro_batch", "timeline", "alternatives"}))
    return *e;
  config_reader in(options, "options", "request");
  plan_settings out;
  out.speed.mfu = in.number("mfu", default_mfu, 0.01, 1.0);
  out.max_micro_batch = in.optional({"max_micro_batch"}, out.max_micro_batch, 1ULL << 20);
  out.timeline_samples =
      static_cast<std::size_t>(in.optional({"timeline"}, 0, max_timeline_samples, 2));
  out.alternatives = in.flag("alternatives", true);
  if (auto problem = in.problem("")) return *problem;
  return out;
}

}  // namespace gpumem
