// A torchtune run read back: a `tune run` line (its recipe, shipped config and key=value
// overrides, the keys the torchtune export writes) or a config file as a tree (torchtune 0.6.1
// recipes/configs/; the recipes read batch_size, gradient_accumulation_steps, dtype,
// enable_activation_checkpointing, enable_activation_offloading, optimizer, optimizer_in_bwd,
// fsdp_cpu_offload, fsdp_reshard_after_forward and the model builder's arguments).
#include <algorithm>
#include <string>
#include <vector>

#include "api/launch/launch.hpp"
#include "api/launch/launch_torchtune_models.hpp"

namespace gpumem {

using json = nlohmann::ordered_json;

namespace {

// An override's value as OmegaConf's dotlist reads it: booleans, null, numbers, [a,b] lists.
json override_value(const std::string& text) {
  if (text == "True" || text == "true") return true;
  if (text == "False" || text == "false") return false;
  if (text == "null" || text == "None") return nullptr;
  if (text.size() >= 2 && text.front() == '[' && text.back() == ']') {
    json list = json::array();
    std::string item;
    for (char ch : text.substr(1, text.size() - 2) + ",") {
      if (ch == ',') {
        if (!item.empty()) list.push_back(item);
        item.clear();
      } else if (ch != ' ' && ch != '\'' && ch != '"') {
        item += ch;
      }
    }
    return list;
  }
  const json number = json::parse(text, nullptr, false);
  if (number.is_number()) return number;
  return text;
}

// The line's parts: recipe, config and overrides (as a tree), processes.
struct tune_run {
  std::string recipe;
  std::string config;
  json tree = json::object();
  std::uint64_t per_node = 1;
  std::uint64_t nodes = 1;
};

std::optional<std::uint64_t> positive(const std::string& text) {
  if (text.empty() || text.size() > 6 || text.find_first_not_of("0123456789") != std::string::npos)
    return std::nullopt;
  const std::uint64_t n = std::stoull(text);
  return n > 0 ? std::optional<std::uint64_t>(n) : std::nullopt;
}

result<tune_run> read_line(const std::string& line, launch_import& out) {
  auto words = shell_words(line, "file");
  if (!words.ok()) return words.failure();
  const auto& w = words.value();
  if (w.size() < 3 || w[0] != "tune" || w[1] != "run") {
    return launch_refusal("file", "a torchtune line starts `tune run` (or paste its config file)");
  }
  tune_run run;
  for (std::size_t i = 2; i < w.size(); ++i) {
    std::string word = w[i];
    std::string value;
    const auto eq = word.find('=');
    const bool option = word.rfind("--", 0) == 0;
    if (option && eq != std::string::npos) {
      value = word.substr(eq + 1);
      word.resize(eq);
    } else if (option && i + 1 < w.size()) {
      value = w[i + 1];
    }
    const bool takes_value = option && eq == std::string::npos && i + 1 < w.size();
    if (word == "--nproc_per_node" || word == "--nnodes" || word == "--config") {
      if (takes_value) ++i;
      if (word == "--config") {
        run.config = value;
        continue;
      }
      const auto n = positive(value);
      if (!n) return launch_refusal("file", word + " must be a whole number of at least 1");
      (word == "--nnodes" ? run.nodes : run.per_node) = *n;
    } else if (option) {
      if (takes_value && w[i + 1].rfind("--", 0) != 0) ++i;
      out.ignored.push_back({word, "a launcher option: no effect on the estimate"});
    } else if (run.recipe.empty()) {
      run.recipe = word;
    } else if (eq != std::string::npos) {
      json* slot = &run.tree;
      std::string path = word.substr(0, eq);
      for (auto dot = path.find('.'); dot != std::string::npos; dot = path.find('.')) {
        json& next = (*slot)[path.substr(0, dot)];
        if (!next.is_object()) next = json::object();
        slot = &next;
        path.erase(0, dot + 1);
      }
      (*slot)[path] = override_value(word.substr(eq + 1));
    } else {
      out.ignored.push_back({word, "not a key=value override"});
    }
  }
  return run;
}

bool flag_of(const json& tree, const char* key, bool& value) {
  const auto it = tree.find(key);
  if (it == tree.end() || !it->is_boolean()) return false;
  value = it->get<bool>();
  return true;
}

std::optional<std::uint64_t> count_in(const json& tree, const char* key) {
  const auto it = tree.find(key);
  if (it == tree.end() || !it->is_number_integer() || it->get<std::int64_t>() < 1)
    return std::nullopt;
  return it->get<std::uint64_t>();
}

std::string text_in(const json& tree, const char* key) {
  const auto it = tree.find(key);
  return it != tree.end() && it->is_string() ? it->get<std::string>() : std::string();
}

// model: the builder names the model and the fine-tuning; its arguments LoRA's settings.
void read_model(const json& model, const std::string& config_kind, json& fields, json& workload,
                launch_import& out) {
  const std::string component = text_in(model, "_component_");
  const std::string builder = component.substr(component.rfind('.') + 1);
  const torchtune_model* m = component.empty() ? nullptr : torchtune_model_built_by(builder);
  if (m) fields["model"] = m->id;
  if (!component.empty() && !m) {
    out.ignored.push_back({"model._component_", component + " is not a model gpumem maps: "
                                                            "state the model in the request"});
  }
  const bool from_builder = !component.empty();
  const bool lora = from_builder ? builder.find("lora_") != std::string::npos
                                 : config_kind.find("lora") != std::string::npos ||
                                       config_kind.find("dora") != std::string::npos;
  bool quantized = from_builder ? builder.rfind("qlora_", 0) == 0 : config_kind.rfind("q", 0) == 0;
  bool dora = !from_builder && config_kind.find("dora") != std::string::npos;
  flag_of(model, "quantize_base", quantized);
  flag_of(model, "use_dora", dora);
  if (!from_builder && config_kind.empty()) return;
  workload["finetune"] = !lora ? "full" : dora ? "dora" : "lora";
  if (!lora) return;
  // torchao's NF4 quantises its block scales too (nf4_double_quant's layout).
  if (quantized) workload["weights"] = "nf4_double_quant";
  json adapter = json::object();
  if (auto r = count_in(model, "lora_rank")) adapter["r"] = *r;
  const auto dropout = model.find("lora_dropout");
  if (dropout != model.end() && dropout->is_number()) adapter["dropout"] = *dropout;
  const auto modules = model.find("lora_attn_modules");
  if (modules != model.end() && modules->is_array()) {
    json targets = json::array();
    for (const auto& name : *modules) {
      if (!name.is_string()) continue;
      const std::string n =
          name.get<std::string>() == "output_proj" ? "o_proj" : name.get<std::string>();
      if (std::find(targets.begin(), targets.end(), json(n)) == targets.end()) targets.push_back(n);
    }
    bool mlp = false, head = false;
    flag_of(model, "apply_lora_to_mlp", mlp);
    flag_of(model, "apply_lora_to_output", head);
    if (mlp) targets.insert(targets.end(), {"gate_proj", "up_proj", "down_proj"});
    if (head) targets.push_back("lm_head");
    if (!targets.empty()) adapter["targets"] = std::move(targets);
  }
  if (!adapter.empty()) workload["lora"] = std::move(adapter);
}

void read_optimizer(const json& optimizer, json& workload, launch_import& out) {
  const std::string component = text_in(optimizer, "_component_");
  const std::string name = component.substr(component.rfind('.') + 1);
  if (name == "AdamW" || name == "PagedAdamW" || name == "PagedAdamW32bit") {
    workload["optimizer"] = "adamw";
    bool fused = false, foreach = false;
    flag_of(optimizer, "fused", fused);
    const bool says_foreach = flag_of(optimizer, "foreach", foreach);
    if (component == "torch.optim.AdamW") {
      workload["optimizer_impl"] = fused                      ? "fused"
                                   : says_foreach && !foreach ? "for_loop"
                                                              : "foreach";
    }
  } else if (name == "AdamW8bit" || name == "PagedAdamW8bit") {
    workload["optimizer"] = "adamw_8bit";
  } else if (component == "torch.optim.SGD") {
    const auto momentum = optimizer.find("momentum");
    workload["optimizer"] =
        momentum != optimizer.end() && momentum->is_number() && momentum->get<double>() > 0
            ? "sgd_momentum"
            : "sgd";
  } else if (!component.empty()) {
    out.ignored.push_back({"optimizer._component_",
                           component + " is not one gpumem models (AdamW, 8-bit AdamW, SGD): "
                                       "the request's optimizer is estimated"});
  }
}

// The top-level keys with no effect on the memory of a step.
bool without_memory_effect(const std::string& key) {
  for (const char* k : {"tokenizer",
                        "checkpointer",
                        "dataset",
                        "seed",
                        "shuffle",
                        "epochs",
                        "max_steps_per_epoch",
                        "lr_scheduler",
                        "metric_logger",
                        "output_dir",
                        "log_every_n_steps",
                        "log_peak_memory_stats",
                        "log_level",
                        "profiler",
                        "device",
                        "resume_from_checkpoint",
                        "save_adapter_weights_only",
                        "clip_grad_norm",
                        "run_val_every_n_steps",
                        "dataset_val"}) {
    if (key == k) return true;
  }
  return false;
}

// The top-level keys read_tree reads.
bool read_here(const std::string& key) {
  for (const char* read : {"model", "batch_size", "gradient_accumulation_steps", "dtype",
                           "enable_activation_checkpointing", "enable_activation_offloading",
                           "fsdp_cpu_offload", "fsdp_reshard_after_forward", "optimizer",
                           "optimizer_in_bwd", "loss", "compile", "tokenizer"}) {
    if (key == read) return true;
  }
  return false;
}

void read_tree(const json& tree, const std::string& config_kind, json& fields, json& parallel,
               json& workload, launch_import& out) {
  read_model(tree.value("model", json::object()), config_kind, fields, workload, out);
  if (auto n = count_in(tree, "batch_size")) workload["micro_batch"] = *n;
  if (auto n = count_in(tree, "gradient_accumulation_steps")) workload["grad_accumulation"] = *n;
  const json& tokenizer = tree.value("tokenizer", json::object());
  if (tokenizer.is_object()) {
    if (auto n = count_in(tokenizer, "max_seq_len")) workload["seq_len"] = *n;
  }
  const std::string dtype = text_in(tree, "dtype");
  if (dtype == "bf16") workload["compute"] = "pure_bf16";
  if (dtype == "fp32") workload["compute"] = "fp32";
  if (!dtype.empty() && dtype != "bf16" && dtype != "fp32")
    out.conflicts.push_back({"dtype", dtype + ": torchtune's recipes run bf16 or fp32"});
  bool on = false;
  if (flag_of(tree, "enable_activation_checkpointing", on)) workload["grad_ckpt"] = on;
  json offload = json::object();
  if (flag_of(tree, "enable_activation_offloading", on) && on) offload["activations"] = "cpu";
  if (flag_of(tree, "fsdp_cpu_offload", on) && on) {
    offload["params"] = offload["gradients"] = offload["optimizer"] = "cpu";
  }
  if (!offload.empty()) parallel["offload"] = std::move(offload);
  if (flag_of(tree, "fsdp_reshard_after_forward", on) && !on)
    parallel["method"] = "fsdp_shard_grad_op";
  read_optimizer(tree.value("optimizer", json::object()), workload, out);
  const std::string loss = text_in(tree.value("loss", json::object()), "_component_");
  if (!loss.empty() && loss != "torchtune.modules.loss.CEWithChunkedOutputLoss") {
    out.ignored.push_back({"loss._component_",
                           "estimated as CEWithChunkedOutputLoss, the loss "
                           "of torchtune 0.6.1's configs"});
  }
  if (flag_of(tree, "compile", on) && on)
    out.ignored.push_back({"compile", "torch.compile is not modelled: the estimate is eager's"});
  for (const auto& item : tree.items()) {
    if (!without_memory_effect(item.key()) && !read_here(item.key()))
      out.ignored.push_back({item.key(), "not modelled: the estimate assumes torchtune's default"});
  }
}

}  // namespace

result<launch_import> import_torchtune(const json& file) {
  if (!file.is_object() && !file.is_string()) {
    return launch_refusal("file",
                          "a `tune run` line (a string) or a torchtune config (a YAML "
                          "mapping)");
  }
  launch_import out;
  tune_run run;
  if (file.is_string()) {
    auto read = read_line(file.get<std::string>(), out);
    if (!read.ok()) return read.failure();
    run = std::move(read.value());
  } else {
    run.tree = file;
  }
  std::string kind;
  const torchtune_model* shipped =
      run.config.empty() ? nullptr : torchtune_model_configured(run.config, kind);
  if (!run.config.empty() && !shipped) {
    out.ignored.push_back({"--config", run.config + ": not a shipped config gpumem knows; its "
                                                    "keys are read only from the line"});
  }
  json fields = json::object();
  json parallel = json::object();
  json workload = {{"framework", "torchtune"}};
  if (shipped) fields["model"] = shipped->id;
  read_tree(run.tree, kind, fields, parallel, workload, out);
  if (!run.recipe.empty()) {
    const bool single = run.recipe.find("single_device") != std::string::npos;
    const bool known =
        run.recipe.rfind("full_finetune_", 0) == 0 || run.recipe.rfind("lora_finetune_", 0) == 0;
    if (!known || (!single && run.recipe.find("distributed") == std::string::npos)) {
      return launch_refusal("file", run.recipe +
                                        ": gpumem reads torchtune's fine-tuning recipes "
                                        "(full_ or lora_finetune_single_device, "
                                        "_distributed)");
    }
    const std::uint64_t gpus = run.per_node * run.nodes;
    json cluster = {{"gpus", gpus}};
    if (run.nodes > 1) cluster["gpus_per_node"] = run.per_node;
    fields["cluster"] = std::move(cluster);
    if (single && gpus > 1)
      out.conflicts.push_back({"--nproc_per_node", "a single-device recipe runs one process"});
    if (!parallel.contains("method")) parallel["method"] = single ? "single" : "fsdp_full_shard";
    const bool full = run.recipe.rfind("full_", 0) == 0;
    const json finetune = workload.value("finetune", json());
    if (finetune.is_string() && (finetune == "full") != full) {
      out.conflicts.push_back(
          {"model._component_", "its builder does not match the recipe " + run.recipe});
    }
    if (!finetune.is_string()) workload["finetune"] = full ? "full" : "lora";
  } else if (!parallel.contains("method")) {
    out.assumed.push_back({"parallel.method",
                           "a config names no recipe: one GPU runs "
                           "*_single_device, several the FSDP2 "
                           "*_distributed (fsdp_full_shard)"});
  }
  // A shipped config's own values stand where the line overrides nothing.
  if (shipped) {
    for (const char* key : {"batch_size", "gradient_accumulation_steps", "dtype",
                            "enable_activation_checkpointing"}) {
      if (!run.tree.contains(key)) {
        out.assumed.push_back({key, "not on the line: " + run.config +
                                        "'s own value runs; the request's (or gpumem's default) "
                                        "is estimated"});
      }
    }
  }
  if (!workload.contains("seq_len")) {
    out.assumed.push_back({"workload.seq_len",
                           "no tokenizer.max_seq_len: state the length of the "
                           "longest batch"});
  }
  if (!parallel.empty()) fields["parallel"] = std::move(parallel);
  fields["workload"] = std::move(workload);
  out.fields = std::move(fields);
  return out;
}

}  // namespace gpumem
