// The `export` and `import` commands' answers (docs/api.md), once json_api has checked that the
// request estimates: the setup read as the estimate read it, the format's files, and a launch
// file merged under the caller's request.
#include "api/launch/launch_commands.hpp"

#include <optional>
#include <string>

#include "api/json_text.hpp"
#include "api/launch/launch.hpp"

namespace gpumem {

using json = nlohmann::ordered_json;

namespace {

bool listed(const std::string& name, const char* const* first, const char* const* last) {
  for (auto it = first; it != last; ++it) {
    if (name == *it) return true;
  }
  return false;
}

std::string model_id_of(const json& request) {
  const json& model = request.value("model", json());
  if (model.is_string()) return model.get<std::string>();
  if (model.is_object() && model.value("preset", json()).is_string())
    return model.at("preset").get<std::string>();
  if (model.is_object() && model.value("name", json()).is_string())
    return model.at("name").get<std::string>();
  return "";
}

json gaps_json(const std::vector<launch_gap>& gaps) {
  json out = json::array();
  for (const auto& g : gaps) out.push_back({{"field", g.field}, {"reason", g.reason}});
  return out;
}

// Merges `over` into `base` member by member (objects recursively); every leaf `over` changes
// is listed with the file's value and the request's.
void merge_over(json& base, const json& over, const std::string& path, json& overridden) {
  for (const auto& item : over.items()) {
    const std::string field = path.empty() ? item.key() : path + "." + item.key();
    json& slot = base[item.key()];
    if (slot.is_object() && item.value().is_object()) {
      merge_over(slot, item.value(), field, overridden);
      continue;
    }
    if (!slot.is_null() && slot != item.value()) {
      overridden.push_back({{"field", field}, {"file", slot}, {"request", item.value()}});
    }
    slot = item.value();
  }
}

}  // namespace

result<std::string> read_launch_format(const json& request) {
  const json& format = request.value("format", json());
  const auto accepted =
      "one of deepspeed, accelerate, torchrun, axolotl, litgpt, torchtune, transformers, vllm, "
      "llama_cpp";
  if (!format.is_string()) {
    return error{"request.missing_field", "format",
                 std::string("[format] is required: ") + accepted};
  }
  const std::string name = format.get<std::string>();
  if (!listed(name, std::begin(launch_formats), std::end(launch_formats))) {
    return error{"request.invalid_value", "format",
                 "[format] must be " + std::string(accepted) + ", got \"" + name + "\""};
  }
  return name;
}

result<json> export_answer(const json& request, const std::string& format,
                           const resolved_model& model, const cluster_spec& cluster,
                           const json& estimate) {
  launch_setup setup;
  setup.model_id = model_id_of(request);
  setup.spec = &model.spec;
  setup.cluster = cluster;
  const json& workload = request.value("workload", json::object());
  setup.inference = workload.is_object() && workload.value("phase", json()) == "inference";
  const bool serving_format = format == "vllm" || format == "llama_cpp";
  if (serving_format != setup.inference) {
    return error{"request.invalid_value", "format",
                 "[format] " + format +
                     (serving_format ? " serves a model: it exports an "
                                       "inference estimate (workload.phase "
                                       "inference)"
                                     : " launches training: it exports a "
                                       "training estimate")};
  }
  std::vector<std::string> warnings;
  result<launch_output> written = error{};
  if (setup.inference) {
    auto read = read_inference_request(request, model.spec, cluster.gpus, warnings);
    if (!read.ok()) return read.failure();
    setup.serving = read.value();
    const json& kv = workload.value("kv_cache", json::object());
    const std::string compute = workload.value("compute", json("bf16")).get<std::string>();
    setup.kv_dtype =
        kv.is_object() && kv.contains("dtype")
            ? kv.at("dtype").get<std::string>()
            : (compute == "fp32" || setup.serving.config.activation_bytes == 4 ? "fp32" : "bf16");
    written = export_serving(setup, format);
  } else {
    auto config = read_detailed_workload(request, model.spec, false, warnings);
    if (!config.ok()) return config.failure();
    auto parallel = read_training_parallel(request, cluster.gpus, ranks_per_node(cluster));
    if (!parallel.ok()) return parallel.failure();
    setup.training = config.value();
    setup.parallel = parallel.value();
    setup.method = estimate.at("parallel").value("method", "single");
    written = export_training(setup, format);
  }
  if (!written.ok()) return written.failure();
  json out = json_object(8);
  out["format"] = format;
  json files = json::array();
  for (auto& f : written.value().files) {
    // The text to save, where the core writes the syntax itself: JSON, Python. A YAML file's
    // text is its caller's to write, with a YAML library.
    json text;
    if (f.syntax == "json") text = f.content.dump(2) + "\n";
    if (f.syntax == "python") text = python_text(f.content, setup.model_id);
    files.push_back({{"name", f.name},
                     {"syntax", f.syntax},
                     {"content", std::move(f.content)},
                     {"text", std::move(text)}});
  }
  out["files"] = std::move(files);
  out["command"] = written.value().command.empty() ? json() : json(written.value().command);
  out["not_expressed"] = gaps_json(written.value().not_expressed);
  out["estimate"] = {{"peak_bytes", estimate.at("peak_bytes")},
                     {"verdict", estimate.at("verdict")},
                     {"fits", estimate.at("fits")}};
  return out;
}

result<json> import_answer(const json& request, std::uint64_t hidden_size) {
  const json& format = request.value("format", json());
  if (!format.is_string() ||
      (format != "deepspeed" && format != "vllm" && format != "axolotl" && format != "accelerate" &&
       format != "llama_cpp" && format != "torchtune")) {
    return error{"request.invalid_value", "format",
                 "[format] import reads deepspeed (a config's JSON), accelerate and axolotl (a "
                 "config's YAML as a tree), torchtune (a `tune run` line or a config's YAML as a "
                 "tree), vllm (a `vllm serve` line) or llama_cpp (a llama-server line)"};
  }
  const json& file = request.value("file", json());
  result<launch_import> read = error{};
  if (format == "deepspeed") {
    if (!file.is_object()) {
      return error{"request.invalid_type", "file", "[file] a DeepSpeed config: a JSON object"};
    }
    read = import_deepspeed(file, hidden_size);
  } else if (format == "axolotl") {
    read = import_axolotl(file);
  } else if (format == "accelerate") {
    read = import_accelerate(file);
  } else if (format == "torchtune") {
    read = import_torchtune(file);
  } else {
    if (!file.is_string()) {
      return error{"request.invalid_type", "file", "[file] a command line: a string"};
    }
    read = format == "vllm" ? import_vllm(file.get<std::string>())
                            : import_llama_cpp(file.get<std::string>());
  }
  if (!read.ok()) return read.failure();
  json merged = read.value().fields;
  json overridden = json::array();
  const json& own = request.value("request", json::object());
  if (!own.is_object()) {
    return error{"request.invalid_type", "request",
                 "[request] the estimate's own fields: an object"};
  }
  merge_over(merged, own, "", overridden);
  // DeepSpeed's train_batch_size must be micro-batch x accumulation x data-parallel ranks (its
  // config check); ZeRO's data-parallel ranks are all the GPUs.
  if (format == "deepspeed" && file.contains("train_batch_size")) {
    const json& w = merged.value("workload", json::object());
    const json& c = merged.value("cluster", json::object());
    const json want = file.at("train_batch_size");
    const auto count = [](const json& o, const char* key, std::uint64_t absent) {
      const auto it = o.is_object() ? o.find(key) : o.end();
      if (!o.is_object() || it == o.end()) return std::optional<std::uint64_t>(absent);
      return it->is_number_unsigned() ? std::optional<std::uint64_t>(it->get<std::uint64_t>())
                                      : std::nullopt;
    };
    const auto micro = count(w, "micro_batch", 0);
    const auto accumulation = count(w, "grad_accumulation", 1);
    const auto gpus = count(c, "gpus", 1);
    if (micro && *micro > 0 && accumulation && gpus && want.is_number() && *micro < (1ULL << 20) &&
        *accumulation < (1ULL << 20) && *gpus < (1ULL << 20)) {
      const std::uint64_t product = *micro * *accumulation * *gpus;
      if (json(product) != want) {
        read.value().conflicts.push_back({"train_batch_size", "the file's " + want.dump() +
                                                                  " is not micro-batch x gradient "
                                                                  "accumulation x GPUs (" +
                                                                  std::to_string(product) + ")"});
      }
    }
  }
  // axolotl without DeepSpeed or FSDP runs one replica per process: DDP over several GPUs.
  if (format == "axolotl" && !file.contains("deepspeed") && !file.contains("fsdp")) {
    const json& cluster = merged.value("cluster", json::object());
    const json& gpus = cluster.is_object() ? cluster.value("gpus", json(1)) : json(1);
    const bool open = !merged.contains("parallel") || (merged.at("parallel").is_object() &&
                                                       !merged.at("parallel").contains("method"));
    if (gpus.is_number_unsigned() && gpus.get<std::uint64_t>() > 1 && open) {
      merged["parallel"]["method"] = "ddp";
      read.value().assumed.push_back(
          {"parallel.method", "ddp: axolotl without DeepSpeed or FSDP keeps a replica per GPU"});
    }
  }
  // Empty sections the file did not fill are left out.
  for (auto it = merged.begin(); it != merged.end();) {
    it = it->is_object() && it->empty() ? merged.erase(it) : std::next(it);
  }
  json out = json_object(6);
  out["format"] = format;
  out["request"] = std::move(merged);
  out["ignored"] = gaps_json(read.value().ignored);
  out["conflicts"] = gaps_json(read.value().conflicts);
  out["assumed"] = gaps_json(read.value().assumed);
  out["overridden"] = std::move(overridden);
  return out;
}

}  // namespace gpumem
