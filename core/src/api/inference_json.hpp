#pragma once
// The estimate command's answer for `workload.phase: "inference"` (docs/api.md): per-rank
// components, fit, the KV cache's size and capacity, the speed, and a solved limit when `solve`
// asks.

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "gpumem/model/model_spec.hpp"
#include "gpumem/model/param_count.hpp"
#include "gpumem/result.hpp"
#include "gpumem/runtime/hardware.hpp"

namespace gpumem {

// The result fields after mode, model and cluster; `metric` is already checked.
result<nlohmann::ordered_json> inference_estimate_json(
    const nlohmann::ordered_json& request, const model_spec& spec, const param_count& counts,
    const cluster_spec& cluster, const std::string& metric, std::size_t timeline_samples,
    std::vector<std::string>& warnings);

// The plan command's answer for an inference workload: the fewest GPUs of cluster.gpus that serve
// it, every layout tried, and the reason.
result<nlohmann::ordered_json> inference_plan_json(const nlohmann::ordered_json& request,
                                                   const model_spec& spec,
                                                   const cluster_spec& cluster,
                                                   std::vector<std::string>& warnings);

}  // namespace gpumem
