#include "parallel/data_parallel_method.hpp"

namespace gpumem {

const data_parallel_traits& data_parallel_of(data_parallel dp) {
  switch (dp) {
    case data_parallel::zero1:
    case data_parallel::zero2:
    case data_parallel::zero3:
      return deepspeed_data_parallel(dp);
    case data_parallel::gemini:
      return colossalai_data_parallel();
    case data_parallel::none:
    case data_parallel::ddp:
    case data_parallel::fsdp_full_shard:
    case data_parallel::fsdp_shard_grad_op:
      break;
  }
  return pytorch_data_parallel(dp);
}

}  // namespace gpumem
