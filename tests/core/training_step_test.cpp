// The detailed training estimator: the memory timeline, and the parts of a step whose sizes follow
// from PyTorch's own rules, by hand.

#include "gpumem/training_step.hpp"

#include <doctest/doctest.h>

#include "gpumem/config_parser.hpp"
#include "gpumem/memory_timeline.hpp"
#include "test_files.hpp"

namespace gpumem {
namespace {

TEST_CASE("the timeline records the allocated peak, its phase and what was alive") {
  memory_timeline tl;
  tl.phase("a");
  const int w = tl.allocate(30 * mib, memory_category::weights);
  tl.phase("b");
  const int x = tl.allocate(10 * mib, memory_category::activations);
  tl.free(x);
  tl.phase("c");
  tl.allocate(4 * mib, memory_category::gradients);
  CHECK(tl.peak().allocated == 40 * mib);
  CHECK(tl.peak().phase == "b");
  CHECK(tl.peak().by_category[static_cast<std::size_t>(memory_category::weights)] == 30 * mib);
  CHECK(tl.peak().by_category[static_cast<std::size_t>(memory_category::activations)] == 10 * mib);
  CHECK(tl.peak().by_category[static_cast<std::size_t>(memory_category::gradients)] == 0);
  tl.free(w);
  CHECK(tl.allocated() == 4 * mib);
}

TEST_CASE("cuBLAS workspace sizes (CublasHandlePool.cpp)") {
  CHECK(cublas_workspace_bytes("hopper") == 33554432);
  CHECK(cublas_workspace_bytes("ampere") == 8519680);
}

TEST_CASE("an optimizer-step peak, by hand: Llama-3.2-1B, AMP bf16, AdamW, batch 1") {
  const auto presets = test::read_presets();
  auto spec = parse_model_config(presets.at("meta-llama/Llama-3.2-1B").at("config"), {}, "c");
  REQUIRE(spec.ok());
  training_config config;
  config.micro_batch = 1;
  config.seq_len = 512;
  gpu_spec h100;
  h100.architecture = "hopper";
  auto e = estimate_training_step(spec.value(), config, h100);
  REQUIRE(e.ok());
  // fp32 weights, fp32 gradients, AdamW's exp_avg and exp_avg_sq, and the foreach step's
  // sqrt(exp_avg_sq) list: five fp32 copies of the parameters (each tensor rounded to 512 B),
  // plus the forward thread's cuBLAS (32 MiB) and cuBLASLt (1 MiB) workspaces and the autograd
  // thread's cuBLAS workspace. Measured on an H100: 24,784,451,584 bytes
  // (validation/measured_h100.json, llama3.2-1b-ft-amp_bf16-adamw-b1-s512-sdpa).
  std::uint64_t params = 0;
  for (const auto& t : spec.value().tensors) params += allocator_round(t.numel() * 4);
  CHECK(e.value().peak.phase == "optimizer step");
  CHECK(e.value().peak.allocated == 5 * params + 2 * (32ULL << 20) + (1ULL << 20));
  const double measured = 24784451584.0;
  CHECK(static_cast<double>(e.value().peak.allocated) == doctest::Approx(measured).epsilon(1e-6));
  CHECK(e.value().trainable_params == 1235814400ULL);
}

TEST_CASE("LoRA trains only the adapters: A [r, in] and B [out, r] per target") {
  const auto presets = test::read_presets();
  auto spec = parse_model_config(presets.at("meta-llama/Llama-3.2-1B").at("config"), {}, "c");
  REQUIRE(spec.ok());
  training_config config;
  config.finetune = finetune_kind::lora;
  config.lora_rank = 8;
  config.lora_targets = {"q_proj", "v_proj"};
  auto e = estimate_training_step(spec.value(), config, gpu_spec{});
  REQUIRE(e.ok());
  // 16 layers x (q: 8 x 2048 + 2048 x 8, v: 8 x 2048 + 512 x 8)
  CHECK(e.value().trainable_params == 16ULL * (8 * 2048 + 2048 * 8 + 8 * 2048 + 512 * 8));
  config.lora_targets = {"all-linear"};
  auto all = estimate_training_step(spec.value(), config, gpu_spec{});
  REQUIRE(all.ok());
  // q, k, v, o, gate, up, down of every layer.
  const std::uint64_t per_layer = 8 * (2048 + 2048) + 8 * (2048 + 512) * 2 + 8 * (2048 + 2048) +
                                  8 * (2048 + 8192) * 2 + 8 * (8192 + 2048);
  CHECK(all.value().trainable_params == 16 * per_layer);
}

TEST_CASE("the detailed estimator refuses what it does not model yet") {
  const auto presets = test::read_presets();
  auto moe = parse_model_config(presets.at("mistralai/Mixtral-8x7B-v0.1").at("config"), {}, "c");
  REQUIRE(moe.ok());
  auto e = estimate_training_step(moe.value(), training_config{}, gpu_spec{});
  REQUIRE_FALSE(e.ok());
  CHECK(e.failure().code == "mode.unsupported_model");
}

}  // namespace
}  // namespace gpumem
