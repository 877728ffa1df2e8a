// gpumem command line: turns arguments into a JSON API request, calls the core's
// handle_request, and prints the response as a table or (with --json) as JSON. Exit code 2
// with a message on stderr for bad input.

#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "gpumem/api/json_api.hpp"
#include "print.hpp"
#include "table.hpp"
#include "usage.hpp"
#include "yaml_text.hpp"

namespace {

using gpumem::cli::gib;
using gpumem::cli::print_components;
using gpumem::cli::print_kv_cache;
using gpumem::cli::print_offload;
using gpumem::cli::verdict_text;
using nlohmann::json;
using nlohmann::ordered_json;

constexpr int bad_input = 2;

struct arguments {
  std::string command;
  std::map<std::string, std::string> options;  // --name value
  bool json_output = false;
};

int fail(const std::string& message) {
  std::cerr << "gpumem: " << message << "\n";
  return bad_input;
}

bool parse_arguments(int argc, char** argv, arguments& args, std::string& problem) {
  for (int i = 1; i < argc; ++i) {
    std::string word = argv[i];
    if (word == "--json") {
      args.json_output = true;
    } else if (word == "--grad-ckpt" || word == "--no-grad-ckpt" || word == "--sequence-parallel" ||
               word == "--no-kbit-preparation" || word == "--selective-recompute" ||
               word == "--keep-outputs") {
      args.options[word.substr(2)] = "true";
    } else if (word == "--help" || word == "-h" || word == "--version") {
      args.command = word == "--version" ? "version" : "help";
    } else if (word.rfind("--", 0) == 0) {
      if (i + 1 >= argc) {
        problem = word + " needs a value";
        return false;
      }
      args.options[word.substr(2)] = argv[++i];
    } else if (args.command.empty()) {
      args.command = word;
    } else if (args.command == "validate" && !args.options.count("file")) {
      args.options["file"] = word;
    } else {
      problem = "unexpected argument '" + word + "'";
      return false;
    }
  }
  return true;
}

bool read_text(const std::string& path, std::string& text) {
  if (path == "-") {
    std::ostringstream buffer;
    buffer << std::cin.rdbuf();
    text = buffer.str();
    return true;
  }
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream buffer;
  buffer << in.rdbuf();
  text = buffer.str();
  return true;
}

// A preset id, or a path to a config.json file (anything that exists on disk).
bool model_reference(const std::string& value, ordered_json& model, std::string& problem) {
  std::string text;
  if (!read_text(value, text)) {
    model = value;
    return true;
  }
  // (The request wraps it in two more levels: {"model": {"config": ...}}.)
  if (gpumem::json_nesting_depth(text) > gpumem::max_json_depth - 2) {
    problem = value + " nests arrays and objects deeper than " +
              std::to_string(gpumem::max_json_depth - 2) + " levels";
    return false;
  }
  json config = json::parse(text, nullptr, false);
  if (config.is_discarded()) {
    problem = value + " is not valid JSON";
    return false;
  }
  model = {{"config", config}, {"name", value}};
  return true;
}

// Sends the request; prints the error and returns false when the core answers ok: false.
bool call(const ordered_json& request, ordered_json& response) {
  response = ordered_json::parse(gpumem::handle_request(request.dump()), nullptr, false);
  if (response.value("ok", false)) return true;
  const auto& e = response["error"];
  std::cerr << "gpumem: " << e.value("message", "error") << " (" << e.value("code", "") << ")\n";
  return false;
}

std::string count_text(const ordered_json& value) {
  return value.is_number() ? gpumem::cli::group_digits(value.get<std::uint64_t>()) : "-";
}

void print_warnings(const ordered_json& response) {
  for (const auto& w : response["warnings"])
    std::cerr << "warning: " << w.get<std::string>() << "\n";
}

// Sends the request and prints its warnings, and with --json its result. True when the caller
// should print its table from `result`; otherwise `code` is the exit code.
bool answer(const arguments& args, const ordered_json& request, ordered_json& result, int& code) {
  ordered_json response;
  if (!call(request, response)) {
    code = bad_input;
    return false;
  }
  print_warnings(response);
  result = response["result"];
  code = 0;
  if (!args.json_output) return true;
  std::cout << result.dump(2) << "\n";
  return false;
}

int models_command(const arguments& args) {
  ordered_json r;
  int code = 0;
  if (!answer(args, {{"api_version", 1}, {"command", "models"}}, r, code)) return code;
  gpumem::cli::table t({"id", "family", "type", "params", "active"});
  for (const auto& m : r["models"]) {
    t.row({m["id"], m["family"], m["model_type"], count_text(m["total_params"]),
           count_text(m["active_params"])});
  }
  std::cout << t.render();
  return 0;
}

int gpus_command(const arguments& args) {
  ordered_json r;
  int code = 0;
  if (!answer(args, {{"api_version", 1}, {"command", "gpus"}}, r, code)) return code;
  gpumem::cli::table t({"id", "name", "memory GiB", "fp16 TFLOP/s", "HBM TB/s", "link GB/s"});
  for (const auto& g : r["gpus"]) {
    t.row({g["id"], g["name"],
           gpumem::cli::fixed(g["memory_bytes"].get<double>() / (1ULL << 30), 2),
           gpumem::cli::fixed(g["fp16_dense_flops"].get<double>() / 1e12, 1),
           gpumem::cli::fixed(g["memory_bandwidth_bytes_per_s"].get<double>() / 1e12, 2),
           gpumem::cli::fixed(g["link_bandwidth_bytes_per_s"].get<double>() / 1e9, 0)});
  }
  std::cout << t.render();
  return 0;
}

// Where each preset's config.json and each GPU's figures come from.
int sources_command(const arguments& args) {
  ordered_json r;
  int code = 0;
  if (!answer(args, {{"api_version", 1}, {"command", "sources"}}, r, code)) return code;
  for (const auto& m : r["models"]) {
    std::cout << m["id"].get<std::string>() << "\n";
    for (const auto& s : m["source"]) std::cout << "  " << s.get<std::string>() << "\n";
  }
  for (const auto& g : r["gpus"]) {
    std::cout << g["id"].get<std::string>() << "\n";
    for (const auto& [figure, s] : g["sources"].items())
      std::cout << "  " << figure << ": " << s.get<std::string>() << "\n";
  }
  return 0;
}

int params_command(const arguments& args) {
  auto it = args.options.find("model");
  if (it == args.options.end()) return fail("params needs --model <preset id | config.json path>");
  ordered_json model;
  std::string problem;
  if (!model_reference(it->second, model, problem)) return fail(problem);
  if (args.options.count("task-head")) {
    if (model.is_string()) model = {{"preset", model}};
    model["task_head"] = args.options.at("task-head");
  }
  ordered_json r;
  int code = 0;
  if (!answer(args, {{"api_version", 1}, {"command", "params"}, {"model", model}}, r, code))
    return code;
  const auto& g = r["groups"];
  std::cout << r["model"]["architecture"].get<std::string>() << " ("
            << r["model"]["model_type"].get<std::string>() << ")\n\n";
  gpumem::cli::table groups({"group", "parameters"});
  groups.row({"token embedding", count_text(g["embedding"]["token"])});
  groups.row({"position embedding", count_text(g["embedding"]["position"])});
  groups.row({"attention", count_text(g["attention"])});
  groups.row({"mlp (dense)", count_text(g["mlp"]["dense"])});
  groups.row({"mlp router", count_text(g["mlp"]["router"])});
  groups.row({"mlp routed experts", count_text(g["mlp"]["routed_experts"])});
  groups.row({"mlp shared experts", count_text(g["mlp"]["shared_experts"])});
  groups.row({"norms", count_text(g["norm"])});
  groups.row({"projections", count_text(g["projection"])});
  groups.row({std::string("lm head") + (r["model"]["tied_embeddings"].get<bool>() ? " (tied)" : ""),
              count_text(g["lm_head"])});
  groups.row({"task head", count_text(g["task_head"])});
  groups.row({"vision tower", count_text(g["vision"])});
  groups.row({"total", count_text(r["total_params"])});
  groups.row({"active per token", count_text(r["active_params"])});
  std::cout << groups.render() << "\n";
  gpumem::cli::table blocks({"blocks", "stack", "attention", "mlp", "norms", "per block"});
  for (const auto& b : r["blocks"]) {
    blocks.row(
        {std::to_string(b["first"].get<int>()) + "-" + std::to_string(b["last"].get<int>()),
         std::string(b["stack"]) + (b["moe"].get<bool>() ? " (MoE)" : "") +
             (b["shares_params_of"].get<int>() >= 0
                  ? " (runs block " + std::to_string(b["shares_params_of"].get<int>()) + "'s)"
                  : ""),
         count_text(b["attention"]), count_text(b["mlp"]), count_text(b["norm"]),
         count_text(b["total"])});
  }
  std::cout << blocks.render();
  return 0;
}

constexpr const char* default_gpu = "a100-sxm4-80gb";

std::string option(const arguments& args, const char* name, const std::string& fallback) {
  auto it = args.options.find(name);
  return it == args.options.end() ? fallback : it->second;
}

// A numeric option as a JSON number (the core checks its range); text that is not a number is
// passed as a string so that the core names the field in its error.
ordered_json number_option(const std::string& text) {
  const json parsed = json::parse(text, nullptr, false);
  return parsed.is_number() ? ordered_json(parsed) : ordered_json(text);
}

// The parts of estimate and plan requests that come from the same options.
bool training_request(const arguments& args, ordered_json& request) {
  if (args.options.count("grad-ckpt") + args.options.count("no-grad-ckpt") +
          args.options.count("selective-recompute") >
      1) {
    fail("--grad-ckpt, --no-grad-ckpt and --selective-recompute exclude each other");
    return false;
  }
  auto it = args.options.find("model");
  if (it == args.options.end() && !args.options.count("from")) {
    fail(args.command + " needs --model <preset id | config.json path>");
    return false;
  }
  ordered_json model;
  std::string problem;
  if (it != args.options.end() && !model_reference(it->second, model, problem)) {
    fail(problem);
    return false;
  }
  request["api_version"] = 1;
  request["command"] = args.command;
  if (args.options.count("mode")) request["mode"] = args.options.at("mode");
  if (it != args.options.end()) request["model"] = model;
  request["cluster"] = {{"gpu", option(args, "gpu", default_gpu)},
                        {"gpus", number_option(option(args, "gpus", "1"))}};
  if (args.options.count("gpus-per-node")) {
    request["cluster"]["gpus_per_node"] = number_option(args.options.at("gpus-per-node"));
  }
  // The memory a plan leaves free, as a fraction of each GPU's (default 0.05 in detailed mode).
  if (args.options.count("headroom"))
    request["cluster"]["headroom"] = number_option(args.options.at("headroom"));
  // Host budgets per node for offloading, given in GiB.
  for (const auto& [flag, field] :
       {std::pair<const char*, const char*>{"host-ram-gib", "host_ram_bytes"},
        {"nvme-gib", "nvme_bytes"}}) {
    if (!args.options.count(flag)) continue;
    const ordered_json value = number_option(args.options.at(flag));
    request["cluster"][field] =
        value.is_number()
            ? ordered_json(static_cast<std::uint64_t>(value.get<double>() * (1ULL << 30)))
            : value;
  }
  request["workload"] = {{"seq_len", number_option(option(args, "seq-len", "512"))}};
  return true;
}

// The detailed estimator's workload and metric options, passed through for the core to check.
void add_detailed_options(const arguments& args, ordered_json& request) {
  if (option(args, "mode", "detailed") != "detailed") return;
  // The detailed estimator's workload fields, passed through for the core to check.
  for (const auto& [flag, field] : {std::pair<const char*, const char*>{"phase", "phase"},
                                    {"finetune", "finetune"},
                                    {"weights", "weights"},
                                    {"compute", "compute"},
                                    {"optimizer", "optimizer"},
                                    {"optimizer-impl", "optimizer_impl"},
                                    {"attention", "attention"},
                                    {"loss", "loss"},
                                    {"framework", "framework"}}) {
    if (args.options.count(flag)) request["workload"][field] = args.options.at(flag);
  }
  if (args.options.count("grad-ckpt")) request["workload"]["grad_ckpt"] = true;
  if (args.options.count("no-grad-ckpt")) request["workload"]["grad_ckpt"] = false;
  if (args.options.count("selective-recompute")) request["workload"]["grad_ckpt"] = "selective";
  if (args.options.count("no-kbit-preparation")) request["workload"]["kbit_preparation"] = false;
  if (args.options.count("keep-outputs")) request["workload"]["keep_outputs"] = true;
  for (const char* library : {"torch", "bitsandbytes", "peft"}) {
    const std::string flag = std::string(library) + "-version";
    if (args.options.count(flag)) request["workload"]["software"][library] = args.options.at(flag);
  }
  for (const auto& [flag, field] :
       {std::pair<const char*, const char*>{"grad-accumulation", "grad_accumulation"},
        {"target-len", "target_len"}}) {
    if (args.options.count(flag)) request["workload"][field] = number_option(args.options.at(flag));
  }
  const auto module_list = [&](const char* flag) {
    ordered_json targets = ordered_json::array();
    std::stringstream list(args.options.at(flag));
    for (std::string item; std::getline(list, item, ',');) targets.push_back(item);
    return targets;
  };
  if (args.options.count("lora-r") || args.options.count("lora-targets") ||
      args.options.count("lora-dropout") || args.options.count("modules-to-save")) {
    ordered_json lora = ordered_json::object();
    if (args.options.count("lora-r")) lora["r"] = number_option(args.options.at("lora-r"));
    if (args.options.count("lora-dropout"))
      lora["dropout"] = number_option(args.options.at("lora-dropout"));
    if (args.options.count("lora-targets")) lora["targets"] = module_list("lora-targets");
    if (args.options.count("modules-to-save"))
      lora["modules_to_save"] = module_list("modules-to-save");
    request["workload"]["lora"] = lora;
  }
  if (args.options.count("ia3-targets"))
    request["workload"]["ia3"] = {{"targets", module_list("ia3-targets")}};
  if (args.options.count("num-virtual-tokens")) {
    request["workload"]["prompt_tuning"] = {
        {"num_virtual_tokens", number_option(args.options.at("num-virtual-tokens"))}};
  }
  if (args.options.count("metric")) request["metric"] = args.options.at("metric");
  // Inference: generation length, weight-format details and the KV cache.
  for (const auto& [flag, field] : {std::pair<const char*, const char*>{"new-tokens", "new_tokens"},
                                    {"group-size", "group_size"}}) {
    if (args.options.count(flag)) request["workload"][field] = number_option(args.options.at(flag));
  }
  if (args.options.count("fp8-scaling"))
    request["workload"]["fp8_scaling"] = args.options.at("fp8-scaling");
  for (const auto& [flag, field] :
       {std::pair<const char*, const char*>{"kv-cache", "kind"}, {"kv-dtype", "dtype"}}) {
    if (args.options.count(flag)) request["workload"]["kv_cache"][field] = args.options.at(flag);
  }
  for (const auto& [flag, field] : {std::pair<const char*, const char*>{"kv-tokens", "tokens"},
                                    {"gpu-memory-utilization", "gpu_memory_utilization"}}) {
    if (args.options.count(flag))
      request["workload"]["kv_cache"][field] = number_option(args.options.at(flag));
  }
  if (args.options.count("transformers-version"))
    request["workload"]["software"]["transformers"] = args.options.at("transformers-version");
  if (args.options.count("solve")) request["solve"] = args.options.at("solve");
}

bool inference_phase(const arguments& args) { return option(args, "phase", "") == "inference"; }

// An estimate request from the options (export takes the same).
bool estimate_request(const arguments& args, ordered_json& request) {
  if (!training_request(args, request)) return false;
  request["parallel"] = {{"method", option(args, "method", "single")}};
  if (args.options.count("tp")) request["parallel"]["tp"] = number_option(args.options.at("tp"));
  if (args.options.count("sequence-parallel")) request["parallel"]["sequence_parallel"] = true;
  if (args.options.count("cp")) request["parallel"]["cp"] = number_option(args.options.at("cp"));
  if (args.options.count("cp-kind")) request["parallel"]["cp_kind"] = args.options.at("cp-kind");
  if (args.options.count("micro-batches")) {
    request["parallel"]["micro_batches"] = number_option(args.options.at("micro-batches"));
  }
  if (args.options.count("pp")) request["parallel"]["pp"] = number_option(args.options.at("pp"));
  if (args.options.count("dp-method"))
    request["parallel"]["dp_method"] = args.options.at("dp-method");
  for (const char* state : {"optimizer", "params", "gradients", "activations"}) {
    const std::string flag = std::string("offload-") + state;
    if (args.options.count(flag)) request["parallel"]["offload"][state] = args.options.at(flag);
  }
  for (const auto& [flag, key] :
       {std::pair<const char*, const char*>{"reduce-bucket-size", "reduce_bucket_size"},
        {"prefetch-bucket-size", "stage3_prefetch_bucket_size"},
        {"persistence-threshold", "stage3_param_persistence_threshold"}}) {
    if (args.options.count(flag)) {
      request["parallel"]["deepspeed"][key] = number_option(args.options.at(flag));
    }
  }
  if (args.options.count("dp-tp-fraction")) {
    request["parallel"]["dp_tp_fraction"] = args.options.at("dp-tp-fraction");
  }
  if (args.options.count("micro-batch")) {
    request["workload"]["micro_batch"] = number_option(args.options.at("micro-batch"));
  } else if (!inference_phase(args) && !args.options.count("solve") &&
             !args.options.count("from")) {
    fail(args.command + " needs --micro-batch B (or --solve max_batch)");
    return false;
  }
  if (inference_phase(args) && !args.options.count("method")) request.erase("parallel");
  add_detailed_options(args, request);
  return true;
}

// --from FILE: a launch file (a DeepSpeed config's JSON, a `vllm serve` line) read into the
// request; the options given on the command line win over it, and the notes say where.
bool from_file(const arguments& args, ordered_json& request) {
  const std::string path = args.options.at("from");
  std::string text;
  if (!read_text(path, text)) {
    fail("cannot read " + path);
    return false;
  }
  // JSON: a DeepSpeed config; YAML: an axolotl or accelerate config (read by libyaml); else a
  // `vllm serve` line.
  json tree = json::parse(text, nullptr, false);
  std::string format = option(args, "format", "");
  const bool yaml_file = path.size() > 5 && (path.compare(path.size() - 5, 5, ".yaml") == 0 ||
                                             path.compare(path.size() - 4, 4, ".yml") == 0);
  const auto first = text.find_first_not_of(" \t\r\n");
  const bool tune_line = first != std::string::npos && text.compare(first, 9, "tune run ") == 0;
  if (format.empty() && tune_line) format = "torchtune";
  if (tree.is_discarded() && !tune_line &&
      (yaml_file || format == "axolotl" || format == "accelerate" || format == "torchtune")) {
    ordered_json yaml;
    std::string problem;
    if (!gpumem::cli::yaml_tree(text, yaml, problem)) {
      fail(path + " is not YAML: " + problem);
      return false;
    }
    tree = yaml;
    const bool builder = yaml.is_object() && yaml.contains("model") && yaml["model"].is_object() &&
                         yaml["model"].contains("_component_");
    if (format.empty())
      format = yaml.is_object() && yaml.contains("base_model") ? "axolotl"
               : builder                                       ? "torchtune"
                                                               : "accelerate";
  }
  if (format.empty()) {
    const bool llama = first != std::string::npos &&
                       text.find("llama-", first) != std::string::npos &&
                       text.find("llama-", first) < text.find_first_of(" \t\n", first);
    format = tree.is_object() ? "deepspeed" : llama ? "llama_cpp" : "vllm";
  }
  // Only what the command line says overrides the file: drop the options' defaults.
  ordered_json own = request;
  own.erase("api_version");
  own.erase("command");
  if (!args.options.count("gpu")) own["cluster"].erase("gpu");
  if (!args.options.count("gpus")) own["cluster"].erase("gpus");
  if (!args.options.count("seq-len")) own["workload"].erase("seq_len");
  if (own.contains("parallel") && !args.options.count("method")) own["parallel"].erase("method");
  for (auto it = own.begin(); it != own.end();) {
    it = it->is_object() && it->empty() ? own.erase(it) : std::next(it);
  }
  ordered_json import = {
      {"api_version", 1},
      {"command", "import"},
      {"format", format},
      {"file", format == "vllm" || format == "llama_cpp" || tune_line ? ordered_json(text)
                                                                      : ordered_json(tree)},
      {"request", own}};
  ordered_json response;
  if (!call(import, response)) return false;
  const auto& r = response["result"];
  for (const auto& g : r["ignored"])
    std::cerr << "note: " << path << ": " << g["field"].get<std::string>() << " ignored ("
              << g["reason"].get<std::string>() << ")\n";
  for (const auto& g : r["assumed"])
    std::cerr << "note: " << path << ": " << g["field"].get<std::string>() << " "
              << g["reason"].get<std::string>() << "\n";
  for (const auto& g : r["conflicts"])
    std::cerr << "warning: " << path << ": " << g["field"].get<std::string>() << ": "
              << g["reason"].get<std::string>() << "\n";
  for (const auto& o : r["overridden"])
    std::cerr << "note: " << o["field"].get<std::string>() << " is " << o["request"].dump()
              << " (the command line), not the file's " << o["file"].dump() << "\n";
  const std::string command = request["command"];
  request = r["request"];
  request["api_version"] = 1;
  request["command"] = command;
  // The GPU neither the file nor the command line names: the options' default.
  if (!request["cluster"].contains("gpu")) request["cluster"]["gpu"] = default_gpu;
  return true;
}

// export --format F: the setup's launch files and command.
int export_command(const arguments& args) {
  if (!args.options.count("format")) {
    return fail(
        "export needs --format "
        "deepspeed|accelerate|axolotl|litgpt|torchtune|torchrun|transformers|vllm|llama_cpp");
  }
  ordered_json request;
  if (!estimate_request(args, request)) return bad_input;
  if (args.options.count("from") && !from_file(args, request)) return bad_input;
  request["command"] = "export";
  request["format"] = args.options.at("format");
  ordered_json r;
  int code = 0;
  if (!answer(args, request, r, code)) return code;
  const std::string dir = option(args, "write", "");
  for (const auto& f : r["files"]) {
    const std::string name = f["name"];
    const std::string body =
        f["syntax"] == "yaml" ? gpumem::cli::yaml_text(f["content"]) : f["text"].get<std::string>();
    if (dir.empty()) {
      std::cout << "# " << name << "\n" << body << "\n";
      continue;
    }
    std::ofstream out(dir + "/" + name, std::ios::binary);
    if (!(out << body)) return fail("cannot write " + dir + "/" + name);
    std::cout << "wrote " << dir << "/" << name << "\n";
  }
  if (r["command"].is_string())
    std::cout << "# launch\n" << r["command"].get<std::string>() << "\n";
  for (const auto& g : r["not_expressed"]) {
    std::cerr << "note: not in this format: " << g["field"].get<std::string>() << " ("
              << g["reason"].get<std::string>() << ")\n";
  }
  std::cerr << "note: the estimate of this setup: " << gib(r["estimate"]["peak_bytes"])
            << " GiB per GPU, " << verdict_text(r["estimate"]["verdict"]) << "\n";
  return 0;
}

int estimate_command(const arguments& args) {
  ordered_json request;
  if (!estimate_request(args, request)) return bad_input;
  if (args.options.count("from") && !from_file(args, request)) return bad_input;
  ordered_json r;
  int code = 0;
  if (!answer(args, request, r, code)) return code;
  std::cout << r["model"].value("id", r["model"].value("name", "")) << ", "
            << r["parallel"]["method"].get<std::string>() << " on " << r["cluster"]["gpus"] << " x "
            << r["cluster"]["gpu"]["name"].get<std::string>() << ", micro-batch "
            << r["workload"]["micro_batch"] << ", sequence " << r["workload"]["seq_len"];
  if (r["workload"].contains("target_len")) std::cout << ", target " << r["workload"]["target_len"];
  std::cout << "\n\n";
  for (const auto& rank : r["per_gpu"]) {
    std::cout << "ranks " << rank["ranks"]["first"] << "-" << rank["ranks"]["last"] << ":\n";
    print_components(rank);
  }
  const std::string verdict = r.value("verdict", "does_not_fit");
  std::cout << "\n"
            << (verdict == "fits"    ? "fits with the headroom left"
                : verdict == "tight" ? "tight: within the GPU's memory but not its headroom"
                                     : "does NOT fit")
            << " (" << gib(r["cluster"]["usable_bytes"]) << " of "
            << gib(r["cluster"]["gpu"]["memory_bytes"]) << " GiB per GPU usable)";
  if (r.contains("peak_phase"))
    std::cout << "; the peak falls in the " << r["peak_phase"].get<std::string>();
  if (r.contains("step_time")) {
    std::cout << "; about " << gpumem::cli::fixed(r["step_time"]["tokens_per_s"].get<double>(), 0)
              << " tokens/s";
  }
  std::cout << "\n";
  if (r.contains("kv_cache")) print_kv_cache(r);
  if (!r.contains("kv_cache") && r.contains("solution")) {
    std::cout << "largest micro-batch that fits: " << r["solution"]["max_batch"] << " (limited by "
              << r["solution"]["limited_by"].get<std::string>() << ")\n";
  }
  if (r.contains("offload")) print_offload(r["offload"]);
  // (LLMem's notes explain its components, by name; the detailed estimator's are about the run.)
  const ordered_json notes = r.value("notes", ordered_json::array());
  for (const auto& note : notes.is_array() ? notes : ordered_json::array())
    std::cout << "note: " << note.get<std::string>() << "\n";
  return 0;
}

int plan_command(const arguments& args) {
  ordered_json request;
  if (!training_request(args, request)) return bad_input;
  add_detailed_options(args, request);
  request.erase("metric");  // plans compare device footprints
  // Training plans search the micro-batch unless it is given; an inference plan serves the batch
  // it is given.
  if (args.options.count("micro-batch"))
    request["workload"]["micro_batch"] = number_option(args.options.at("micro-batch"));
  // The time and cost of training on so many tokens (a dataset's times its epochs).
  if (args.options.count("global-batch"))
    request["workload"]["global_batch"] = number_option(args.options.at("global-batch"));
  if (args.options.count("train-tokens"))
    request["workload"]["train_tokens"] = number_option(args.options.at("train-tokens"));
  if (args.options.count("price-per-gpu-hour"))
    request["cluster"]["price_per_gpu_hour"] = number_option(args.options.at("price-per-gpu-hour"));
  // --from FILE: the user's launch file fixes what it says (the method, the micro-batch); the
  // plan chooses the rest.
  if (args.options.count("from")) {
    if (!from_file(args, request)) return bad_input;
    // A plan weighs every method: the file's layout is one of its candidates.
    if (request.contains("parallel")) {
      std::cerr << "note: " << args.options.at("from") << ": parallel "
                << request["parallel"].dump() << " is weighed among the plan's candidates\n";
      request.erase("parallel");
    }
  }
  ordered_json r;
  int code = 0;
  if (!answer(args, request, r, code)) return code;
  if (inference_phase(args) || request["workload"].value("phase", "") == "inference") {
    gpumem::cli::table t({"method", "GPUs", "fits", "peak GiB per GPU", "limited by"});
    for (const auto& c : r["candidates"]) {
      t.row({c["method"], std::to_string(c["gpus"].get<std::uint64_t>()),
             c["valid"].get<bool>() ? verdict_text(c["verdict"]) : "invalid",
             c["valid"].get<bool>() ? gib(c["peak_bytes"]) : "-",
             c.value("limited_by", std::string("-"))});
    }
    std::cout << t.render() << "\n" << r["reason"].get<std::string>() << "\n";
    return 0;
  }
  gpumem::cli::table t(
      {"method", "tp", "cp", "offload", "ckpt", "fits", "max micro-batch", "peak GiB", "tokens/s"});
  const ordered_json asked = request["workload"].value("grad_ckpt", ordered_json(false));
  for (const auto& c : r["candidates"]) {
    // Checkpointing as the candidate runs it: the plan's choice, or what the request fixed.
    const ordered_json ckpt =
        c.contains("workload") ? c["workload"].value("grad_ckpt", asked) : asked;
    const std::string ckpt_text = ckpt.is_string() ? "selective" : ckpt == true ? "yes" : "no";
    std::string offload = "-";
    if (c.contains("offload")) {
      offload.clear();
      for (const char* state : {"optimizer", "params", "gradients", "activations"}) {
        const std::string where = c["offload"][state];
        if (where != "none")
          offload += (offload.empty() ? "" : " ") + std::string(state) + ":" + where;
      }
    }
    t.row({c["method"], std::to_string(c["tp"].get<int>()), std::to_string(c["cp"].get<int>()),
           offload, ckpt_text, c["valid"].get<bool>() ? verdict_text(c["verdict"]) : "invalid",
           std::to_string(c["max_micro_batch"].get<std::uint64_t>()), gib(c["peak_bytes"]),
           // (A speed only where it runs: a candidate that does not fit has none.)
           c["fits"].get<bool>() ? gpumem::cli::fixed(c["tokens_per_s"].get<double>(), 0) : "-"});
  }
  std::cout << t.render() << "\n" << r["reason"].get<std::string>() << "\n";
  for (const auto& line : r.value("not_offered", ordered_json::array()))
    std::cout << "- " << line.get<std::string>() << "\n";
  if (r.contains("time_and_cost"))
    std::cout << r["time_and_cost"]["sentence"].get<std::string>() << "\n";
  const ordered_json alternatives = r.value("alternatives", ordered_json::array());
  if (!alternatives.empty()) std::cout << "\nWhat it would take (changes to the run):\n";
  for (const auto& a : alternatives) std::cout << "- " << a["sentence"].get<std::string>() << "\n";
  return 0;
}

std::string percent(const ordered_json& value) {
  return gpumem::cli::fixed(value.get<double>() * 100, 1) + " %";
}

int validate_command(const arguments& args) {
  auto it = args.options.find("file");
  if (it == args.options.end()) return fail("validate needs a file: gpumem validate FILE.json");
  std::string text;
  if (!read_text(it->second, text)) return fail("cannot read " + it->second);
  // (The request wraps it in one more level: {"points": ...}.)
  if (gpumem::json_nesting_depth(text) > gpumem::max_json_depth - 1)
    return fail(it->second + " nests arrays and objects deeper than " +
                std::to_string(gpumem::max_json_depth - 1) + " levels");
  json points = json::parse(text, nullptr, false);
  if (points.is_discarded()) return fail(it->second + " is not valid JSON");
  ordered_json r;
  int code = 0;
  if (!answer(args, {{"api_version", 1}, {"command", "validate"}, {"points", points}}, r, code))
    return code;
  gpumem::cli::table mem({"point", "metric", "measured GiB", "estimated GiB", "error"});
  for (const auto& p : r["points"]) {
    if (!p["scored"].get<bool>()) continue;
    mem.row({p["id"], p["metric"], gpumem::cli::fixed(p["measured_gib"].get<double>(), 2),
             gpumem::cli::fixed(p["estimated_gib"].get<double>(), 2),
             p.contains("relative_error")
                 ? percent(p["relative_error"])
                 : (p["bound_correct"].get<bool>() ? "bound ok" : "bound WRONG")});
  }
  const auto& s = r["summary"];
  std::cout << "Memory (detailed estimator, " << s["n"] << " peak points):\n"
            << mem.render() << "median |error| " << percent(s["median_abs_rel_error"]) << ", p90 "
            << percent(s["p90_abs_rel_error"]) << ", within 10 %: " << percent(s["within_10pct"])
            << ", bounds " << s["bounds_correct"] << "/" << s["bounds_total"] << "\n";
  for (const auto& [phase, t] : r["by_phase"].items()) {
    std::cout << "  phase " << phase << ": n " << t["n"] << ", median |error| "
              << percent(t["median_abs_rel_error"]) << ", p90 " << percent(t["p90_abs_rel_error"])
              << "\n";
  }
  for (const auto& [trust, t] : r["by_trust"].items()) {
    std::cout << "  trust " << trust << ": n " << t["n"] << ", median |error| "
              << percent(t["median_abs_rel_error"]) << "\n";
  }
  if (r["host"]["n"].get<std::size_t>() > 0) {
    std::cout << "  host RAM of offloaded points: n " << r["host"]["n"] << ", median |error| "
              << percent(r["host"]["median_abs_rel_error"]) << "\n";
  }
  std::size_t unread = 0;
  for (const auto& p : r["points"]) unread += !p["scored"].get<bool>();
  std::cout << unread << " memory points not read yet (--json lists why)\n\n";
  const auto& st = r["step_time"];
  gpumem::cli::table t({"point", "method", "measured", "estimated", "error"});
  for (const auto& p : st["points"]) {
    if (!p["scored"].get<bool>()) continue;
    t.row({p["id"], p["method"], gpumem::cli::fixed(p["measured"].get<double>(), 2),
           gpumem::cli::fixed(p["estimated"].get<double>(), 2), percent(p["relative_error"])});
  }
  std::cout << "Step-time model (" << st["summary"]["n"] << " points with throughput):\n"
            << t.render() << "median |error| " << percent(st["summary"]["median_abs_rel_error"])
            << ", p90 " << percent(st["summary"]["p90_abs_rel_error"])
            << ", within 25 %: " << percent(st["summary"]["within_25pct"]) << "\n";
  std::size_t skipped = 0;
  for (const auto& p : st["points"]) skipped += !p["scored"].get<bool>();
  std::cout << skipped << " throughput points skipped (--json lists why)\n";
  return 0;
}

int run_command(const arguments& args) {
  auto it = args.options.find("request");
  if (it == args.options.end()) return fail("run needs --request FILE (or - for stdin)");
  std::string text;
  if (!read_text(it->second, text)) return fail("cannot read " + it->second);
  const std::string response = gpumem::handle_request(text);
  std::cout << response << "\n";
  const json parsed = json::parse(response, nullptr, false);
  return parsed.value("ok", false) ? 0 : bad_input;
}

}  // namespace

int main(int argc, char** argv) {
  arguments args;
  std::string problem;
  if (!parse_arguments(argc, argv, args, problem))
    return fail(problem + "\n" + gpumem::cli::usage_text());
  if (args.command.empty() || args.command == "help") {
    std::cout << gpumem::cli::usage_text();
    return args.command.empty() ? bad_input : 0;
  }
  if (args.command == "version") {
    std::cout << "gpumem " << GPUMEM_VERSION << " (api_version " << gpumem::api_version << ")\n";
    return 0;
  }
  if (args.command == "models") return models_command(args);
  if (args.command == "gpus") return gpus_command(args);
  if (args.command == "sources") return sources_command(args);
  if (args.command == "params") return params_command(args);
  if (args.command == "run") return run_command(args);
  if (args.command == "estimate") return estimate_command(args);
  if (args.command == "plan") return plan_command(args);
  if (args.command == "export") return export_command(args);
  if (args.command == "validate") return validate_command(args);
  return fail("unknown command '" + args.command + "'\n" + gpumem::cli::usage_text());
}
