#include "plan/adapter_cost.hpp"

#include "training/adapter_targets.hpp"
#include "training/block_activations.hpp"
#include "training/framework.hpp"

namespace gpumem {

namespace {

// One adapted linear's forward, per token, bytes read plus written (c: the compute dtype's
// bytes, a: the adapter's), as PEFT runs it under autocast (tuners/lora/layer.py Linear.forward):
// the input cast to the adapter's dtype (_cast_input_dtype, when they differ), dropped out
// (lora_dropout > 0: the copy and a 1-byte mask), cast back to 16 bits by autocast for lora_A,
// read by lora_A (rank r: a memory-bound matmul), lora_B's output written, scaled
// (read and written) and added to the base output (two read, one written). litgpt's and
// torchtune's LoRALinear run the same chain without the casts.
double chained_bytes(double in, double out, double c, double a, bool cast, bool dropout) {
  double bytes = c * in;                           // lora_A reads its input
  if (cast) bytes += (c + a) * in + (a + c) * in;  // to the adapter's dtype and back
  if (dropout) bytes += (2.0 * (cast ? a : c) + 1.0) * in;
  return bytes + 6.0 * c * out;  // lora_B writes, scaled (2), added to the base output (3)
}

}  // namespace

adapter_cost lora_adapter_cost(const model_spec& spec, const training_config& workload) {
  adapter_cost cost;
  if (workload.finetune != finetune_kind::lora) return cost;
  const framework_traits& fw = framework_of(workload);
  const double c = static_cast<double>(compute_bytes(workload.compute));
  const bool amp = is_amp(workload.compute);
  // PEFT keeps adapters in fp32 under autocast (autocast_adapter_dtype, 0.12 and later).
  const double a = fw.peft && amp ? 4.0 : c;
  const bool dropout = lora_dropout_of(workload) > 0;
  for (const auto& t : spec.tensors) {
    if (t.layer < 0 || t.is_bias || !lora_target(workload, t)) continue;
    const double out = static_cast<double>(tensor_out(t));
    const double in = static_cast<double>(tensor_in(t));
    if (fw.own_kernels) {
      // unsloth's matmul_lora (unsloth/kernels/utils.py): X @ A then addmm_ into the base
      // output in place — the input read once more, the output read and written.
      cost.bytes_per_token += c * in + 2.0 * c * out;
      cost.kernels += 2;
      continue;
    }
    cost.bytes_per_token += chained_bytes(in, out, c, a, fw.peft && a != c, dropout);
    cost.kernels += 4 + (fw.peft && a != c ? 2 : 0) + (dropout ? 1 : 0);
    if (workload.dora) {
      // PEFT's DoRA (tuners/lora/dora.py DoraLinearLayer): each forward forms lora_B @ lora_A,
      // adds it to the base weight and takes the columns' norm (about 16 bytes an element: the
      // product written, the weight and it read, the sum written and read in fp32), then rescales
      // the output twice (about 12 bytes a token and output). The norm is detached, so the
      // backward does not repeat it.
      cost.fixed_bytes += 16.0 * in * out;
      cost.bytes_per_token += 6.0 * c * out;
      cost.kernels += 8;
    }
  }
  return cost;
}

}  // namespace gpumem
