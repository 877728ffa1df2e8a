#pragma once
// Colossal-AI Gemini's "auto" placement (colossalai/zero/gemini/placement_policy.py
// AutoPlacementPolicy): after the warm-up step, parameter chunks stay on the GPU while the model
// data plus the next period's non-model data fit in steady_cuda_cap_ratio (0.9) of the card's
// memory, and are moved to the CPU beyond it. The GPU peak therefore lies between the CPU
// placement's and the all-GPU placement's, and at the cap when that is in between.

#include <cstdint>

#include "gpumem/offload/offload.hpp"
#include "gpumem/training/training_step.hpp"

namespace gpumem {

// AutoPlacementPolicy._steady_cuda_cap_ratio.
inline constexpr double gemini_steady_cuda_cap_ratio = 0.9;

// The bytes of chunks the policy keeps on the GPU at the step's peak, from the allocated peaks
// of the CPU placement and of the GPU placement (parameter chunks on the GPU, the optimizer
// where it was put), for a card of `memory_bytes`; at most the `chunk_bytes` that can move.
std::uint64_t gemini_chunks_kept(std::uint64_t cpu_placement_peak, std::uint64_t gpu_placement_peak,
                                 std::uint64_t memory_bytes, std::uint64_t chunk_bytes);
// The host bytes of the parameter chunks in a CPU placement's footprint.
std::uint64_t host_parameter_bytes(const host_footprint& host);

// The CPU placement's replay with `kept` bytes of chunks on the GPU: its peaks (allocated,
// reserved) rise by them.
void keep_chunks_on_gpu(training_estimate& cpu_placement, std::uint64_t kept);
// The CPU placement's host footprint without those chunks: its parameters shrink by them.
void keep_chunks_off_host(host_footprint& host, std::uint64_t kept);

}  // namespace gpumem
