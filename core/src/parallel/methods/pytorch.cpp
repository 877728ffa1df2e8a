// PyTorch's own data parallelism: one GPU, DDP and FSDP (FULL_SHARD, SHARD_GRAD_OP).
#include "parallel/data_parallel_method.hpp"

namespace gpumem {

namespace {
data_parallel_traits single() {
  data_parallel_traits t;
  t.name = "single";
  t.beside_pipeline = true;
  return t;
}

// torch/nn/parallel/distributed.py: the Reducer copies every gradient into flat buckets
// (gradient_as_bucket_view=False, the default); find_unused_parameters zero-fills the gradients
// of parameters no batch ran.
data_parallel_traits ddp() {
  data_parallel_traits t;
  t.name = "ddp";
  t.steps_unused_params = true;
  t.bucket_copy_of_grads = true;
  t.beside_pipeline = true;
  return t;
}

// torch.distributed.fsdp FullyShardedDataParallel: parameters, gradients and states sharded;
// MixedPrecision gathers in param_dtype; no_sync accumulates unsharded gradients; a unit that
// never runs gets no gradient. SHARD_GRAD_OP keeps a block gathered from forward to backward.
data_parallel_traits fsdp(bool full_shard) {
  data_parallel_traits t;
  t.name = full_shard ? "fsdp_full_shard" : "fsdp_shard_grad_op";
  t.shards_params = t.shards_grads = t.shards_states = true;
  t.gathers_in_compute_dtype = true;
  t.keeps_gathered_to_backward = !full_shard;
  t.fsdp = true;
  t.offloads_optimizer = true;  // CPUOffload(offload_params=True)
  return t;
}
}  // namespace

const data_parallel_traits& pytorch_data_parallel(data_parallel dp) {
  static const data_parallel_traits none = single(), replicated = ddp(), full = fsdp(true),
                                    grad_op = fsdp(false);
  return dp == data_parallel::ddp                  ? replicated
         : dp == data_parallel::fsdp_full_shard    ? full
         : dp == data_parallel::fsdp_shard_grad_op ? grad_op
                                                   : none;
}

}  // namespace gpumem
