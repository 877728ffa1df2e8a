// LoRA's own kernels in a step, by hand (plan/adapter_cost.hpp).

#include "plan/adapter_cost.hpp"

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "gpumem/model/config_parser.hpp"
#include "gpumem/model/param_count.hpp"
#include "gpumem/plan/step_time.hpp"

namespace gpumem {
namespace {

using nlohmann::json;

// hidden 64, 2 layers, 4 heads of 16 (2 KV heads), gated MLP 128: q is 64 x 64, v 64 -> 32.
model_spec tiny_llama() {
  const json config = {{"model_type", "llama"},    {"hidden_size", 64},
                       {"intermediate_size", 128}, {"num_hidden_layers", 2},
                       {"num_attention_heads", 4}, {"num_key_value_heads", 2},
                       {"vocab_size", 100},        {"tie_word_embeddings", false}};
  return parse_model_config(config, {}, "c").value();
}

training_config lora_on_q_and_v() {
  training_config w;
  w.finetune = finetune_kind::lora;
  w.lora_targets = {"q_proj", "v_proj"};
  w.lora_dropout = 0.0;
  return w;
}

TEST_CASE("PEFT's LoRA chain under autocast: the fp32 casts, lora_A's read, the output's three") {
  const model_spec spec = tiny_llama();
  training_config w = lora_on_q_and_v();
  // Per target: lora_A reads 2 x 64, the casts to fp32 and back (2 + 4) x 64 twice, the output
  // 6 x 2 bytes an element (64 for q, 32 for v); two layers.
  const double q = 2 * 64 + 2 * 6 * 64 + 12 * 64;
  const double v = 2 * 64 + 2 * 6 * 64 + 12 * 32;
  adapter_cost cost = lora_adapter_cost(spec, w);
  CHECK(cost.bytes_per_token == doctest::Approx(2 * (q + v)));
  CHECK(cost.kernels == 4 * 6);  // A, B, scale, add and the two casts
  CHECK(cost.fixed_bytes == 0);

  SUBCASE("dropout: a copy of the fp32 input and its 1-byte mask") {
    w.lora_dropout = 0.1;
    CHECK(lora_adapter_cost(spec, w).bytes_per_token ==
          doctest::Approx(2 * (q + v) + 4 * (2 * 4 + 1) * 64.0));
  }
  SUBCASE("pure bf16: no casts") {
    w.compute = compute_precision::pure_bf16;
    CHECK(lora_adapter_cost(spec, w).bytes_per_token ==
          doctest::Approx(2 * (2 * 64 + 12 * 64 + 2 * 64 + 12 * 32.0)));
  }
  SUBCASE("DoRA: the weight norm each forward, whatever the tokens") {
    w.dora = true;
    cost = lora_adapter_cost(spec, w);
    CHECK(cost.fixed_bytes == doctest::Approx(2 * 16 * (64 * 64 + 64 * 32.0)));
    CHECK(cost.bytes_per_token == doctest::Approx(2 * (q + v) + 2 * 12 * (64 + 32.0)));
  }
  SUBCASE("full fine-tuning has no adapters") {
    w.finetune = finetune_kind::full;
    CHECK(lora_adapter_cost(spec, w).bytes_per_token == 0);
  }
}

TEST_CASE("the step time moves the adapters' bytes in the forward, recomputation and backward") {
  const model_spec spec = tiny_llama();
  const param_count counts = count_params(spec).value();
  cluster_spec cluster;
  cluster.gpu.fp16_dense_flops = 1e12;
  cluster.gpu.memory_bandwidth_bytes_per_s = 1e9;
  step_time_options options;
  options.causal_kernel = true;
  options.weight_gradients = false;
  const auto plain = estimate_step_time(spec, counts, cluster, {parallel_method::single, 1, false},
                                        2, 128, options);
  options.adapter_bytes_per_token = 1000;
  options.adapter_fixed_bytes = 5000;
  const auto adapted = estimate_step_time(spec, counts, cluster,
                                          {parallel_method::single, 1, false}, 2, 128, options);
  // 256 tokens x 1,000 bytes in 4 forwards' worth (recomputing), the norm in 2, at 85 % of 1 GB/s.
  CHECK(adapted.adapter_s == doctest::Approx((256 * 1000.0 * 4 + 5000.0 * 2) / 0.85e9));
  CHECK(adapted.compute_s == doctest::Approx(plain.compute_s + adapted.adapter_s));
}

}  // namespace
}  // namespace gpumem
