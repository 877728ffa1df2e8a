#pragma once
// What each data-parallel method does to a rank's memory, as data: PyTorch's DDP and FSDP
// (methods/pytorch.cpp), DeepSpeed's ZeRO stages, which Colossal-AI's LowLevelZero follows
// (methods/deepspeed.cpp), and Colossal-AI's Gemini (methods/colossalai.cpp). The step's replay
// asks these traits; none of it tests a method's name.

#include "gpumem/parallel/data_parallel.hpp"

namespace gpumem {

struct data_parallel_traits {
  const char* name;  // as parallel.dp_method names it
  // Which model states each rank keeps 1/n of.
  bool shards_params = false;
  bool shards_grads = false;
  bool shards_states = false;
  // An engine that converts the module to 16 bits under mixed precision (fp32 copies of what
  // trains live in its optimizer), steps with an in-place multi-tensor Adam and sets gradients
  // to None whatever the torch release.
  bool engine = false;
  // Parameters no batch runs (an idle vision tower) still get a gradient and states.
  bool steps_unused_params = false;
  // Gathers parameters module by module with a prefetch budget and persistent small ones
  // (ZeRO-3), rather than a block (a wrapped unit) at a time.
  bool gathers_modules = false;
  // Gathers every parameter in the compute dtype (FSDP MixedPrecision param_dtype), so the
  // residual stream of an fp32 model runs in it.
  bool gathers_in_compute_dtype = false;
  // Keeps a block gathered from its forward to its backward (SHARD_GRAD_OP).
  bool keeps_gathered_to_backward = false;
  // FSDP's accumulation: no_sync keeps unsharded gradients; FSDP1 flat parameters.
  bool fsdp = false;
  // The reduced gradient shard goes into the parameters' own fp16 chunk slots, which the
  // optimizer reads as they are (no fp32 gradient copy).
  bool grads_in_param_chunks = false;
  // Keeps every gradient again in flat buckets (DDP's Reducer, gradient_as_bucket_view=False).
  bool bucket_copy_of_grads = false;
  // Allocates its reduce bucket at the first backward (ZeRO-2: stage_1_and_2.py ipg buffer).
  bool reduce_bucket_in_backward = false;
  // Works beside a pipeline (replicates each stage).
  bool beside_pipeline = false;
  // Offloads the optimizer and gradients (ZeRO-Offload, FSDP CPUOffload, Gemini placement).
  bool offloads_optimizer = false;
};

const data_parallel_traits& data_parallel_of(data_parallel dp);
const data_parallel_traits& pytorch_data_parallel(data_parallel dp);
const data_parallel_traits& deepspeed_data_parallel(data_parallel dp);
const data_parallel_traits& colossalai_data_parallel();

}  // namespace gpumem
