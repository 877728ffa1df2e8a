#pragma once
// What it would take: the changes to a training run that alter what it trains or what it runs
// on (precision, optimizer, fine-tuning method, sequence length, GPU count, GPU), each planned
// for the method the plan chose, and those that would make it fit or run faster, ranked.

#include <functional>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "gpumem/plan/planner.hpp"
#include "gpumem/result.hpp"

namespace gpumem {

// Plans a changed request on the GPUs alone, with these methods only (plan_options::
// only_methods; empty: every method).
using restricted_plan = std::function<result<plan_result>(const nlohmann::ordered_json& request,
                                                          const std::vector<std::string>& methods)>;

// At most five changes, fastest first: those that fit where the plan found nothing on the GPUs
// alone, else those faster than its choice by more than the step-time model can tell apart.
nlohmann::ordered_json plan_alternatives(const nlohmann::ordered_json& request,
                                         const plan_result& base, const restricted_plan& plan_for);

}  // namespace gpumem
