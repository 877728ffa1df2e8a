#pragma once
// From an estimated setup to the files and command that launch it, and from a user's launch
// file back to a request (docs/api.md, `export` and `import`). Each format's keys follow its
// project's documentation or source at the release named beside the mapping. Trees, not text:
// the CLI and the page write them as JSON, YAML or Python with their own kept libraries.

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "api/request_reader.hpp"
#include "gpumem/model/model_spec.hpp"
#include "gpumem/result.hpp"
#include "gpumem/runtime/hardware.hpp"

namespace gpumem {

// A format's refusal of a request field: request.invalid_value, "[field] message".
error launch_refusal(const std::string& field, const std::string& message);

// A probability as a config writes it: the shortest decimal, at least one digit after the point
// ("0.05", "0.0").
std::string decimal_text(double value);

// ZeRO stages 1-3 (DeepSpeed's engine).
bool zero_sharding(data_parallel dp);

// FSDP's sharding strategy for a parallel.method, as the HF Trainer and axolotl spell it
// (full_shard, shard_grad_op, hybrid_shard).
const char* fsdp_strategy(const std::string& method);

// FSDP's CPUOffload moves parameters, gradients and the optimizer step to the host together:
// whether `offload` is that (true) or nothing (false), or why neither.
result<bool> fsdp_host_offload(const offload_placement& offload);

// The HF Trainer's optimizer name (TrainingArguments.optim, transformers training_args.py
// OptimizerNames), which axolotl's `optimizer` takes too.
result<std::string> trainer_optim(const training_config& config);

struct launch_setup;
// The nodes the setup's GPUs fill (cluster.gpus_per_node at a time; one when unstated).
std::uint64_t nodes_of(const launch_setup& s);

// The setup an export writes, read and checked as an estimate reads it.
struct launch_setup {
  std::string model_id;  // the Hub id (a preset's, a config's name), or "" for a pasted config
  const model_spec* spec = nullptr;
  cluster_spec cluster;
  bool inference = false;
  // Training (the offload and DeepSpeed's buckets are the parallel layout's):
  training_config training;
  training_parallel parallel;
  std::string method;  // parallel.method as the request names it
  // Serving:
  inference_request serving;
  std::string kv_dtype;  // workload.kv_cache.dtype as read (bf16, fp16, fp32, fp8, int8)
};

// A written file: its name, how it is written (json, yaml, python: the content's keys are the
// objects to construct, each with its keyword arguments) and its content as a tree.
struct launch_file {
  std::string name;
  std::string syntax;
  nlohmann::ordered_json content;
};

// What a format cannot say about the setup, by request field, and why (with where it is said
// instead).
struct launch_gap {
  std::string field;
  std::string reason;
};

struct launch_output {
  std::vector<launch_file> files;
  std::string command;  // the launch line, if the format has one
  std::vector<launch_gap> not_expressed;
};

// The formats `export` writes.
inline constexpr const char* launch_formats[] = {"deepspeed",    "accelerate", "torchrun",
                                                 "axolotl",      "litgpt",     "torchtune",
                                                 "transformers", "vllm",       "llama_cpp"};

// The format's files and launch line for `setup`, or request.invalid_value naming the field the
// format cannot run (a method it lacks, a framework other than its own).
result<launch_output> export_training(const launch_setup& setup, const std::string& format);
result<launch_output> export_serving(const launch_setup& setup, const std::string& format);
// The transformers/PEFT/bitsandbytes arguments (export_training's "transformers").
result<launch_output> export_transformers(const launch_setup& setup);
// axolotl's YAML config (launch_axolotl.cpp).
result<launch_output> export_axolotl(const launch_setup& setup);
// litgpt's finetune command line (launch_litgpt.cpp).
result<launch_output> export_litgpt(const launch_setup& setup);
// torchtune's `tune run` line over a shipped config (launch_torchtune.cpp).
result<launch_output> export_torchtune(const launch_setup& setup);

// `import`: a launch file read back into request fields. `fields` holds the request's members
// the file sets (model, cluster, parallel, workload: merged under the caller's own request,
// which wins); `ignored` the file's keys gpumem does not model, with why; `conflicts` where
// the file contradicts itself.
struct launch_import {
  nlohmann::ordered_json fields = nlohmann::ordered_json::object();
  std::vector<launch_gap> ignored;
  std::vector<launch_gap> conflicts;
  std::vector<launch_gap> assumed;  // how a key was read where the file leaves room
};

// A DeepSpeed config (its JSON as a tree); `hidden_size` fills the HF integration's "auto"
// bucket sizes (0: none known).
result<launch_import> import_deepspeed(const nlohmann::ordered_json& config,
                                       std::uint64_t hidden_size);
// The transformers export's content as the Python that builds it (launch_python.cpp).
std::string python_text(const nlohmann::ordered_json& content, const std::string& model_id);

// A `vllm serve` command line, and a llama.cpp `llama-server` one.
result<launch_import> import_vllm(const std::string& line);
result<launch_import> import_llama_cpp(const std::string& line);
// An axolotl config and an accelerate config, each a YAML file the caller parsed into a tree.
result<launch_import> import_axolotl(const nlohmann::ordered_json& config);
result<launch_import> import_accelerate(const nlohmann::ordered_json& config);
// A `tune run` line (a string) or a torchtune config (a YAML file parsed into a tree).
result<launch_import> import_torchtune(const nlohmann::ordered_json& file);

// A command line split into words as a POSIX shell splits it (quotes and backslashes; no
// expansions): request.invalid_value for an unterminated quote.
result<std::vector<std::string>> shell_words(const std::string& line, const std::string& field);
// Words joined into a line a shell reads back as the same words.
std::string shell_line(const std::vector<std::string>& words);

}  // namespace gpumem
