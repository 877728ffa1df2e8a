#include "gpumem/plan/estimate.hpp"

#include <utility>

namespace gpumem {

const char* method_name(parallel_method method) {
  switch (method) {
    case parallel_method::single:
      return "single";
    case parallel_method::cdp:
      return "cdp";
    case parallel_method::adp:
      return "adp";
    case parallel_method::tp:
      return "tp";
    case parallel_method::dp_tp:
      return "dp_tp";
  }
  return "single";
}

std::string method_label(const std::string& id) {
  static const std::pair<const char*, const char*> labels[] = {
      {"single", "One GPU"},
      {"ddp", "DDP"},
      {"zero1", "ZeRO-1"},
      {"zero2", "ZeRO-2"},
      {"zero3", "ZeRO-3"},
      {"gemini", "Gemini"},
      {"fsdp_full_shard", "FSDP full shard"},
      {"fsdp_shard_grad_op", "FSDP grad-op"},
      {"fsdp_hybrid_shard", "FSDP hybrid shard"},
      {"tensor_parallel", "Tensor parallelism"},
      {"pipeline", "Pipeline"},
      {"cdp", "CDP"},
      {"adp", "ADP"},
      {"tp", "TP"},
      {"dp_tp", "DP+TP"}};
  for (const auto& [key, text] : labels) {
    if (id == key) return text;
  }
  return id;
}

const char* verdict_name(fit_verdict verdict) {
  switch (verdict) {
    case fit_verdict::fits:
      return "fits";
    case fit_verdict::tight:
      return "tight";
    case fit_verdict::does_not_fit:
      return "does_not_fit";
  }
  return "does_not_fit";
}

fit_verdict judge_fit(std::uint64_t device_used, std::uint64_t memory, std::uint64_t usable,
                      bool other_limits_hold) {
  if (!other_limits_hold || device_used > memory) return fit_verdict::does_not_fit;
  return device_used <= usable ? fit_verdict::fits : fit_verdict::tight;
}

fit_verdict worse(fit_verdict a, fit_verdict b) {
  return static_cast<int>(a) > static_cast<int>(b) ? a : b;
}

}  // namespace gpumem
