#pragma once
// Estimates, plans and step times as the JSON the API returns (docs/api.md).

#include <nlohmann/json.hpp>

#include "gpumem/plan/llmem.hpp"
#include "gpumem/plan/planner.hpp"
#include "gpumem/plan/step_time.hpp"
#include "gpumem/runtime/hardware.hpp"
#include "gpumem/runtime/memory_timeline.hpp"

namespace gpumem {

nlohmann::ordered_json cluster_json(const cluster_spec& cluster);
nlohmann::ordered_json rank_json(const rank_estimate& rank);
nlohmann::ordered_json step_time_json(const step_time& speed);
nlohmann::ordered_json m_init_json(const llmem_fixed& fixed);
// One line per LLMem component: what it holds and where its formula comes from.
nlohmann::ordered_json llmem_component_notes();
nlohmann::ordered_json plan_json(const plan_result& plan);
// A recorded step over time (options.timeline): its phases, and per sample the allocated and
// reserved bytes and the allocated bytes by component; `constant_bytes` is what the device holds
// beside the allocator (CUDA context, libraries, paged states), so that reserved plus it is what
// nvidia-smi shows.
nlohmann::ordered_json timeline_json(const timeline_series& series, std::uint64_t constant_bytes);

}  // namespace gpumem
