#include "plan/workload_speed.hpp"

#include "parallel/data_parallel_method.hpp"
#include "plan/adapter_cost.hpp"
#include "training/framework.hpp"

namespace gpumem {

step_time_options workload_speed(const model_spec& spec, const param_count& counts,
                                 const training_config& workload, const plan_options& options) {
  step_time_options speed = options.speed;
  speed.bf16 = workload.compute == compute_precision::amp_bf16 ||
               workload.compute == compute_precision::pure_bf16;
  speed.fp32 = workload.compute == compute_precision::fp32;
  const attention_kernel kernel =
      kernel_run(spec, workload.attention, workload.framework == framework_profile::transformers);
  speed.causal_kernel = kernel != attention_kernel::eager;
  speed.sdpa_window_masks =
      kernel == attention_kernel::sdpa && framework_of(workload).transformers_modelling;
  speed.recompute = recomputed_forwards(
      spec, counts, workload.seq_len, speed.causal_kernel, workload.grad_ckpt,
      workload.framework == framework_profile::torchtitan && workload.selective_recompute);
  speed.weight_gradients = workload.finetune == finetune_kind::full;
  // What the optimizer moves: fp32 stepped weights beside autocast (master copies or fp32
  // adapters), 16-bit ones in pure 16-bit training; states of the request's dtype or the weights'.
  const double weight_bytes =
      is_amp(workload.compute) || workload.compute == compute_precision::fp32 ? 4.0 : 2.0;
  const double state_bytes = workload.optimizer == optimizer_kind::adamw_8bit ? 1.0
                             : workload.optimizer_state_bytes
                                 ? static_cast<double>(workload.optimizer_state_bytes)
                                 : weight_bytes;
  const double states = workload.optimizer == optimizer_kind::adamw ||
                                workload.optimizer == optimizer_kind::adamw_8bit
                            ? 2.0
                        : workload.optimizer == optimizer_kind::sgd_momentum ? 1.0
                                                                             : 0.0;
  // torch.optim steps AdamW (unless fused) and SGD with momentum a kernel per operation;
  // bitsandbytes' 8-bit AdamW and the engines' in-place kernels in one pass.
  const bool multi_pass = (workload.optimizer == optimizer_kind::adamw &&
                           resolved_adamw(workload) != adamw_implementation::fused) ||
                          workload.optimizer == optimizer_kind::sgd_momentum;
  const bool steps = workload.optimizer != optimizer_kind::none && workload.optimizer_step;
  // (No engine steps Adafactor in place: DeepSpeed and Colossal-AI run it as torch does.)
  const bool adafactor = workload.optimizer == optimizer_kind::adafactor;
  const auto bytes_per_param = [&](bool passes) {
    if (!steps) return 0.0;
    return adafactor ? adafactor_bytes_per_param(weight_bytes)
                     : optimizer_bytes_per_param(weight_bytes, state_bytes, states, passes);
  };
  speed.optimizer_bytes_per_param = bytes_per_param(multi_pass);
  speed.engine_optimizer_bytes_per_param = bytes_per_param(false);
  speed.engine_optimizer = data_parallel_of(workload.sharding).engine;
  // The memory-bound kernels' dtypes: fp32 compute moves 4 bytes an activation; autocast over
  // fp32 weights keeps the residual stream in fp32 (the embedding's output is fp32).
  speed.dtypes.activation = static_cast<double>(compute_bytes(workload.compute));
  speed.dtypes.residual =
      workload.compute == compute_precision::fp32 ||
              (is_amp(workload.compute) && workload.finetune == finetune_kind::full &&
               full_model_weight_bytes(workload) == 4)
          ? 4.0
          : 2.0;
  const adapter_cost adapters = lora_adapter_cost(spec, workload);
  speed.adapter_bytes_per_token = adapters.bytes_per_token;
  speed.adapter_fixed_bytes = adapters.fixed_bytes;
  speed.adapter_kernels = adapters.kernels;
  if (framework_of(workload).own_kernels) speed.kernels_per_block = fused_kernels_per_block_forward;
  speed.target_len = workload.target_len;
  // QLoRA's 4-bit weights: the blocks' linear weights (the embeddings and the head stay 16-bit).
  if (workload.quantization == base_quantization::nf4 ||
      workload.quantization == base_quantization::nf4_double_quant) {
    for (const auto& t : spec.tensors) {
      if (t.layer >= 0 && !t.is_bias && t.module == module_kind::linear)
        speed.four_bit_params += static_cast<double>(t.numel());
    }
  }
  return speed;
}

}  // namespace gpumem
