#include "gpumem/api/json_api.hpp"

#include <algorithm>
#include <nlohmann/json.hpp>
#include <optional>
#include <unordered_set>

#include "api/estimate_json.hpp"
#include "api/inference_json.hpp"
#include "api/json_text.hpp"
#include "api/launch/launch_commands.hpp"
#include "api/model_json.hpp"
#include "api/model_resolver.hpp"
#include "api/plan_alternatives.hpp"
#include "api/preset_reader.hpp"
#include "api/request_reader.hpp"
#include "api/training_json.hpp"
#include "gpumem/model/config_parser.hpp"
#include "gpumem/model/param_count.hpp"
#include "gpumem/model/preset_catalog.hpp"
#include "gpumem/offload/gemini_placement.hpp"
#include "gpumem/offload/offload.hpp"
#include "gpumem/plan/llmem.hpp"
#include "gpumem/plan/planner.hpp"
#include "gpumem/training/training_step.hpp"
#include "gpumem/validation/validation.hpp"
#include "model/config_reader.hpp"
#include "text/number_text.hpp"

namespace gpumem {

using json = nlohmann::ordered_json;
using nlohmann::ordered_json;

namespace {

// Records nlohmann's own description of a syntax error (line, column, what was expected)
// without exceptions: the SAX interface hands the error over as an argument.
struct syntax_error_reader : nlohmann::json_sax<json> {
  std::string message;
  bool null() override { return true; }
  bool boolean(bool) override { return true; }
  bool number_integer(number_integer_t) override { return true; }
  bool number_unsigned(number_unsigned_t) override { return true; }
  bool number_float(number_float_t, const string_t&) override { return true; }
  bool string(string_t&) override { return true; }
  bool binary(binary_t&) override { return true; }
  bool start_object(std::size_t) override { return true; }
  bool key(string_t&) override { return true; }
  bool end_object() override { return true; }
  bool start_array(std::size_t) override { return true; }
  bool end_array() override { return true; }
  bool parse_error(std::size_t, const std::string&, const nlohmann::detail::exception& e) override {
    message = e.what();
    return false;
  }
};

// The response text; a message quoting malformed user text gets U+FFFD for any invalid UTF-8
// rather than an exception (which would abort the wasm module).
std::string serialized(const ordered_json& out) {
  std::string text;
  append_json_text(text, out);
  return text;
}

std::string respond_error(const error& e) {
  ordered_json out;
  out["api_version"] = api_version;
  out["ok"] = false;
  out["error"] = {{"code", e.code},
                  {"field", readable(e.field, max_error_field)},
                  {"message", readable(e.message, max_error_message)}};
  if (e.has_range) out["error"]["range"] = {{"min", e.range_min}, {"max", e.range_max}};
  return serialized(out);
}

bool inexact_number(const ordered_json& value) {
  if (value.is_number_unsigned()) return value.get<std::uint64_t>() > max_exact_count;
  if (!value.is_number_integer()) return false;
  const std::int64_t v = value.get<std::int64_t>();
  return v > static_cast<std::int64_t>(max_exact_count) ||
         v < -static_cast<std::int64_t>(max_exact_count);
}

// Whether `value` holds an integer above 2^53 (JavaScript's exact limit); `path` then gets the
// route to the first, written only on the way back from the find: every answer walks this, and
// building a string per node cost a params answer a sixth of its time.
bool find_inexact(const ordered_json& value, std::string& path) {
  if (inexact_number(value)) return true;
  if (value.is_object()) {
    for (const auto& [key, item] : value.get_ref<const ordered_json::object_t&>()) {
      if (!item.is_structured() && !inexact_number(item)) continue;
      if (find_inexact(item, path)) {
        path.insert(0, "." + key);
        return true;
      }
    }
  } else if (value.is_array()) {
    const auto& items = value.get_ref<const ordered_json::array_t&>();
    for (std::size_t i = 0; i < items.size(); ++i) {
      if (!items[i].is_structured() && !inexact_number(items[i])) continue;
      if (find_inexact(items[i], path)) {
        path.insert(0, "[" + std::to_string(i) + "]");
        return true;
      }
    }
  }
  return false;
}

// The path of the first integer in `value` above 2^53, or "".
std::string first_inexact(const ordered_json& value, const std::string& path) {
  std::string route;
  return find_inexact(value, route) ? path + route : "";
}

std::string respond(const std::string& command, ordered_json result, const ordered_json& warnings) {
  // Every count an answer gives is exact in JavaScript, or the request is refused (a last guard
  // behind the estimators' own size checks).
  const std::string inexact = first_inexact(result, "result");
  if (!inexact.empty()) {
    return respond_error({"request.too_large", "",
                          "[" + inexact +
                              "] would pass 2^53 (9,007,199,254,740,992), beyond which counts are "
                              "not exact in JSON: use a smaller model or workload"});
  }
  ordered_json out = json_object(5);
  out["api_version"] = api_version;
  out["ok"] = true;
  out["command"] = command;
  out["result"] = std::move(result);
  out["warnings"] = warnings.is_array() ? warnings : ordered_json::array();
  return serialized(out);
}

std::string params_command(const json& request) {
  if (auto e = unknown_keys(request, "", {"api_version", "command", "model", "presets"})) {
    return respond_error(*e);
  }
  auto model = resolve_model(request);
  if (!model.ok()) return respond_error(model.failure());
  const resolved_model& m = *model.value();
  ordered_json result = params_json(m.spec, m.counts);
  result["model"].insert(m.identity.begin(), m.identity.end());
  return respond("params", std::move(result), ordered_json(m.spec.warnings));
}

// The parts every training request shares, read and checked.
struct training_context {
  std::shared_ptr<const resolved_model> model;
  cluster_spec cluster;
  plan_settings settings;
  std::vector<std::string> warnings;
};

result<training_context> read_training(const json& request) {
  auto mode = read_mode(request);
  if (!mode.ok()) return mode.failure();
  auto model = resolve_model(request);
  if (!model.ok()) return model.failure();
  auto cluster =
      read_cluster(request, mode.value() == "detailed" ? default_detailed_headroom : 0.0);
  if (!cluster.ok()) return cluster.failure();
  auto settings = read_options(request);
  if (!settings.ok()) return settings.failure();
  std::vector<std::string> warnings = model.value()->spec.warnings;
  return training_context{model.value(), cluster.value(), settings.value(), std::move(warnings)};
}

ordered_json model_identity(const training_context& c) {
  ordered_json out = c.model->identity;
  out["architecture"] = c.model->spec.architecture;
  out["total_params"] = c.model->counts.total;
  return out;
}

// Removes every null member of every object, depth first (arrays keep their elements).
void drop_nulls(json& value) {
  if (value.is_object()) {
    for (auto it = value.begin(); it != value.end();) {
      if (it->is_null()) {
        it = value.erase(it);
      } else {
        drop_nulls(*it);
        ++it;
      }
    }
  } else if (value.is_array()) {
    for (auto& item : value) drop_nulls(item);
  }
}

// options.timeline belongs to a detailed estimate: one replayed step.
error timeline_refused(const std::string& what) {
  return {"request.invalid_value", "options.timeline",
          "[options.timeline] applies to a detailed estimate (one replayed step), not to " + what +
              ": estimate the chosen candidate with it"};
}

bool is_inference(const json& request) {
  const json& workload = member_object(request, "workload");
  return workload.is_object() && workload.value("phase", json()) == "inference";
}

// The detailed estimator for inference: weights, KV cache, prefill and decode, per rank.
std::string inference_estimate(const json& request, training_context& c) {
  auto metric = read_metric(request);
  if (!metric.ok()) return respond_error(metric.failure());
  auto fields = inference_estimate_json(request, c.model->spec, c.model->counts, c.cluster,
                                        metric.value(), c.settings.timeline_samples, c.warnings);
  if (!fields.ok()) return respond_error(fields.failure());
  ordered_json result = json_object(32);
  result["mode"] = "detailed";
  result["metric"] = metric.value();
  result["model"] = model_identity(c);
  result["cluster"] = cluster_json(c.cluster);
  result.update(fields.value());
  return respond("estimate", std::move(result), ordered_json(c.warnings));
}

// The detailed estimator for training: the step replayed through the caching allocator.
std::string detailed_estimate(const json& request, training_context& c) {
  if (is_inference(request)) return inference_estimate(request, c);
  auto metric = read_metric(request);
  if (!metric.ok()) return respond_error(metric.failure());
  training_answer_options options;
  options.metric = metric.value();
  options.timeline_samples = c.settings.timeline_samples;
  options.max_micro_batch = c.settings.max_micro_batch;
  auto fields = training_estimate_json(request, c.model->spec, c.cluster, options, c.warnings);
  if (!fields.ok()) return respond_error(fields.failure());
  ordered_json result = json_object(32);
  result["mode"] = "detailed";
  result["metric"] = metric.value();
  result["model"] = model_identity(c);
  result["cluster"] = cluster_json(c.cluster);
  result.update(fields.value());
  return respond("estimate", std::move(result), ordered_json(c.warnings));
}

std::string estimate_command(const json& request) {
  if (auto e = unknown_keys(request, "",
                            {"api_version", "command", "mode", "model", "presets", "cluster",
                             "parallel", "workload", "options", "metric", "solve"})) {
    return respond_error(*e);
  }
  auto context = read_training(request);
  if (!context.ok()) return respond_error(context.failure());
  auto& c = context.value();
  if (read_mode(request).value() == "detailed") return detailed_estimate(request, c);
  if (c.settings.timeline_samples > 0) return respond_error(timeline_refused("LLMem mode"));
  if (request.contains("solve")) {
    return respond_error({"request.invalid_value", "solve",
                          "[solve] applies to the detailed estimator, not to LLMem mode"});
  }
  auto parallel = read_parallel(request);
  if (!parallel.ok()) return respond_error(parallel.failure());
  auto workload = read_training_workload(request, c.model->spec, false, c.warnings);
  if (!workload.ok()) return respond_error(workload.failure());
  if (auto e = check_training_size(c.model->spec, workload.value().micro_batch,
                                   workload.value().seq_len, false)) {
    return respond_error(*e);
  }
  const auto& model = c.model->llmem();
  if (!model.ok()) return respond_error(model.failure());
  auto fixed = llmem_fixed_terms(c.model->spec, model.value(), c.cluster, parallel.value(),
                                 workload.value().seq_len);
  if (!fixed.ok()) return respond_error(fixed.failure());
  for (const auto& w : model.value().warnings) c.warnings.push_back(w);
  const auto rank = llmem_estimate(model.value(), fixed.value(), c.cluster,
                                   workload.value().micro_batch, workload.value().seq_len);
  const auto speed =
      estimate_step_time(c.model->spec, c.model->counts, c.cluster, fixed.value().parallel,
                         workload.value().micro_batch, workload.value().seq_len, c.settings.speed);
  ordered_json result = json_object(32);
  result["mode"] = "llmem";
  result["metric"] = "device_used";
  result["model"] = model_identity(c);
  result["cluster"] = cluster_json(c.cluster);
  result["parallel"] = {
      {"method", method_name(fixed.value().parallel.method)},
      {"tp", fixed.value().parallel.tp},
      {"dp", fixed.value().dp_degree},
      {"dp_tp_fraction", parallel.value().exact_dp_tp_fraction ? "exact" : "llmem"}};
  result["workload"] = {{"phase", "train"},
                        {"micro_batch", workload.value().micro_batch},
                        {"seq_len", workload.value().seq_len}};
  result["peak_bytes"] = rank.peak_bytes;
  result["fits"] = rank.fits;
  result["verdict"] = verdict_name(rank.verdict);
  result["per_gpu"] = ordered_json::array({rank_json(rank)});
  result["m_init"] = m_init_json(fixed.value());
  result["step_time"] = step_time_json(speed);
  result["notes"] = llmem_component_notes();
  return respond("estimate", std::move(result), ordered_json(c.warnings));
}

// A detailed training plan of `request` (its workload read and checked), over `methods` only
// when given; `options` comes back with what the answer reports (the lengths).
result<plan_result> detailed_training_plan(const json& request, training_context& c,
                                           const std::vector<std::string>& methods,
                                           plan_options& options) {
  auto workload = read_detailed_workload(request, c.model->spec, true, c.warnings);
  if (!workload.ok()) return workload.failure();
  options.max_micro_batch = c.settings.max_micro_batch;
  options.speed = c.settings.speed;
  options.seq_len = workload.value().seq_len;
  options.fixed_micro_batch = workload.value().micro_batch;
  options.only_methods = methods;
  // A global batch (sequences per optimizer step): the plan chooses each candidate's
  // micro-batch and accumulation to make it up; a stated accumulation would contradict it.
  const json& stated = member_object(request, "workload");
  config_reader in(stated, "workload", "request");
  options.global_batch = in.optional({"global_batch"}, 0, 1ULL << 20);
  if (auto problem = in.problem("")) return *problem;
  if (options.global_batch > 0 && stated.contains("grad_accumulation")) {
    return error{"request.invalid_value", "workload.global_batch",
                 "[workload.global_batch] and [workload.grad_accumulation] both set the "
                 "accumulation: give one (a plan chooses the accumulation for a global batch)"};
  }
  // Gradient checkpointing left out (or null) is the plan's to choose.
  const json& fields = request.value("workload", json::object());
  options.choose_checkpointing =
      !fields.is_object() || !fields.contains("grad_ckpt") || fields.at("grad_ckpt").is_null();
  workload.value().micro_batch = 1;
  options.target_len = decoder_len(workload.value());
  return plan_detailed(c.model->spec, c.model->counts, c.cluster, workload.value(), options);
}

// The plan of a changed request over `methods` (plan_alternatives).
result<plan_result> changed_run_plan(const json& changed, const std::vector<std::string>& methods) {
  auto context = read_training(changed);
  if (!context.ok()) return context.failure();
  plan_options options;
  options.gpus_only = true;
  return detailed_training_plan(changed, context.value(), methods, options);
}

std::string plan_command(const json& request) {
  if (auto e = unknown_keys(request, "",
                            {"api_version", "command", "mode", "model", "presets", "cluster",
                             "workload", "options"})) {
    return respond_error(*e);
  }
  auto context = read_training(request);
  if (!context.ok()) return respond_error(context.failure());
  auto& c = context.value();
  const bool detailed = read_mode(request).value() == "detailed";
  if (c.settings.timeline_samples > 0) return respond_error(timeline_refused("a plan"));
  if (detailed) {
    if (auto e = check_plan_size(c.model->spec, "a plan")) return respond_error(*e);
  }
  if (detailed && is_inference(request)) {
    auto fields = inference_plan_json(request, c.model->spec, c.cluster, c.warnings);
    if (!fields.ok()) return respond_error(fields.failure());
    ordered_json result = json_object(32);
    result["mode"] = "detailed";
    result["metric"] = "device_used";
    result["model"] = model_identity(c);
    result["cluster"] = cluster_json(c.cluster);
    result.update(fields.value());
    return respond("plan", std::move(result), ordered_json(c.warnings));
  }
  plan_options options;
  options.max_micro_batch = c.settings.max_micro_batch;
  options.speed = c.settings.speed;
  result<plan_result> plan = error{};
  std::uint64_t target_len = 0;  // encoder-decoders: the decoder's length
  if (detailed) {
    plan = detailed_training_plan(request, c, {}, options);
    target_len = options.target_len;
  } else {
    auto workload = read_training_workload(request, c.model->spec, true, c.warnings);
    if (!workload.ok()) return respond_error(workload.failure());
    options.seq_len = workload.value().seq_len;
    plan = plan_llmem(c.model->spec, c.model->counts, c.cluster, options);
  }
  if (!plan.ok()) return respond_error(plan.failure());
  for (const auto& w : plan.value().warnings) c.warnings.push_back(w);
  ordered_json result = plan_json(plan.value());
  if (detailed) {
    const plan_result& p = plan.value();
    const double speed =
        p.choice >= 0 ? p.candidates[static_cast<std::size_t>(p.choice)].speed.tokens_per_s : 0.0;
    auto time_and_cost = time_and_cost_json(request, speed, c.cluster);
    if (!time_and_cost.ok()) return respond_error(time_and_cost.failure());
    if (!time_and_cost.value().is_null()) result["time_and_cost"] = time_and_cost.value();
  }
  if (detailed && c.settings.alternatives) {
    // What it would take: the same plan for changed runs, one method each.
    result["alternatives"] = plan_alternatives(request, plan.value(), changed_run_plan);
  }
  result["mode"] = detailed ? "detailed" : "llmem";
  result["metric"] = "device_used";
  result["model"] = model_identity(c);
  result["cluster"] = cluster_json(c.cluster);
  result["workload"] = {{"phase", "train"}, {"seq_len", options.seq_len}};
  if (detailed && c.model->spec.encoder_decoder) result["workload"]["target_len"] = target_len;
  if (!detailed) result["notes"] = llmem_component_notes();
  return respond("plan", std::move(result), ordered_json(c.warnings));
}

ordered_json summary_json(const error_summary& s) {
  return {{"n", s.n},
          {"median_abs_rel_error", s.median_abs_rel_error},
          {"p90_abs_rel_error", s.p90_abs_rel_error},
          {"within_10pct", s.within_10pct},
          {"within_25pct", s.within_25pct}};
}

std::string validate_command(const json& request) {
  if (auto e = unknown_keys(request, "", {"api_version", "command", "points"}))
    return respond_error(*e);
  if (!request.contains("points") || !request.at("points").is_array()) {
    return respond_error({"request.missing_field", "points",
                          "[points] is required: the array of validation points "
                          "(../shared/validation/README.md)"});
  }
  const step_time_report report = validate_step_time(request.at("points"));
  ordered_json points = ordered_json::array();
  for (const auto& p : report.points) {
    ordered_json entry = {
        {"id", p.id}, {"method", p.method}, {"scored", p.scored}, {"note", p.note}};
    if (p.scored) {
      entry["quantity"] = p.quantity;
      entry["measured"] = p.measured;
      entry["estimated"] = p.estimated;
      entry["relative_error"] = p.relative_error;
    }
    points.push_back(std::move(entry));
  }
  ordered_json by_method = ordered_json::object();
  for (const auto& [method, summary] : report.by_method) by_method[method] = summary_json(summary);
  const memory_report memory = validate_memory(request.at("points"));
  ordered_json summary = summary_json(memory.summary);
  summary["bounds_correct"] = memory.bounds_correct;
  summary["bounds_total"] = memory.bounds_total;
  ordered_json memory_points = ordered_json::array();
  for (const auto& p : memory.points) {
    ordered_json entry = {
        {"id", p.id},         {"kind", p.kind},         {"metric", p.metric},
        {"phase", p.phase},   {"finetune", p.finetune}, {"trust", p.trust},
        {"scored", p.scored}, {"note", p.note},         {"measured_gib", p.measured_gib}};
    if (p.scored) {
      entry["estimated_gib"] = p.estimated_gib;
      if (p.kind == "peak") entry["relative_error"] = p.relative_error;
      if (p.kind != "peak") entry["bound_correct"] = p.bound_correct;
    }
    if (p.host_scored) {
      entry["measured_host_gib"] = p.measured_host_gib;
      entry["estimated_host_gib"] = p.estimated_host_gib;
      entry["host_relative_error"] = p.host_relative_error;
    }
    memory_points.push_back(std::move(entry));
  }
  ordered_json by_phase = ordered_json::object();
  for (const auto& [k, v] : memory.by_phase) by_phase[k] = summary_json(v);
  ordered_json by_finetune = ordered_json::object();
  for (const auto& [k, v] : memory.by_finetune) by_finetune[k] = summary_json(v);
  ordered_json by_trust = ordered_json::object();
  for (const auto& [k, v] : memory.by_trust) by_trust[k] = summary_json(v);
  ordered_json result = {{"summary", std::move(summary)},
                         {"by_phase", std::move(by_phase)},
                         {"by_finetune", std::move(by_finetune)},
                         {"by_trust", std::move(by_trust)},
                         {"host", summary_json(memory.host)},
                         {"points", std::move(memory_points)},
                         {"step_time",
                          {{"summary", summary_json(report.summary)},
                           {"by_method", std::move(by_method)},
                           {"points", std::move(points)}}}};
  return respond("validate", std::move(result), ordered_json::array());
}

std::string models_command(const json& request) {
  if (auto e = unknown_keys(request, "", {"api_version", "command", "presets"})) {
    return respond_error(*e);
  }
  if (auto e = check_supplied_presets(request)) return respond_error(*e);
  ordered_json list = ordered_json::array();
  const json& supplied = supplied_presets(request);
  const std::size_t brought = supplied.is_array() ? supplied.size() : 0;
  for (const auto& preset : all_model_presets(supplied)) {
    // (The supplied presets come first, in their order: presets[i] is the i-th.)
    const std::string field = list.size() < brought
                                  ? "presets[" + std::to_string(list.size()) + "].config"
                                  : "preset " + preset.value("id", "") + " config";
    auto spec = parse_model_config(preset.at("config"), {}, field);
    if (!spec.ok()) return respond_error(spec.failure());
    auto counts = count_params(spec.value());
    if (!counts.ok()) return respond_error(counts.failure());
    list.push_back({{"id", preset.value("id", "")},
                    {"family", preset.value("family", "")},
                    {"model_type", spec.value().model_type},
                    {"architecture", spec.value().architecture},
                    {"total_params", counts.value().total},
                    {"active_params", counts.value().active},
                    {"published_params", ordered_json(preset.at("published_params"))},
                    {"verified", preset.value("verified", false)},
                    {"aliases", ordered_json(preset.value("aliases", json::array()))}});
  }
  return respond("models", {{"models", std::move(list)}}, ordered_json::array());
}

std::string gpus_command(const json& request) {
  if (auto e = unknown_keys(request, "", {"api_version", "command"})) return respond_error(*e);
  return respond("gpus", gpu_presets(), ordered_json::array());
}

// export: the estimate request's setup as a launch format's files and command (it must
// estimate: the answer carries the estimate's peak and verdict). Kept out of handle_request's
// body (noinline): inlined, export and import added 70 KB to the page's download.
[[gnu::noinline]] std::string export_command(const json& request) {
  auto format = read_launch_format(request);
  if (!format.ok()) return respond_error(format.failure());
  json estimate_request = request;
  estimate_request.erase("format");
  estimate_request["command"] = "estimate";
  if (read_mode(estimate_request).ok() && read_mode(estimate_request).value() == "llmem") {
    return respond_error({"request.invalid_value", "mode",
                          "[mode] export writes what the detailed estimator estimates; LLMem "
                          "mode reproduces the paper's Colossal-AI runs"});
  }
  if (request.contains("solve")) {
    return respond_error({"request.invalid_value", "solve",
                          "[solve] export writes one setup: solve first, then export the "
                          "micro-batch or length found"});
  }
  const json estimate = json::parse(estimate_command(estimate_request), nullptr, false);
  if (!estimate.value("ok", false)) return serialized(estimate);
  auto context = read_training(estimate_request);
  if (!context.ok()) return respond_error(context.failure());
  auto& c = context.value();
  auto answer =
      export_answer(estimate_request, format.value(), *c.model, c.cluster, estimate.at("result"));
  if (!answer.ok()) return respond_error(answer.failure());
  return respond("export", std::move(answer.value()), estimate.at("warnings"));
}

// import: a launch file (`file`: a DeepSpeed config's JSON, a `vllm serve` line) read into the
// estimate request it describes, `request`'s own fields over it.
[[gnu::noinline]] std::string import_command(const json& request) {
  if (auto e = unknown_keys(request, "", {"api_version", "command", "format", "file", "request"})) {
    return respond_error(*e);
  }
  std::uint64_t hidden = 0;
  const json& own = member_object(request, "request");
  if (own.is_object() && own.contains("model")) {
    auto model = resolve_model(own);
    if (!model.ok()) return respond_error(model.failure());
    hidden = model.value()->spec.hidden_size;
  }
  auto answer = import_answer(request, hidden);
  if (!answer.ok()) return respond_error(answer.failure());
  return respond("import", std::move(answer.value()), ordered_json::array());
}

// Where each preset's config.json and each GPU's figures come from (the estimates name the preset
// only; these are the catalogue's provenance).
std::string sources_command(const json& request) {
  if (auto e = unknown_keys(request, "", {"api_version", "command"})) return respond_error(*e);
  return respond("sources", preset_sources(), ordered_json::array());
}

std::string version_command(const json& request) {
  if (auto e = unknown_keys(request, "", {"api_version", "command"})) return respond_error(*e);
  ordered_json types = supported_model_types();
  return respond("version",
                 {{"api_version", api_version},
                  {"commands",
                   {"params", "estimate", "plan", "export", "import", "validate", "models", "gpus",
                    "sources", "version"}},
                  {"model_types", types}},
                 ordered_json::array());
}

}  // namespace

std::size_t json_nesting_depth(std::string_view text) {
  std::size_t depth = 0;
  std::size_t deepest = 0;
  bool in_string = false;
  bool escaped = false;
  for (const char ch : text) {
    if (in_string) {
      if (escaped) {
        escaped = false;
      } else if (ch == '\\') {
        escaped = true;
      } else if (ch == '"') {
        in_string = false;
      }
    } else if (ch == '"') {
      in_string = true;
    } else if (ch == '[' || ch == '{') {
      deepest = std::max(deepest, ++depth);
    } else if ((ch == ']' || ch == '}') && depth > 0) {
      --depth;
    }
  }
  return deepest;
}

namespace {

// The first key that an object of `text` (valid JSON) has twice.
std::string first_repeated_key(const std::string& text) {
  std::vector<std::unordered_set<std::string>> keys_seen;
  std::string duplicate;
  const json::parser_callback_t track_keys = [&](int, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::object_start) keys_seen.emplace_back();
    if (event == json::parse_event_t::object_end && !keys_seen.empty()) keys_seen.pop_back();
    if (event == json::parse_event_t::key && !keys_seen.empty() && duplicate.empty()) {
      if (!keys_seen.back().insert(parsed.get<std::string>()).second)
        duplicate = parsed.get<std::string>();
    }
    return true;
  };
  const json read = json::parse(text, track_keys, false);
  (void)read;
  return duplicate;
}

// The request's JSON, read and checked before any command runs (size, NUL, nesting, duplicate
// keys, syntax, api_version, command): the refusal's answer, or "" with `request` parsed and
// `command` set.
std::string read_request(const std::string& request_json, json& request, std::string& command) {
  // Refused before parsing: a request too large to read within a page's memory (80 MB of [0,0,...]
  // took the wasm module past its 2 GB heap), and text after a NUL character, which a parser
  // would never see.
  if (request_json.size() > max_request_bytes) {
    return respond_error(
        {"request.too_large", "",
         "the request is " + grouped_number(static_cast<double>(request_json.size()), 0) +
             " bytes; at most " + grouped_number(static_cast<double>(max_request_bytes), 0) +
             " are accepted"});
  }
  if (const std::size_t nul = request_json.find('\0'); nul != std::string::npos) {
    return respond_error(
        {"json.parse_error", "",
         "the request is not valid JSON: a NUL character at byte " + std::to_string(nul)});
  }
  const std::size_t depth = json_nesting_depth(request_json);
  if (depth > max_json_depth) {
    return respond_error({"request.too_deep", "",
                          "the request nests arrays and objects " + std::to_string(depth) +
                              " levels deep; at most " + std::to_string(max_json_depth) +
                              " are accepted"});
  }
  // A key twice in one object is refused rather than read as its last value (docs/api.md). An
  // ordered object keeps one member per key, so an object that ends with fewer members than the
  // keys read had one twice; which one is found by a second reading, on that path alone (keeping
  // every key of every object in a set made the reading a fifth of a params answer's time).
  std::vector<std::size_t> keys_read;
  bool repeated = false;
  const json::parser_callback_t count_keys = [&](int, json::parse_event_t event, json& parsed) {
    if (event == json::parse_event_t::object_start) keys_read.push_back(0);
    if (event == json::parse_event_t::key && !keys_read.empty()) ++keys_read.back();
    if (event == json::parse_event_t::object_end && !keys_read.empty()) {
      repeated = repeated || (parsed.is_object() && parsed.size() != keys_read.back());
      keys_read.pop_back();
    }
    return true;
  };
  request = json::parse(request_json, count_keys, false);
  if (!request.is_discarded() && repeated) {
    const std::string duplicate = first_repeated_key(request_json);
    return respond_error({"json.duplicate_key", "",
                          "the request is not valid here: the key \"" + readable(duplicate, 60) +
                              "\" appears twice in one object"});
  }
  if (request.is_discarded()) {
    syntax_error_reader reader;
    json::sax_parse(request_json, &reader);
    return respond_error(
        {"json.parse_error", "",
         "the request is not valid JSON: " +
             (reader.message.empty() ? std::string("unknown error") : reader.message)});
  }
  if (!request.is_object()) {
    return respond_error(
        {"request.invalid_type", "request",
         "[request] must be a JSON object, got " + std::string(request.type_name())});
  }
  if (request.contains("api_version") && request.at("api_version") != api_version) {
    return respond_error({"request.unsupported_api_version", "api_version",
                          "[api_version] must be 1, got " + request.at("api_version").dump()});
  }
  if (!request.contains("command") || request.at("command").is_null()) {
    return respond_error({"request.missing_field", "command",
                          "[command] is required: one of params, estimate, plan, export, import, "
                          "validate, models, gpus, version"});
  }
  if (!request.at("command").is_string()) {
    return respond_error({"request.invalid_type", "command",
                          "[command] must be a string: one of params, estimate, plan, export, "
                          "import, validate, models, gpus, sources, version"});
  }
  command = request.at("command").get<std::string>();
  // null on an optional field means the field is absent (its default); on a required one, that
  // it is missing (docs/api.md). Validation points keep theirs: their format reads null itself.
  if (command != "validate") drop_nulls(request);
  return "";
}

std::string unknown_command(const std::string& command) {
  return respond_error({"request.unknown_command", "command",
                        "[command] must be one of params, estimate, plan, export, import, "
                        "validate, models, gpus, sources, version; got '" +
                            command + "'"});
}

// The estimator's commands (the page's first download: handle_estimator_request), or nothing
// for the others.
std::optional<std::string> estimator_answer(const std::string& command, const json& request) {
  if (command == "params") return params_command(request);
  if (command == "models") return models_command(request);
  if (command == "gpus") return gpus_command(request);
  if (command == "version") return version_command(request);
  if (command == "estimate") return estimate_command(request);
  if (command == "plan") return plan_command(request);
  return std::nullopt;
}

// The full module's other commands.
std::string full_answer(const std::string& command, const json& request) {
  if (command == "validate") return validate_command(request);
  if (command == "export") return export_command(request);
  if (command == "import") return import_command(request);
  if (command == "sources") return sources_command(request);
  return unknown_command(command);
}

// The estimator's build: the full module's other commands refused, naming it. (A function of
// its own, so that the link leaves export, import, validate and the presets' sources out of that
// build.)
std::string refused_beyond_estimator(const std::string& command, const json&) {
  if (command == "validate" || command == "export" || command == "import" || command == "sources") {
    return respond_error({"request.full_module", "command",
                          "[command] " + command +
                              " is answered by the full module (gpumem_core.wasm, the facade's "
                              "default), not the estimator's"});
  }
  return unknown_command(command);
}

// A request read and answered: the estimator's commands here, the rest by `others`.
std::string answer(const std::string& request_json,
                   std::string (*others)(const std::string& command, const json& request)) {
  json request;
  std::string command;
  if (std::string refused = read_request(request_json, request, command); !refused.empty())
    return refused;
  if (auto answered = estimator_answer(command, request)) return *answered;
  return others(command, request);
}

}  // namespace

std::string handle_request(const std::string& request_json) {
  return answer(request_json, full_answer);
}

std::string handle_estimator_request(const std::string& request_json) {
  return answer(request_json, refused_beyond_estimator);
}

}  // namespace gpumem
