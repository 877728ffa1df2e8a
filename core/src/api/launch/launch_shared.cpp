// What several launch formats say alike: their refusals, ZeRO and FSDP by name, FSDP's host
// offload, the HF Trainer's optimizer names.
#include <string>

#include "api/launch/launch.hpp"

namespace gpumem {

error launch_refusal(const std::string& field, const std::string& message) {
  return {"request.invalid_value", field, "[" + field + "] " + message};
}

std::string decimal_text(double value) {
  std::string text = std::to_string(value);
  text.erase(text.find_last_not_of('0') + 1);
  if (text.back() == '.') text += '0';
  return text;
}

std::uint64_t nodes_of(const launch_setup& s) {
  const std::uint64_t per_node = ranks_per_node(s.cluster);
  return per_node == 0 ? 1 : (s.cluster.gpus + per_node - 1) / per_node;
}

bool zero_sharding(data_parallel dp) {
  return dp == data_parallel::zero1 || dp == data_parallel::zero2 || dp == data_parallel::zero3;
}

const char* fsdp_strategy(const std::string& method) {
  if (method == "fsdp_shard_grad_op") return "shard_grad_op";
  if (method == "fsdp_hybrid_shard") return "hybrid_shard";
  return "full_shard";
}

result<bool> fsdp_host_offload(const offload_placement& o) {
  const bool host = o.params == offload_target::cpu;
  if (o.activations != offload_target::none ||
      (host && (o.optimizer != offload_target::cpu || o.gradients != offload_target::cpu)) ||
      (!host && o.any())) {
    return launch_refusal("parallel.offload",
                          "FSDP offloads parameters, gradients and the optimizer to the host "
                          "together (CPUOffload), never to NVMe");
  }
  return host;
}

result<std::string> trainer_optim(const training_config& c) {
  switch (c.optimizer) {
    case optimizer_kind::adamw:
      if (c.adamw_impl == adamw_implementation::for_loop) {
        return launch_refusal("workload.optimizer_impl",
                              "the HF Trainer's AdamW (adamw_torch) takes PyTorch's foreach "
                              "default; for_loop is not one of its optimizers");
      }
      return std::string(c.adamw_impl == adamw_implementation::fused ? "adamw_torch_fused"
                                                                     : "adamw_torch");
    case optimizer_kind::adamw_8bit:
      return std::string("adamw_bnb_8bit");
    case optimizer_kind::adafactor:
      return std::string("adafactor");
    case optimizer_kind::sgd:
      return std::string("sgd");
    default:
      return launch_refusal("workload.optimizer",
                            "the HF Trainer has no optimizer name for this one");
  }
}

}  // namespace gpumem
