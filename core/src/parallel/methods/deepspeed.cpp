// DeepSpeed ZeRO stages 1-3 (deepspeed/runtime/zero/), which Colossal-AI's LowLevelZero (zero1,
// zero2) follows.
#include "parallel/data_parallel_method.hpp"

namespace gpumem {

namespace {
data_parallel_traits zero(int stage) {
  data_parallel_traits t;
  t.name = stage == 1 ? "zero1" : stage == 2 ? "zero2" : "zero3";
  // Stage 1 shards the optimizer states and fp32 master weights, 2 the gradients too, 3 the
  // parameters too (Rajbhandari et al. 2020, "ZeRO: Memory Optimizations Toward Training
  // Trillion Parameter Models").
  t.shards_states = true;
  t.shards_grads = stage >= 2;
  t.shards_params = stage == 3;
  // deepspeed/runtime/engine.py _configure_distributed_model converts the module to 16 bits;
  // FusedAdam updates in place (deepspeed/ops/adam/fused_adam.py); zero_grad sets to None
  // (stage_1_and_2.py zero_grad(set_to_none=True)).
  t.engine = true;
  // Every parameter that requires grad is flattened into its fp32 groups and states.
  t.steps_unused_params = true;
  // partitioned_param_coordinator.py: module by module, prefetch_bucket_size ahead.
  t.gathers_modules = stage == 3;
  // stage_1_and_2.py: the ipg bucket gradients are copied into before their reduce-scatter.
  t.reduce_bucket_in_backward = stage == 2;
  // A pipeline engine replicates its stages with ZeRO-1 only (deepspeed/runtime/pipe/engine.py
  // asserts stage < 2).
  t.beside_pipeline = stage == 1;
  t.offloads_optimizer = true;  // offload_optimizer / offload_param (ZeRO-Offload, -Infinity)
  return t;
}
}  // namespace

const data_parallel_traits& deepspeed_data_parallel(data_parallel dp) {
  static const data_parallel_traits one = zero(1), two = zero(2), three = zero(3);
  return dp == data_parallel::zero1 ? one : dp == data_parallel::zero2 ? two : three;
}

}  // namespace gpumem
