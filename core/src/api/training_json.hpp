#pragma once
// The estimate command's answer for a detailed training step (docs/api.md): the step replayed
// rank by rank (one replay for alike data- and tensor-parallel ranks, one per pipeline stage),
// per-rank components, the verdict against the GPU and the host budgets, and with
// `solve: "max_batch"` the largest micro-batch that leaves the headroom.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "gpumem/model/model_spec.hpp"
#include "gpumem/result.hpp"
#include "gpumem/runtime/hardware.hpp"

namespace gpumem {

struct training_answer_options {
  std::string metric = "device_used";    // already checked
  std::size_t timeline_samples = 0;      // options.timeline
  std::uint64_t max_micro_batch = 4096;  // options.max_micro_batch: the solve's bound
};

// The result fields after mode, metric, model and cluster.
result<nlohmann::ordered_json> training_estimate_json(const nlohmann::ordered_json& request,
                                                      const model_spec& spec,
                                                      const cluster_spec& cluster,
                                                      const training_answer_options& options,
                                                      std::vector<std::string>& warnings);

// workload.train_tokens (the tokens to train on: a dataset's times its epochs): how long a run
// of `tokens_per_s` (a plan's choice) takes over them, and at cluster.price_per_gpu_hour what it
// costs; null when not asked or not timed.
result<nlohmann::ordered_json> time_and_cost_json(const nlohmann::ordered_json& request,
                                                  double tokens_per_s, const cluster_spec& cluster);

}  // namespace gpumem
