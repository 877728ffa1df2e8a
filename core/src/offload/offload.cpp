#include "gpumem/offload/offload.hpp"

#include <algorithm>

#include "gpumem/model/param_count.hpp"

namespace gpumem {

namespace {

// DeepSpeed ZeRO-Infinity's staging buffers in pinned host memory (deepspeed/runtime/zero/
// offload_config.py defaults): parameters buffer_count 5 x buffer_size 1e8 elements (16-bit);
// optimizer states buffer_count 4 x one sub-group of up to sub_group_size 1e9 fp32 elements.
constexpr std::uint64_t param_buffer_count = 5;
constexpr std::uint64_t param_buffer_elements = 100000000;
constexpr std::uint64_t optimizer_buffer_count = 4;
constexpr std::uint64_t sub_group_elements = 1000000000;
// offload_param.max_in_cpu: parameter elements kept in host memory while the rest live on
// NVMe (default 1e9).
constexpr std::uint64_t max_in_cpu_elements = 1000000000;
// The async I/O engine's pinned blocks per swapper: aio block_size 1 MiB x queue_depth 8 x
// thread_count 1 (deepspeed/runtime/swap_tensor/aio_config.py defaults).
constexpr std::uint64_t aio_buffer_bytes = 1048576ULL * 8 * 1;

bool is_pure(compute_precision c) {
  return c == compute_precision::pure_bf16 || c == compute_precision::pure_fp16;
}

// Bytes per trainable parameter of the optimizer's states on the host: CPU Adam keeps fp32
// moments; 8-bit Adam 2 bytes; SGD's momentum 4; Adafactor's factored moments are O(rows +
// columns) and are left out.
std::uint64_t host_state_bytes(optimizer_kind optimizer) {
  switch (optimizer) {
    case optimizer_kind::adamw:
      return 8;
    case optimizer_kind::adamw_8bit:
      return 2;
    case optimizer_kind::sgd_momentum:
      return 4;
    default:
      return 0;
  }
}

}  // namespace

host_footprint offload_footprint(const model_spec& spec, const training_config& config,
                                 const training_estimate& estimate) {
  host_footprint f;
  if (const std::uint64_t checkpoints = unsloth_host_checkpoint_bytes(spec, config)) {
    f.host.push_back({"activation_checkpoints", checkpoints});
    f.host_bytes += checkpoints;
    f.pinned_bytes += checkpoints;
    f.pcie_bytes += 2.0 * static_cast<double>(checkpoints);  // out in forward, back in backward
  }
  const offload_placement& off = config.offload;
  if (!off.any()) return f;
  const std::uint64_t n = std::max<std::uint64_t>(config.dp_degree, 1);
  const std::uint64_t tp = std::max<std::uint64_t>(config.tp_degree, 1);
  const bool full = config.finetune == finetune_kind::full;
  const bool pure = is_pure(config.compute);
  // This rank's share of the trainable parameters (states are sharded over the ranks under
  // every method that offloads) and of all stored parameter bytes.
  const std::uint64_t trainable = (estimate.trainable_params + n - 1) / n;
  std::uint64_t stored = 0;
  std::uint64_t elements = 0;
  for (const auto& t : spec.tensors) {
    const std::uint64_t local = tensor_parallel_numel(t, tp);
    elements += local;
    const bool quantized = !full && config.quantization != base_quantization::none &&
                           t.layer >= 0 && !t.is_bias &&
                           (t.module == module_kind::linear || t.module == module_kind::conv1d);
    const std::uint64_t bytes = full ? full_model_weight_bytes(config)
                                     : (config.base_weight_bytes ? config.base_weight_bytes : 2);
    stored += quantized ? quantized_weight_bytes(t, tp, config.quantization) : local * bytes;
  }
  stored = (stored + n - 1) / n;
  elements = (elements + n - 1) / n;
  const std::uint64_t grad_bytes = pure ? 2 : 4;  // fp32 gradient partition beside fp32 masters
  // The host optimizer steps fp32 master weights of a mixed-precision model, unless the
  // offloaded parameters are fp32 already (FSDP CPUOffload of an fp32 model).
  const bool fp32_params_on_host =
      off.params != offload_target::none && full_model_weight_bytes(config) == 4;
  const bool master = full && !pure && !fp32_params_on_host;

  auto place = [&](offload_target target, const char* name, std::uint64_t bytes, bool pinned) {
    if (target == offload_target::none || bytes == 0) return;
    if (target == offload_target::nvme) {
      f.nvme.push_back({name, bytes});
      f.nvme_bytes += bytes;
      return;
    }
    f.host.push_back({name, bytes});
    f.host_bytes += bytes;
    if (pinned) f.pinned_bytes += bytes;
  };
  auto staging = [&](const char* name, std::uint64_t bytes) {
    f.host.push_back({name, bytes});
    f.host_bytes += bytes;
    f.pinned_bytes += bytes;
  };

  // Optimizer: fp32 master weights (when the model trains in 16 bits), the states and the fp32
  // gradient partition the CPU step reads (swapped with them when they live on NVMe).
  // Gradients follow the optimizer unless placed on their own (ZeRO-Infinity swaps each
  // sub-group's gradients with its states).
  const offload_target grads_target =
      off.gradients != offload_target::none ? off.gradients : off.optimizer;
  if (off.optimizer != offload_target::none) {
    if (master) place(off.optimizer, "master_weights", 4 * trainable, false);
    place(off.optimizer, "optimizer_states", host_state_bytes(config.optimizer) * trainable, false);
    f.cpu_optimizer_params = static_cast<double>(trainable);
    if (off.optimizer == offload_target::nvme) {
      staging(
          "optimizer_swap_buffers",
          optimizer_buffer_count * std::min(trainable, sub_group_elements) * 4 + aio_buffer_bytes);
      const std::uint64_t swapped_grads = grads_target == offload_target::nvme ? grad_bytes : 0;
      const double swapped =
          static_cast<double>((master ? 4 : 0) + host_state_bytes(config.optimizer) +
                              swapped_grads) *
          static_cast<double>(trainable);
      f.nvme_read_bytes += swapped;
      f.nvme_write_bytes += swapped;
    }
  }
  // Gemini writes gradients into the parameters' own fp16 chunk slots and HybridAdam converts
  // one chunk at a time (colossalai/zero/gemini: ZeroDDP grad_handle, GeminiOptimizer
  // _set_grad_ptr): no gradient partition of its own.
  if (config.sharding != data_parallel::gemini)
    place(grads_target, "gradients", grad_bytes * trainable, false);
  // Gradients leave the GPU in 16 bits; updated 16-bit parameters come back.
  if (grads_target != offload_target::none) f.pcie_bytes += 2.0 * static_cast<double>(trainable);
  if (off.optimizer != offload_target::none && off.params == offload_target::none)
    f.pcie_bytes += 2.0 * static_cast<double>(trainable);

  // Parameters: this rank's partition, copied up for the forward and again for the backward.
  if (off.params != offload_target::none) {
    place(off.params, "parameters", stored, false);
    f.pcie_bytes += 2.0 * static_cast<double>(stored);
    if (off.params == offload_target::nvme) {
      staging("parameter_swap_buffers",
              param_buffer_count * param_buffer_elements * 2 + aio_buffer_bytes);
      // Up to max_in_cpu elements stay in host memory (16-bit).
      place(offload_target::cpu, "parameters_in_cpu", std::min(elements, max_in_cpu_elements) * 2,
            false);
      f.nvme_read_bytes += 2.0 * static_cast<double>(stored);
      if (full) f.nvme_write_bytes += static_cast<double>(stored);
    }
  }

  // Activations: what the blocks keep for backward, out and back once per step.
  if (off.activations != offload_target::none) {
    const std::uint64_t bytes = estimate.saved_activation_bytes;
    place(off.activations, "activations", bytes, true);  // copied back asynchronously
    f.pcie_bytes += 2.0 * static_cast<double>(bytes);
    if (off.activations == offload_target::nvme) {
      const std::uint64_t layers = std::max<std::size_t>(spec.layers.size(), 1);
      staging("activation_swap_buffers", 2 * bytes / layers);
      f.nvme_read_bytes += static_cast<double>(bytes);
      f.nvme_write_bytes += static_cast<double>(bytes);
    }
  }
  return f;
}

void checkpoint_load_bytes(const model_spec& spec, const training_config& config,
                           std::uint64_t ranks_per_node, host_footprint& f) {
  const bool full = config.finetune == finetune_kind::full;
  const std::uint64_t bytes_per_param =
      full ? full_model_weight_bytes(config)
           : (config.base_weight_bytes ? config.base_weight_bytes : 2);
  std::uint64_t model = 0;
  for (const auto& t : spec.tensors) model += t.numel() * bytes_per_param;
  const bool fsdp = config.sharding == data_parallel::fsdp_full_shard ||
                    config.sharding == data_parallel::fsdp_shard_grad_op;
  constexpr std::uint64_t shard_file_bytes = 5000000000;  // transformers max_shard_size "5GB"
  if (fsdp) {
    f.load_bytes = model;
    f.loading_ranks = 1;
  } else if (config.sharding == data_parallel::zero3) {
    f.load_bytes = std::min(model, shard_file_bytes);
    f.loading_ranks = ranks_per_node;
  } else {
    f.load_bytes = model;
    f.loading_ranks = ranks_per_node;
  }
}

std::uint64_t host_ram_needed_per_node(const host_footprint& f, std::uint64_t ranks_per_node) {
  return std::max(f.host_bytes * ranks_per_node, f.load_bytes * f.loading_ranks);
}

std::optional<error> check_node_totals(const host_footprint& f, std::uint64_t ranks_per_node) {
  const std::uint64_t most = std::max({f.host_bytes, f.nvme_bytes, f.load_bytes});
  if (ranks_per_node == 0 || most <= max_exact_count / ranks_per_node) return std::nullopt;
  return error{
      "request.too_large", "workload.seq_len",
      "[workload.seq_len] the offloaded run would put more than 2^53 bytes in one node's host "
      "memory or NVMe (" +
          std::to_string(ranks_per_node) +
          " ranks a node); the accepted range is up to 9007199254740992 bytes: use a "
          "shorter sequence, a smaller micro-batch or fewer GPUs per node"};
}

double offload_seconds(const host_footprint& f, double compute_s, double host_link_bytes_per_s,
                       const offload_speeds& speeds) {
  const double pcie = host_link_bytes_per_s > 0 ? f.pcie_bytes / host_link_bytes_per_s : 0;
  const double nvme = f.nvme_read_bytes / speeds.nvme_read_bytes_per_s +
                      f.nvme_write_bytes / speeds.nvme_write_bytes_per_s;
  const double cpu = f.cpu_optimizer_params / speeds.cpu_optimizer_params_per_s;
  return std::max(0.0, pcie - compute_s) + nvme + cpu;
}

}  // namespace gpumem
