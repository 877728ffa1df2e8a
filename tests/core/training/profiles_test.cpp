// Framework and data-parallel profiles: names the API reads, and the facts the replay relies on
// being consistent with one another.

#include <doctest/doctest.h>

#include <set>
#include <string>

#include "parallel/data_parallel_method.hpp"
#include "training/framework.hpp"

namespace gpumem {
namespace {

constexpr framework_profile frameworks[] = {
    framework_profile::transformers, framework_profile::litgpt, framework_profile::torchtune,
    framework_profile::unsloth, framework_profile::torchtitan};
constexpr data_parallel methods[] = {data_parallel::none,
                                     data_parallel::ddp,
                                     data_parallel::zero1,
                                     data_parallel::zero2,
                                     data_parallel::zero3,
                                     data_parallel::gemini,
                                     data_parallel::fsdp_full_shard,
                                     data_parallel::fsdp_shard_grad_op};

TEST_CASE("every framework profile is named once and read back by its name") {
  std::set<std::string> names;
  for (const auto framework : frameworks) {
    const auto& traits = framework_of(framework);
    REQUIRE(traits.name != nullptr);
    CHECK(names.insert(traits.name).second);
    const auto back = framework_named(traits.name);
    REQUIRE(back.has_value());
    CHECK(*back == framework);
  }
  CHECK_FALSE(framework_named("megatron").has_value());
  CHECK_FALSE(framework_named("").has_value());
}

TEST_CASE("framework facts: one PEFT framework, litgpt's LoRA dropout, the loss paths") {
  int peft = 0;
  std::set<int> losses;
  for (const auto framework : frameworks) {
    peft += framework_of(framework).peft ? 1 : 0;
    losses.insert(static_cast<int>(framework_of(framework).loss));
  }
  CHECK(peft == 1);
  CHECK(losses.size() == 4);  // transformers, litgpt, torchtune and unsloth each their own
  training_config config;
  config.framework = framework_profile::litgpt;
  CHECK(lora_dropout_of(config) == doctest::Approx(0.05));
  config.lora_dropout = 0.1;
  CHECK(lora_dropout_of(config) == doctest::Approx(0.1));
  config.framework = framework_profile::transformers;
  config.lora_dropout.reset();
  CHECK(lora_dropout_of(config) == 0.0);
  // Only profiles with rules of their own refuse combinations beyond the common checks.
  CHECK(static_cast<bool>(framework_of(framework_profile::unsloth).refusals));
  CHECK_FALSE(static_cast<bool>(framework_of(framework_profile::transformers).refusals));
}

TEST_CASE("every data-parallel method is named once and read back by its name") {
  std::set<std::string> names;
  for (const auto dp : methods) {
    const auto& traits = data_parallel_of(dp);
    REQUIRE(traits.name != nullptr);
    CHECK(names.insert(traits.name).second);
    const auto back = data_parallel_named(traits.name);
    REQUIRE(back.has_value());
    CHECK(*back == dp);
  }
  CHECK_FALSE(data_parallel_named("zero4").has_value());
}

TEST_CASE("data-parallel facts: ZeRO's stages nest, engines and pipelines as documented") {
  for (const auto dp : methods) {
    const auto& t = data_parallel_of(dp);
    INFO(t.name);
    // A method that shards parameters shards their gradients, and those the optimizer's states.
    if (t.shards_params) CHECK(t.shards_grads);
    if (t.shards_grads) CHECK(t.shards_states);
    CHECK(shards_parameters(dp) == t.shards_params);
    // DeepSpeed's and Colossal-AI's engines: ZeRO stages and Gemini.
    const bool engine = dp == data_parallel::zero1 || dp == data_parallel::zero2 ||
                        dp == data_parallel::zero3 || dp == data_parallel::gemini;
    CHECK(t.engine == engine);
    // Pipelines replicate their stages over DDP or ZeRO-1 only.
    const bool pipeline =
        dp == data_parallel::none || dp == data_parallel::ddp || dp == data_parallel::zero1;
    CHECK(t.beside_pipeline == pipeline);
    // Only a sharded method gathers, and only FSDP keeps unsharded gradients under no_sync.
    if (t.gathers_modules || t.gathers_in_compute_dtype) CHECK(t.shards_params);
    if (t.fsdp) CHECK(t.gathers_in_compute_dtype);
  }
}

}  // namespace
}  // namespace gpumem
