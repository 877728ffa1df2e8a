// A user's launch file read back into request fields: a DeepSpeed config and a `vllm serve`
// line, the same keys the exports write (launch_training.cpp, launch_serving.cpp).
#include <cctype>
#include <cmath>
#include <optional>
#include <string>
#include <vector>

#include "api/launch/launch.hpp"

namespace gpumem {

using json = nlohmann::ordered_json;

namespace {

// A count the file states: a non-negative integer (DeepSpeed accepts 5e8 written as a float).
std::optional<std::uint64_t> count_of(const json& value) {
  if (value.is_number_unsigned()) return value.get<std::uint64_t>();
  if (value.is_number_integer() && value.get<std::int64_t>() >= 0)
    return static_cast<std::uint64_t>(value.get<std::int64_t>());
  if (value.is_number_float()) {
    const double v = value.get<double>();
    if (v >= 0 && v < 9007199254740992.0 && std::floor(v) == v)
      return static_cast<std::uint64_t>(v);
  }
  return std::nullopt;
}

// A string member, "" when absent; nullopt when it is there but not a string.
std::optional<std::string> text_of(const json& object, const char* key) {
  const auto it = object.find(key);
  if (it == object.end() || it->is_null()) return std::string();
  if (!it->is_string()) return std::nullopt;
  return it->get<std::string>();
}

bool enabled(const json& config, const char* key) {
  const auto it = config.find(key);
  if (it == config.end() || !it->is_object()) return false;
  const auto on = it->find("enabled");
  return on != it->end() && on->is_boolean() && on->get<bool>();
}

// The DeepSpeed keys that change nothing gpumem estimates.
bool without_memory_effect(const std::string& key) {
  for (const char* k : {"gradient_clipping", "scheduler", "steps_per_print", "wall_clock_breakdown",
                        "prescale_gradients", "gradient_predivide_factor", "tensorboard", "wandb",
                        "csv_monitor", "comms_logger", "flops_profiler", "seed"}) {
    if (key == k) return true;
  }
  return false;
}

std::optional<error> import_zero(const json& z, std::uint64_t hidden, launch_import& out) {
  if (!z.is_object()) return launch_refusal("zero_optimization", "must be an object");
  json parallel = json::object();
  const auto stage = count_of(z.value("stage", json(0)));
  if (!stage || *stage == 0 || *stage > 3) {
    return launch_refusal("zero_optimization.stage",
                          "gpumem estimates ZeRO stages 1 to 3; stage 0 is "
                          "DeepSpeed's plain data parallelism: estimate it as ddp");
  }
  parallel["method"] = "zero" + std::to_string(*stage);
  json buckets = json::object();
  // "auto": what transformers fills in (integrations/deepspeed.py trainer_config_finalize):
  // h^2, 0.9 h^2 and 10 h for hidden size h.
  const auto bucket = [&](const char* key, double autofill) {
    if (!z.contains(key)) return;
    const json& v = z.at(key);
    if (v == "auto" && hidden > 0) {
      buckets[key] = static_cast<std::uint64_t>(autofill);
    } else if (auto n = count_of(v)) {
      buckets[key] = *n;
    } else {
      out.ignored.push_back({std::string("zero_optimization.") + key,
                             "\"auto\" needs the model's hidden size; DeepSpeed's default kept"});
    }
  };
  const double h = static_cast<double>(hidden);
  if (*stage >= 2) bucket("reduce_bucket_size", h * h);
  if (*stage == 3) {
    bucket("stage3_prefetch_bucket_size", 0.9 * h * h);
    bucket("stage3_param_persistence_threshold", 10 * h);
  }
  if (!buckets.empty()) parallel["deepspeed"] = std::move(buckets);
  json offload = json::object();
  for (const auto& [key, name] :
       {std::pair<const char*, const char*>{"offload_optimizer", "optimizer"},
        std::pair<const char*, const char*>{"offload_param", "params"}}) {
    const auto section = z.find(key);
    if (section == z.end() || !section->is_object()) continue;
    const auto device = text_of(*section, "device");
    if (!device)
      return launch_refusal(std::string("zero_optimization.") + key + ".device",
                            "must be a string");
    if (*device == "cpu" || *device == "nvme") offload[name] = *device;
  }
  // DeepSpeed's offloaded optimizer takes the gradients with it.
  if (offload.contains("optimizer")) offload["gradients"] = offload["optimizer"];
  if (!offload.empty()) parallel["offload"] = std::move(offload);
  for (const auto& item : z.items()) {
    const std::string& key = item.key();
    if (key == "stage" || (*stage >= 2 && key == "reduce_bucket_size") ||
        key == "offload_optimizer" || key == "offload_param" ||
        (*stage == 3 &&
         (key == "stage3_prefetch_bucket_size" || key == "stage3_param_persistence_threshold"))) {
      continue;
    }
    out.ignored.push_back({"zero_optimization." + key,
                           "not modelled: its DeepSpeed default is "
                           "what the estimate assumes"});
  }
  out.fields["parallel"] = std::move(parallel);
  return std::nullopt;
}

}  // namespace

result<launch_import> import_deepspeed(const json& config, std::uint64_t hidden_size) {
  if (!config.is_object()) return launch_refusal("file", "a DeepSpeed config is a JSON object");
  launch_import out;
  json workload = json::object();
  const auto micro = count_of(config.value("train_micro_batch_size_per_gpu", json()));
  const auto accumulation = count_of(config.value("gradient_accumulation_steps", json()));
  if (micro) workload["micro_batch"] = *micro;
  if (accumulation) workload["grad_accumulation"] = *accumulation;
  if (enabled(config, "bf16") && enabled(config, "fp16")) {
    out.conflicts.push_back({"bf16", "bf16 and fp16 are both enabled; DeepSpeed refuses that"});
  } else if (enabled(config, "bf16")) {
    workload["compute"] = "amp_bf16";
  } else if (enabled(config, "fp16")) {
    workload["compute"] = "amp_fp16";
  } else if (!config.contains("bf16") && !config.contains("fp16")) {
    workload["compute"] = "fp32";
  }
  const auto zero = config.find("zero_optimization");
  if (auto e = import_zero(zero == config.end() ? json::object() : *zero, hidden_size, out))
    return *e;
  const auto optimizer = config.find("optimizer");
  if (optimizer != config.end() && optimizer->is_object() && optimizer->contains("type")) {
    const auto named = text_of(*optimizer, "type");
    if (!named) return launch_refusal("optimizer.type", "must be a string");
    const std::string type = *named;
    if (type == "AdamW" || type == "Adam") {
      workload["optimizer"] = "adamw";
    } else {
      out.ignored.push_back({"optimizer.type", type + " is not one gpumem names in DeepSpeed's "
                                                      "section: state workload.optimizer"});
    }
  }
  for (const auto& item : config.items()) {
    const std::string& key = item.key();
    if (key == "train_micro_batch_size_per_gpu" || key == "gradient_accumulation_steps" ||
        key == "bf16" || key == "fp16" || key == "zero_optimization" || key == "optimizer" ||
        key == "train_batch_size") {
      continue;
    }
    out.ignored.push_back({key, without_memory_effect(key)
                                    ? "no effect on memory"
                                    : "not modelled: the estimate assumes DeepSpeed's default"});
  }
  out.fields["workload"] = std::move(workload);
  return out;
}

result<launch_import> import_vllm(const std::string& line) {
  auto words = shell_words(line, "file");
  if (!words.ok()) return words.failure();
  const auto& w = words.value();
  std::size_t at = 0;
  const auto is_vllm = [](const std::string& word) {
    return word == "vllm" || (word.size() > 5 && word.compare(word.size() - 5, 5, "/vllm") == 0);
  };
  if (at < w.size() && is_vllm(w[at])) ++at;
  if (at < w.size() && w[at] == "serve") ++at;
  if (at >= w.size() || w[at].rfind("--", 0) == 0) {
    return launch_refusal("file", "a `vllm serve MODEL [flags]` line names its model first");
  }
  launch_import out;
  out.fields["model"] = w[at++];
  json workload = {{"phase", "inference"}, {"framework", "vllm"}};
  json kv = json::object();
  std::uint64_t tp = 1;
  std::uint64_t pp = 1;
  for (; at < w.size(); ++at) {
    std::string name = w[at];
    std::string value;
    const auto eq = name.find('=');
    if (eq != std::string::npos) {
      value = name.substr(eq + 1);
      name = name.substr(0, eq);
    } else if (at + 1 < w.size() && w[at + 1].rfind("--", 0) != 0) {
      value = w[++at];
    }
    char* end = nullptr;
    const double number = std::strtod(value.c_str(), &end);
    const bool numeric = !value.empty() && end && *end == '\0' && number >= 0;
    const auto integer = [&]() -> std::optional<std::uint64_t> {
      if (!numeric || std::floor(number) != number || number > 9e15) return std::nullopt;
      return static_cast<std::uint64_t>(number);
    };
    if ((name == "--tensor-parallel-size" || name == "-tp") && integer()) {
      tp = *integer();
    } else if ((name == "--pipeline-parallel-size" || name == "-pp") && integer()) {
      pp = *integer();
    } else if (name == "--max-model-len" && integer()) {
      workload["seq_len"] = *integer() > 1 ? *integer() - 1 : 1;  // one new token: see below
      workload["new_tokens"] = 1;
    } else if (name == "--gpu-memory-utilization" && numeric) {
      kv["gpu_memory_utilization"] = number;
    } else if (name == "--max-num-seqs" && integer()) {
      kv["max_num_seqs"] = *integer();
    } else if (name == "--max-num-batched-tokens" && integer()) {
      kv["max_num_batched_tokens"] = *integer();
    } else if (name == "--block-size" && integer()) {
      kv["block_size"] = *integer();
    } else if (name == "--kv-cache-dtype") {
      if (value.rfind("fp8", 0) == 0) kv["dtype"] = "fp8";
    } else if (name == "--dtype") {
      if (value == "bfloat16" || value == "float16" || value == "float32") {
        workload["compute"] = value == "bfloat16" ? "bf16" : value == "float16" ? "fp16" : "fp32";
      }
    } else if (name == "--quantization" || name == "-q") {
      if (value == "fp8") workload["weights"] = "fp8";
      if (value == "bitsandbytes") workload["weights"] = "nf4";
      // awq, gptq, ...: the checkpoint's own quantization_config says it.
    } else {
      out.ignored.push_back({name, "not modelled (no effect on the estimate's memory)"});
    }
  }
  if (workload.contains("seq_len")) {
    out.assumed.push_back({"--max-model-len",
                           "(the longest request the server takes) is read as one "
                           "prompt of that length less one new token; state "
                           "seq_len, new_tokens and micro_batch for the "
                           "requests you expect"});
  }
  if (!kv.empty()) workload["kv_cache"] = std::move(kv);
  out.fields["workload"] = std::move(workload);
  // (cluster.gpus' range; the product of two larger degrees could wrap.)
  if (tp < 1 || tp > 65536 || pp < 1 || pp > 65536) {
    return launch_refusal("file",
                          "--tensor-parallel-size and --pipeline-parallel-size must be 1..65536");
  }
  const std::uint64_t gpus = tp * pp;
  out.fields["cluster"] = {{"gpus", gpus}};
  if (tp > 1 && pp > 1) {
    out.conflicts.push_back({"--pipeline-parallel-size",
                             "gpumem estimates tensor or pipeline "
                             "parallelism, not both at once"});
  } else if (gpus > 1) {
    out.fields["parallel"] = {{"method", tp > 1 ? "tensor_parallel" : "pipeline"}};
  }
  return out;
}

result<std::vector<std::string>> shell_words(const std::string& line, const std::string& field) {
  std::vector<std::string> words;
  std::string word;
  bool in_word = false;
  char quote = 0;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char ch = line[i];
    if (quote == '\'') {
      if (ch == '\'')
        quote = 0;
      else
        word += ch;
    } else if (quote == '"') {
      if (ch == '"')
        quote = 0;
      else if (ch == '\\' && i + 1 < line.size() &&
               std::string("\"\\$`").find(line[i + 1]) != std::string::npos)
        word += line[++i];
      else
        word += ch;
    } else if (ch == '\\' && i + 1 < line.size()) {
      if (line[i + 1] != '\n') word += line[i + 1];  // a line continuation joins the lines
      in_word = in_word || line[i + 1] != '\n';
      ++i;
    } else if (ch == '\'' || ch == '"') {
      quote = ch;
      in_word = true;
    } else if (ch == ' ' || ch == '\t' || ch == '\n' || ch == '\r') {
      if (in_word) words.push_back(word);
      word.clear();
      in_word = false;
    } else {
      word += ch;
      in_word = true;
    }
  }
  if (quote) return launch_refusal(field, "the command line ends inside a quoted word");
  if (in_word) words.push_back(word);
  return words;
}

std::string shell_line(const std::vector<std::string>& words) {
  std::string line;
  for (const auto& w : words) {
    if (!line.empty()) line += ' ';
    const bool plain = !w.empty() && w.find_first_not_of(
                                         "abcdefghijklmnopqrstuvwxyz"
                                         "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
                                         "-_./=:,+@%") == std::string::npos;
    if (plain) {
      line += w;
      continue;
    }
    line += '\'';
    for (char ch : w) line += ch == '\'' ? std::string("'\\''") : std::string(1, ch);
    line += '\'';
  }
  return line;
}

}  // namespace gpumem

namespace gpumem {

namespace {

// A GGUF file name's quantisation (model-Q4_K_M.gguf), as llama.cpp's llama-quantize names the
// types, when gpumem estimates it.
std::optional<std::string> gguf_in_file_name(std::string file) {
  for (char& ch : file) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
  for (const char* type : {"q8_0", "q6_k", "q5_k_m", "q4_k_m", "q3_k_m", "q2_k"}) {
    if (file.find(type) != std::string::npos) return std::string("gguf_") + type;
  }
  return std::nullopt;
}

}  // namespace

result<launch_import> import_llama_cpp(const std::string& line) {
  auto words = shell_words(line, "file");
  if (!words.ok()) return words.failure();
  const auto& w = words.value();
  if (w.empty() || w[0].find("llama-") == std::string::npos) {
    return launch_refusal("file", "a llama.cpp line starts with llama-server or llama-cli");
  }
  launch_import out;
  json workload = {{"phase", "inference"}, {"framework", "llama_cpp"}};
  json kv = json::object();
  std::uint64_t context = 0;
  std::uint64_t slots = 1;
  for (std::size_t at = 1; at < w.size(); ++at) {
    const std::string& name = w[at];
    const std::string value = at + 1 < w.size() ? w[at + 1] : "";
    char* end = nullptr;
    const double number = std::strtod(value.c_str(), &end);
    const bool whole = !value.empty() && end && *end == '\0' && number >= 1 && number < 1e9 &&
                       std::floor(number) == number;
    if ((name == "-m" || name == "--model") && !value.empty()) {
      if (auto type = gguf_in_file_name(value))
        workload["weights"] = *type;
      else
        out.ignored.push_back({name, "the file's quantisation is not in its name: state weights"});
      ++at;
    } else if ((name == "-c" || name == "--ctx-size") && whole) {
      context = static_cast<std::uint64_t>(number);
      ++at;
    } else if ((name == "-np" || name == "--parallel") && whole) {
      slots = static_cast<std::uint64_t>(number);
      ++at;
    } else if ((name == "-ctk" || name == "--cache-type-k" || name == "-ctv" ||
                name == "--cache-type-v") &&
               !value.empty()) {
      // gpumem's cache dtypes in llama.cpp's names; its quantised caches keep a scale per block.
      if (value == "f16")
        kv["dtype"] = "fp16";
      else if (value == "bf16")
        kv["dtype"] = "bf16";
      else if (value == "f32")
        kv["dtype"] = "fp32";
      else
        out.ignored.push_back({name, value + " is not a cache type gpumem estimates"});
      ++at;
    } else if ((name == "-ngl" || name == "--n-gpu-layers" || name == "-sm" ||
                name == "--split-mode") &&
               !value.empty()) {
      if (name == "-ngl" || name == "--n-gpu-layers") {
        if (!(whole && number >= 999))
          out.assumed.push_back({name, "every layer on the GPUs, as gpumem estimates"});
      }
      ++at;
    } else {
      out.ignored.push_back({name, "not modelled (no effect on the estimate)"});
    }
  }
  workload["micro_batch"] = slots;
  if (context > 0) {
    // llama-server splits -c evenly over its -np slots (tools/server/server.cpp).
    const std::uint64_t per_slot = context / slots;
    workload["seq_len"] = per_slot > 1 ? per_slot - 1 : 1;
    workload["new_tokens"] = 1;
    out.assumed.push_back({"-c",
                           "each slot's share of the context read as one prompt of that "
                           "length less one new token; state seq_len and new_tokens for "
                           "the requests you expect"});
  }
  if (!kv.empty()) workload["kv_cache"] = std::move(kv);
  out.fields["workload"] = std::move(workload);
  return out;
}

}  // namespace gpumem
