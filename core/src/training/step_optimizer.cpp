// The optimizer step at a step's last micro-batch: fp32 gradients beside master weights, the
// states made at the first step, the implementation's temporaries, and what zero_grad leaves to
// the next step.
#include <algorithm>

#include "training/step_replay.hpp"

namespace gpumem {

void step_replay::optimizer_step() {
  if (states_on_host) return;  // CPU Adam steps in host memory
  if (in_backward) {
    optimizer_in_backward();
    return;
  }
  tl.phase("optimizer step");
  std::vector<int> fp32_grads;
  fp32_gradients(fp32_grads);
  create_states();
  if (config.optimizer == optimizer_kind::adafactor) adafactor_step();
  adamw_temporaries();
  for (int id : fp32_grads) tl.free(id);
  if (grads_outlive_step) {
    grads_kept = true;
  } else {
    for (int id : grads) tl.free(id);  // zero_grad(set_to_none=True)
    grads.clear();
  }
}

// torchtune's optimizer_in_bwd has stepped every parameter in backward; its paged states live
// outside PyTorch's allocator (bitsandbytes' paged AdamW: 8 bytes a value, or the 8-bit layout).
void step_replay::optimizer_in_backward() {
  for (int id : grads) tl.free(id);
  grads.clear();
  if (out.unmanaged_bytes != 0) return;
  for (const auto& p : params) {
    const bool eight_bit = config.optimizer == optimizer_kind::adamw_8bit && p.numel >= 4096;
    out.unmanaged_bytes += eight_bit ? 2 * p.numel + 8 * ((p.numel + 255) / 256) : 8 * p.numel;
  }
}

// Mixed-precision optimizers with master weights step on fp32 gradients: the (shard of the)
// 16-bit gradients is converted first (DeepSpeed single_partition_of_fp32_groups grads).
void step_replay::fp32_gradients(std::vector<int>& fp32_grads) {
  if (master && deepspeed3) {
    // ZeRO-3 steps sub-group by sub-group (sub_group_size 1e9 elements): its gradient
    // partitions flattened, then converted to fp32 (stage3.py _prepare_fp32_grad_for_sub_group).
    std::uint64_t partition = 0;
    for (const auto& p : params) partition += share(p.numel, true);
    const std::uint64_t sub_group = std::min<std::uint64_t>(partition, 1000000000);
    const int flat = tl.allocate(2 * sub_group, cat::optimizer_temporaries);
    fp32_grads.push_back(tl.allocate(4 * sub_group, cat::optimizer_temporaries));
    tl.free(flat);
  } else if (master && !method.grads_in_param_chunks) {  // HybridAdam reads the fp16 slots
    for (const auto& p : params) {
      fp32_grads.push_back(
          tl.allocate(share(4 * p.numel, states_sharded), cat::optimizer_temporaries));
    }
  }
}

void step_replay::create_states() {
  if (!states.empty()) return;
  if (config.optimizer == optimizer_kind::adamw ||
      config.optimizer == optimizer_kind::sgd_momentum) {
    // torch.optim creates the states at the first step, in the parameters' dtype: AdamW's
    // exp_avg and exp_avg_sq, SGD's momentum buffer.
    for (const auto& p : params) {
      const std::uint64_t bytes = state_bytes(p.bytes);
      states.push_back(tl.allocate(share(p.numel * bytes, states_sharded), cat::optimizer_states));
      if (config.optimizer == optimizer_kind::adamw) {
        states.push_back(
            tl.allocate(share(p.numel * bytes, states_sharded), cat::optimizer_states));
      }
    }
  } else if (config.optimizer == optimizer_kind::adamw_8bit) {
    // bitsandbytes AdamW8bit: both moments as uint8 with an fp32 absmax per 256-value block;
    // tensors under min_8bit_size (4096) keep fp32 moments (bitsandbytes optim/optimizer.py
    // Optimizer2State.init_state). Its blockwise kernel updates in place.
    for (const auto& p : params) {
      const std::uint64_t bytes =
          p.numel < 4096 ? 8 * p.numel : 2 * p.numel + 8 * ((p.numel + 255) / 256);
      states.push_back(tl.allocate(share(bytes, states_sharded), cat::optimizer_states));
    }
  } else if (config.optimizer == optimizer_kind::adafactor) {
    // transformers.optimization.Adafactor (beta1 None: no first moment): fp32 factored second
    // moments, a row and a column vector for matrices, a full vector for 1-D tensors; created
    // at the first step.
    for (const auto& p : params) {
      const std::uint64_t elems = p.matrix ? p.numel / p.cols + p.cols : p.numel;
      states.push_back(tl.allocate(4 * elems, cat::optimizer_states));
    }
  }
}

// Adafactor steps one parameter at a time: the fp32 gradient (a copy when it is 16-bit),
// grad^2 + eps, the factored estimate replacing it, and an fp32 copy of a 16-bit parameter are
// alive together.
void step_replay::adafactor_step() {
  for (const auto& p : params) {
    std::vector<int> temps;
    if (p.bytes != 4) temps.push_back(tl.allocate(4 * p.numel, cat::optimizer_temporaries));
    temps.push_back(tl.allocate(4 * p.numel, cat::optimizer_temporaries));
    temps.push_back(tl.allocate(4 * p.numel, cat::optimizer_temporaries));
    if (p.bytes != 4) temps.push_back(tl.allocate(4 * p.numel, cat::optimizer_temporaries));
    for (int id : temps) tl.free(id);
  }
}

adamw_implementation resolved_adamw(const training_config& config) {
  // torchtune's recipes fuse; so does torchtitan since 2025 (optimizer.implementation
  // "fused"; its December 2024 code ran foreach, optimizer.fused false). torch < 2.0 loops.
  const framework_traits& fw = framework_of(config);
  return config.adamw_impl.value_or(fw.default_adamw == adamw_implementation::fused
                                        ? adamw_implementation::fused
                                        : (config.software.adamw_loops_by_default()
                                               ? adamw_implementation::for_loop
                                               : fw.default_adamw));
}

void step_replay::adamw_temporaries() {
  const adamw_implementation impl = resolved_adamw(config);
  if (config.optimizer != optimizer_kind::adamw || in_place_adam ||
      impl == adamw_implementation::fused)
    return;
  // (The fused kernel, which torchtune's recipes use, has no such temporaries, nor do the
  // engines' in-place kernels.) torch.optim's foreach implementation (default on CUDA)
  // materialises sqrt(exp_avg_sq) for every parameter at once (torch/optim/adamw.py
  // _multi_tensor_adamw: torch._foreach_sqrt); the for-loop one (_single_tensor_adamw) one
  // parameter's at a time, as exp_avg_sq.sqrt() and its quotient by the bias correction, alive
  // together.
  std::vector<int> temps;
  for (const auto& p : params) {
    const std::uint64_t bytes = share(p.numel * state_bytes(p.bytes), states_sharded);
    temps.push_back(tl.allocate(bytes, cat::optimizer_temporaries));
    if (impl != adamw_implementation::for_loop) continue;
    const int quotient = tl.allocate(bytes, cat::optimizer_temporaries);
    tl.free(temps.back());
    tl.free(quotient);
    temps.pop_back();
  }
  for (int id : temps) tl.free(id);
}

}  // namespace gpumem
