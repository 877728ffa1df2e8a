#pragma once
// The workload as the step-time model reads it: what a training request's precision, kernels,
// recomputation, optimizer, adapters and quantisation make of a step's time, the same for every
// candidate a plan weighs (the candidate's own parallelism is set on top by the plan).

#include "gpumem/model/model_spec.hpp"
#include "gpumem/model/param_count.hpp"
#include "gpumem/plan/planner.hpp"
#include "gpumem/plan/step_time.hpp"
#include "gpumem/training/training_step.hpp"

namespace gpumem {

step_time_options workload_speed(const model_spec& spec, const param_count& counts,
                                 const training_config& workload, const plan_options& options);

}  // namespace gpumem
