#pragma once
// Choosing among a plan's candidates and saying why: how many sequences a candidate runs per
// GPU, the fastest that fits (speeds within plan_speed_tie are a tie, said as one), and the
// numbers in words.

#include <cstdint>
#include <string>

#include "gpumem/plan/planner.hpp"

namespace gpumem {

// GPUs that share each of a candidate's sequences: its tensor-parallel group (TP over all the
// GPUs, DP+TP's groups) and its context-parallel group; its micro-batch is per such group.
std::uint64_t gpus_per_sequence(const plan_candidate& c);
double sequences_per_gpu(const plan_candidate& c);
std::string rate_text(double tokens_per_s);

// Picks the fitting candidate with the most tokens/s and says why in one sentence (plan.reason);
// false when none fits.
bool choose_fastest(plan_result& plan);

}  // namespace gpumem
