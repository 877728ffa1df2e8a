#pragma once
// Reads the parts of an API request shared by the estimate and plan commands into core structs,
// with the same range checks and error messages as config.json fields (config_reader):
//   request_reader.cpp            the shared field helpers (request_fields.hpp), mode, LLMem's
//                                 parallel and workload, metric, options
//   cluster_reader.cpp            cluster and its GPU
//   training_workload_reader.cpp  detailed mode's training workload
//   training_parallel_reader.cpp  detailed mode's training parallel
//   inference_reader.cpp          an inference request

#include <cstdint>
#include <initializer_list>
#include <nlohmann/json_fwd.hpp>
#include <optional>
#include <string>
#include <vector>

#include "gpumem/inference/inference_step.hpp"
#include "gpumem/model/model_spec.hpp"
#include "gpumem/plan/estimate.hpp"
#include "gpumem/plan/step_time.hpp"
#include "gpumem/result.hpp"
#include "gpumem/runtime/hardware.hpp"
#include "gpumem/training/training_step.hpp"

namespace gpumem {

// Refuses fields that `object` (at request path `where`) does not accept, so a typo is never
// silently ignored.
std::optional<error> unknown_keys(const nlohmann::ordered_json& object, const std::string& where,
                                  std::initializer_list<const char*> accepted);

// A member of `parent` (an object, or absent: missing or null, which docs/api.md defines as the
// default) as its value, or {} when absent. A non-object value is returned as it is, for the
// reader to refuse.
const nlohmann::ordered_json& member_object(const nlohmann::ordered_json& parent, const char* key);

// "detailed" (the default) or "llmem".
result<std::string> read_mode(const nlohmann::ordered_json& request);

// `cluster`: {"gpu": preset id | {"preset"?, overrides...}, "gpus", "gpus_per_node",
// "inter_node_bandwidth_bytes_per_s", "cuda_context_bytes", "headroom" | "headroom_bytes", ...}.
// `default_headroom`: the fraction of each GPU's memory kept free when neither is stated.
result<cluster_spec> read_cluster(const nlohmann::ordered_json& request,
                                  double default_headroom = 0.0);

// The headroom a detailed estimate or plan keeps free by default: 5 % of each GPU's memory. On
// the 471 measured peaks gpumem scores (validation/measured_h100*.json and the development set,
// 2026-11-28), the estimate is at most 5 % below the measurement for 87 % of them (92 % of
// gpumem's own H100 runs); docs/methodology.md, Headroom. LLMem mode keeps the paper's none.
inline constexpr double default_detailed_headroom = 0.05;
inline constexpr double max_headroom_fraction = 0.5;

// `parallel`: {"method", "tp", "dp_tp_fraction": "llmem" | "exact"}.
result<parallel_config> read_parallel(const nlohmann::ordered_json& request);

struct training_workload {
  std::uint64_t micro_batch = 1;
  std::uint64_t seq_len = 512;
};

// `workload` for a training step; micro_batch is required unless `for_plan`.
result<training_workload> read_training_workload(const nlohmann::ordered_json& request,
                                                 const model_spec& model, bool for_plan,
                                                 std::vector<std::string>& warnings);

// `workload` of a detailed training estimate: {"phase": "train" | "forward_backward",
// "finetune": "full" | "lora", "lora": {"r", "targets"}, "weights": "fp32" | "bf16" | "fp16",
// "compute", "optimizer": "adamw" | "adam" | "sgd" | "sgd_momentum" | "none", "micro_batch",
// "seq_len", "grad_ckpt", "attention": "eager" | "sdpa" | "flash"}.
// `micro_batch` is required unless `for_plan`.
result<training_config> read_detailed_workload(const nlohmann::ordered_json& request,
                                               const model_spec& model, bool for_plan,
                                               std::vector<std::string>& warnings);

// How detailed mode spreads a step over cluster.gpus ranks.
struct training_parallel {
  data_parallel sharding = data_parallel::none;
  std::uint64_t dp = 1;
  std::uint64_t tp = 1;
  bool sequence_parallel = false;
  // Context parallelism (`cp`, `cp_kind` ring or ulysses) under a data-parallel method.
  std::uint64_t cp = 1;
  context_parallel_kind cp_kind = context_parallel_kind::ring;
  std::uint64_t pp = 1;
  std::uint64_t micro_batches = 0;  // per optimizer step, pipeline only (0: as many as stages)
  // FSDP HYBRID_SHARD: the ranks a unit is sharded over (one node's); 0: all dp ranks.
  std::uint64_t shard_group = 0;
  // `offload`: {"optimizer", "params", "gradients", "activations"}, each "none", "cpu" or
  // "nvme" (default none).
  offload_placement offload;
  // `offload.params` "auto" under gemini: Gemini's auto placement (offload.params reads cpu).
  bool gemini_auto = false;
  // `deepspeed`: {"reduce_bucket_size", "stage3_prefetch_bucket_size",
  // "stage3_param_persistence_threshold"} in elements, as in a DeepSpeed config (zero2: the
  // first; zero3: all three); unset keys keep DeepSpeed's defaults (training_config).
  std::uint64_t reduce_bucket_elements = training_config{}.reduce_bucket_elements;
  std::uint64_t prefetch_bucket_elements = training_config{}.prefetch_bucket_elements;
  std::uint64_t persistence_threshold = training_config{}.persistence_threshold;
};

// Detailed mode's `parallel`: `method` single, ddp, zero1, zero2, zero3, gemini, fsdp_full_shard,
// fsdp_shard_grad_op (data parallelism over cluster.gpus ranks), tensor_parallel (over all of
// them, with `sequence_parallel` true or false) or pipeline (one stage per GPU, 1F1B, with
// `micro_batches` per step); fsdp_hybrid_shard shards within each node of gpus_per_node GPUs and
// replicates across nodes. The data-parallel methods also take `tp` (DP+TP) and `cp` (each
// sequence split over cp ranks; `cp_kind` ring or ulysses): dp = gpus / (tp x cp).
result<training_parallel> read_training_parallel(const nlohmann::ordered_json& request,
                                                 std::uint64_t gpus, std::uint64_t gpus_per_node);

// `metric`: "allocated" | "reserved" | "device_used" (default "device_used").
result<std::string> read_metric(const nlohmann::ordered_json& request);

// `options`: {"mfu", "max_micro_batch"}.
struct plan_settings {
  step_time_options speed;
  std::uint64_t max_micro_batch = 4096;
  // options.timeline: samples of the step's memory over time a detailed estimate reports (0:
  // none; 2..4096).
  std::size_t timeline_samples = 0;
  // options.alternatives: a detailed training plan says what changes would make the run fit
  // or run faster (true by default).
  bool alternatives = true;
};
inline constexpr std::uint64_t max_timeline_samples = 4096;
result<plan_settings> read_options(const nlohmann::ordered_json& request);

// An inference request: `workload` {"phase": "inference", "weights", "fp8_scaling",
// "group_size", "compute", "micro_batch" (sequences), "seq_len" (prompt tokens), "new_tokens",
// "kv_cache": {"kind", "dtype", "tokens", "block_size", "gpu_memory_utilization",
// "max_num_batched_tokens", "max_num_seqs"}, "attention", "framework"}, `parallel.method`
// single | tensor_parallel | pipeline over cluster.gpus, and `solve`.
struct inference_request {
  inference_config config;
  std::string method = "single";
  std::string solve;  // "", "max_context" or "max_batch"
};
result<inference_request> read_inference_request(const nlohmann::ordered_json& request,
                                                 const model_spec& model, std::uint64_t gpus,
                                                 std::vector<std::string>& warnings);

}  // namespace gpumem
