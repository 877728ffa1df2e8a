#pragma once
// What every estimator returns: per-rank memory broken down into named components, and whether
// it fits the GPU.

#include <cstdint>
#include <string>
#include <vector>

#include "gpumem/runtime/component.hpp"

namespace gpumem {

// Distributed fine-tuning methods of LLMem (IJCAI 2024, Table 1): one GPU; conventional data
// parallelism (a full replica per GPU); advanced data parallelism (ZeRO-3 / Gemini: parameters,
// gradients and optimizer states sharded over all GPUs); 1D tensor parallelism over all GPUs;
// T-way tensor parallelism inside N/T-way advanced data parallelism.
enum class parallel_method { single, cdp, adp, tp, dp_tp };

const char* method_name(parallel_method method);

// A method's name as a person reads it ("One GPU", "ZeRO-3", "FSDP full shard", LLMem's "ADP"),
// for the API's sentences; the id itself for one it does not know.
std::string method_label(const std::string& id);

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

// How an estimate stands against a GPU: it leaves the headroom free (fits), it runs with less
// than the headroom to spare (tight: within the card's memory, above what a plan packs to), or
// it does not run (does_not_fit), by memory or by another limit (host budgets, KV capacity).
enum class fit_verdict { fits, tight, does_not_fit };

const char* verdict_name(fit_verdict verdict);

// `device_used` against the card's `memory` and the `usable` part a plan leaves the headroom
// beside; `other_limits_hold`: every limit besides the GPU's memory.
fit_verdict judge_fit(std::uint64_t device_used, std::uint64_t memory, std::uint64_t usable,
                      bool other_limits_hold);

// The worse of two verdicts (a job fits as its busiest rank does).
fit_verdict worse(fit_verdict a, fit_verdict b);

struct rank_estimate {
  std::uint64_t first_rank = 0;  // ranks [first_rank, last_rank] are identical
  std::uint64_t last_rank = 0;
  std::vector<component> components;
  std::uint64_t peak_bytes = 0;  // sum of the components
  bool fits = false;             // peak_bytes <= usable bytes
  fit_verdict verdict = fit_verdict::does_not_fit;
};

}  // namespace gpumem
