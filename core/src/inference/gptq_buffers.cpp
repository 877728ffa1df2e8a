// transformers reads a 4-bit GPTQ checkpoint through optimum's GPTQQuantizer and AutoGPTQ from
// 4.32 (GPTQConfig: disable_exllama False, later use_exllama True with exllama_config version
// ONE) until 4.49 made GPTQModel its backend; AutoGPTQ's autogptq_post_init (v0.4.2 to v0.7.1,
// auto_gptq/modeling/_utils.py) then allocates on each device, once, for the exllama kernels:
// - temp_dq, [1, max_dq_buffer_size] fp16, max_dq_buffer_size the largest qweight.numel() * 8 =
//   in × out features of a quantised linear: the prefill's weights dequantised for cuBLAS;
// - temp_state, [max_input_len, max_inner_outer_dim] fp16: with act-order (desc_act) 2048 rows
//   (EXLLAMA_DEFAULT_MAX_INPUT_LENGTH) of the widest in or out features, to reorder the input;
//   without act-order [1, 1].
#include "inference/gptq_buffers.hpp"

namespace gpumem {

std::optional<exllama_buffers> gptq_exllama_buffers(const inference_config& config,
                                                    std::uint64_t largest_matrix,
                                                    std::uint64_t widest_side) {
  if (config.framework != serving_framework::transformers ||
      config.weights.format != weight_format::gptq_4bit || !config.transformers ||
      config.transformers->before(4, 32) || !config.transformers->before(4, 49) ||
      largest_matrix == 0) {
    return std::nullopt;
  }
  constexpr std::uint64_t max_input_len = 2048;  // EXLLAMA_DEFAULT_MAX_INPUT_LENGTH
  exllama_buffers out;
  out.dequantised = largest_matrix * 2;
  out.reordered = config.weights.act_order ? max_input_len * widest_side * 2 : 2;
  out.note =
      "transformers " + release_name(*config.transformers) +
      " runs a 4-bit GPTQ checkpoint on AutoGPTQ's exllama kernels, whose buffers hold the "
      "largest quantised matrix dequantised to fp16" +
      std::string(config.weights.act_order ? " and 2,048 reordered input rows (desc_act)" : "");
  return out;
}

}  // namespace gpumem
