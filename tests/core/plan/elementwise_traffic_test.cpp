// The memory-bound kernels' bytes a token moves, by hand (gpumem/plan/elementwise_traffic.hpp).

#include "gpumem/plan/elementwise_traffic.hpp"

#include <doctest/doctest.h>

#include <nlohmann/json.hpp>

#include "gpumem/model/config_parser.hpp"

namespace gpumem {
namespace {

using nlohmann::json;

model_spec parsed(const json& config) { return parse_model_config(config, {}, "c").value(); }

// hidden 64, 2 layers, 4 heads of 16 (2 KV heads), gated MLP 128, vocabulary 100.
json tiny_llama() {
  return {{"model_type", "llama"},  {"hidden_size", 64},           {"intermediate_size", 128},
          {"num_hidden_layers", 2}, {"num_attention_heads", 4},    {"num_key_value_heads", 2},
          {"vocab_size", 100},      {"tie_word_embeddings", false}};
}

TEST_CASE("a Llama block in 16 bits: two RMSNorms, residuals, RoPE, the output copy, SwiGLU") {
  const model_spec spec = parsed(tiny_llama());
  // RMSNorm from 16 bits: upcast 6, pow 8, mean 4, x * rsqrt 8, downcast 6, weight 4 = 36 bytes
  // an element, twice; two adds of 3 x 2; RoPE 10 x 2 over q (64) and k (32); the attention
  // output's copy 2 x 2 over 64; SwiGLU 5 x 2 over 128.
  const double block = 2 * 36 * 64 + 2 * 6 * 64 + 20 * (64 + 32) + 4 * 64 + 10 * 128;
  CHECK(block_traffic_per_token(spec, {2, 2}, false) == doctest::Approx(2 * block));
  // Autocast over fp32 weights: the stream and the norms in fp32 (28 bytes an element), adds of
  // 3 x 4, and the five projections' inputs cast from 4 bytes to 2.
  const double fp32_stream =
      2 * 28 * 64 + 2 * 12 * 64 + 20 * (64 + 32) + 4 * 64 + 10 * 128 + 5 * 6 * 64;
  CHECK(block_traffic_per_token(spec, {2, 4}, false) == doctest::Approx(2 * fp32_stream));
}

TEST_CASE("GPT-2: LayerNorms, learned positions (no RoPE), the tanh GELU written out, dropout") {
  const model_spec spec = parsed({{"model_type", "gpt2"},
                                  {"n_embd", 64},
                                  {"n_layer", 2},
                                  {"n_head", 4},
                                  {"vocab_size", 100},
                                  {"n_positions", 128}});
  // LayerNorm 2 x 2 twice; adds 3 x 2 twice; the output copy 2 x 2 over 64; gelu_new's eight
  // kernels 16 x 2 over 256; dropout on both branches (2 x 2 + 1 bytes an element).
  const double block = 2 * 4 * 64 + 2 * 6 * 64 + 4 * 64 + 32 * 256 + 2 * 5 * 64;
  CHECK(block_traffic_per_token(spec, {2, 2}, true) == doctest::Approx(2 * block));
}

TEST_CASE("the loss: fp32 logits, log-softmax and its gradient, casts only from 16 bits") {
  const model_spec spec = parsed(tiny_llama());
  CHECK(loss_traffic_per_token(spec, {2, 2}) == doctest::Approx(100 * (6 + 6 + 8 + 12)));
  CHECK(loss_traffic_per_token(spec, {4, 4}) == doctest::Approx(100 * (8 + 12)));
}

}  // namespace
}  // namespace gpumem
