#pragma once
// What every estimator returns: per-rank memory broken down into named components, and whether
// it fits the GPU.

#include <cstdint>
#include <string>
#include <vector>

namespace gpumem {

// Distributed fine-tuning methods of LLMem (IJCAI 2024, Table 1): one GPU; conventional data
// parallelism (a full replica per GPU); advanced data parallelism (ZeRO-3 / Gemini: parameters,
// gradients and optimizer states sharded over all GPUs); 1D tensor parallelism over all GPUs;
// T-way tensor parallelism inside N/T-way advanced data parallelism.
enum class parallel_method { single, cdp, adp, tp, dp_tp };

const char* method_name(parallel_method method);

struct parallel_config {
  parallel_method method = parallel_method::single;
  std::uint64_t tp = 1;  // tensor-parallel degree (tp: all GPUs; dp_tp: 1 < tp < gpus, dividing)
  // DP+TP re-gather fraction: LLMem's own ((N-T)/N - 1/N of the local shard) unless true, then
  // the remote part of the tensor, (N-T)/N of the local shard (1/T - 1/N of the whole).
  bool exact_dp_tp_fraction = false;
  // Context-parallel degree (detailed plans): each sequence split over cp GPUs of a sharded
  // data-parallel method, attention by ring.
  std::uint64_t cp = 1;
};

struct component {
  std::string name;
  std::uint64_t bytes = 0;
};

struct rank_estimate {
  std::uint64_t first_rank = 0;  // ranks [first_rank, last_rank] are identical
  std::uint64_t last_rank = 0;
  std::vector<component> components;
  std::uint64_t peak_bytes = 0;  // sum of the components
  bool fits = false;             // peak_bytes <= usable bytes
};

}  // namespace gpumem
