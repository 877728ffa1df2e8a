// What an answer tells a person beyond the peak: the verdict against the headroom, the step's
// memory over time, how a plan candidate is estimated again, a fixed or solved micro-batch, the
// range of a number out of range and the LoRA targets that match nothing.

#include <doctest/doctest.h>

#include "gpumem/api/json_api.hpp"
#include "test_files.hpp"

namespace gpumem {
namespace {

using nlohmann::json;
using test::call;

// Llama-3.1-8B LoRA with checkpointing on one RTX 4090 (24 GiB), with extra request fields.
json lora_8b(const json& extra, const std::string& command = "estimate") {
  json request = {
      {"command", command},
      {"model", "meta-llama/Llama-3.1-8B"},
      {"cluster", {{"gpu", "rtx-4090"}}},
      {"workload",
       {{"finetune", "lora"}, {"seq_len", 1024}, {"grad_ckpt", true}, {"micro_batch", 1}}}};
  request.merge_patch(extra);
  return call(request);
}

TEST_CASE("the default headroom is 5 % of the GPU's memory in detailed mode, none in LLMem mode") {
  const json detailed = lora_8b(json::object());
  REQUIRE(detailed.at("ok") == true);
  const json& cluster = detailed.at("result").at("cluster");
  const auto memory = cluster.at("gpu").at("memory_bytes").get<std::uint64_t>();
  CHECK(cluster.at("headroom_bytes") ==
        static_cast<std::uint64_t>(0.05 * static_cast<double>(memory)));
  CHECK(cluster.at("usable_bytes") == memory - cluster.at("headroom_bytes").get<std::uint64_t>());
  const json llmem = call({{"command", "estimate"},
                           {"mode", "llmem"},
                           {"model", "facebook/opt-1.3b"},
                           {"cluster", {{"gpu", "v100-sxm2-16gb"}}},
                           {"workload", {{"micro_batch", 1}, {"seq_len", 512}}}});
  REQUIRE(llmem.at("ok") == true);
  CHECK(llmem.at("result").at("cluster").at("headroom_bytes") == 0);
  // Stated as a fraction or in bytes, not both; 0 is allowed.
  CHECK(lora_8b({{"cluster", {{"headroom", 0}}}}).at("result").at("cluster").at("headroom_bytes") ==
        0);
  const json both = lora_8b({{"cluster", {{"headroom", 0.1}, {"headroom_bytes", 1}}}});
  CHECK(both.at("error").at("field") == "cluster.headroom");
  const json over = lora_8b({{"cluster", {{"headroom", 0.9}}}});
  CHECK(over.at("error").at("field") == "cluster.headroom");
  CHECK(over.at("error").at("range").at("max") == 0.5);
}

TEST_CASE("three verdicts: fits with the headroom, tight within the card, does not fit") {
  const json base = lora_8b({{"cluster", {{"headroom", 0}}}});
  REQUIRE(base.at("ok") == true);
  const auto used = base.at("result").at("device_used_bytes").get<std::uint64_t>();
  const auto memory = base.at("result").at("cluster").at("gpu").at("memory_bytes").get<double>();
  CHECK(base.at("result").at("verdict") == "fits");
  // A headroom larger than what is left: the card still holds it, with less than the headroom.
  const double spare = (memory - static_cast<double>(used)) / memory;
  const json tight = lora_8b({{"cluster", {{"headroom", spare + 0.01}}}});
  CHECK(tight.at("result").at("verdict") == "tight");
  CHECK(tight.at("result").at("fits") == false);
  CHECK(tight.at("result").at("per_gpu")[0].at("verdict") == "tight");
  const json none = lora_8b({{"workload", {{"micro_batch", 64}}}});
  CHECK(none.at("result").at("verdict") == "does_not_fit");
}

TEST_CASE("an offload beside an unstated host budget is reported as not checked") {
  const json r =
      lora_8b({{"workload", {{"finetune", "full"}}},
               {"parallel", {{"method", "zero3"}, {"offload", {{"optimizer", "cpu"}}}}}});
  REQUIRE(r.at("ok") == true);
  const json& offload = r.at("result").at("offload");
  CHECK(offload.at("host_ram_checked") == false);
  CHECK(offload.at("host_bytes_per_node").get<std::uint64_t>() > 0);
  const json checked =
      lora_8b({{"workload", {{"finetune", "full"}}},
               {"cluster", {{"host_ram_bytes", 1ULL << 30}}},
               {"parallel", {{"method", "zero3"}, {"offload", {{"optimizer", "cpu"}}}}}});
  CHECK(checked.at("result").at("offload").at("host_ram_checked") == true);
  CHECK(checked.at("result").at("verdict") == "does_not_fit");
}

TEST_CASE("the step's memory over time: bounded, its phases named, the peak exact") {
  const json r = lora_8b({{"options", {{"timeline", 64}}}, {"workload", {{"micro_batch", 2}}}});
  REQUIRE(r.at("ok") == true);
  const json& result = r.at("result");
  const json& t = result.at("timeline");
  CHECK(t.at("samples").size() <= 64);
  CHECK(t.at("samples").size() >= 32);
  CHECK(t.at("events").get<std::uint64_t>() > 1000);
  const json& peak = t.at("samples").at(t.at("peak_sample").get<std::size_t>());
  CHECK(peak.at("allocated_bytes") == result.at("allocated_bytes"));
  CHECK(peak.at("phase") == result.at("peak_phase"));
  std::uint64_t highest = 0;
  std::uint64_t last_event = 0;
  for (const auto& s : t.at("samples")) {
    std::uint64_t sum = 0;
    for (const auto& [name, bytes] : s.at("components").items()) sum += bytes.get<std::uint64_t>();
    CHECK(sum == s.at("allocated_bytes"));  // the components are the allocated bytes
    CHECK(s.at("reserved_bytes") >= s.at("allocated_bytes"));
    CHECK(s.at("event").get<std::uint64_t>() >= last_event);
    last_event = s.at("event").get<std::uint64_t>();
    highest = std::max(highest, s.at("allocated_bytes").get<std::uint64_t>());
  }
  CHECK(highest == result.at("allocated_bytes"));
  CHECK(t.at("phases")[0] == "load");
  CHECK(result.at("device_used_bytes").get<std::uint64_t>() ==
        result.at("reserved_bytes").get<std::uint64_t>() +
            t.at("constant_bytes").get<std::uint64_t>());
  // Inference through transformers has one too; the range of samples is checked.
  const json serve =
      call({{"command", "estimate"},
            {"model", "meta-llama/Llama-3.1-8B"},
            {"cluster", {{"gpu", "l4"}}},
            {"options", {{"timeline", 32}}},
            {"workload", {{"phase", "inference"}, {"seq_len", 512}, {"new_tokens", 16}}}});
  REQUIRE(serve.at("ok") == true);
  CHECK(serve.at("result").at("timeline").at("samples").size() <= 32);
  CHECK(lora_8b({{"options", {{"timeline", 1}}}}).at("error").at("field") == "options.timeline");
  CHECK(lora_8b({{"options", {{"timeline", 16}}}}, "plan").at("error").at("field") ==
        "options.timeline");
}

TEST_CASE("every plan candidate names itself and the estimate that replays it") {
  const json plan =
      call({{"command", "plan"},
            {"model", "meta-llama/Llama-3.1-8B"},
            {"cluster", {{"gpu", "h100-sxm"}, {"gpus", 8}}},
            {"workload", {{"finetune", "full"}, {"seq_len", 4096}, {"grad_ckpt", true}}}});
  REQUIRE(plan.at("ok") == true);
  const json& candidates = plan.at("result").at("candidates");
  CHECK(plan.at("result").at("reason").get<std::string>().find("zero") == std::string::npos);
  int replayed = 0;
  for (const auto& c : candidates) {
    if (c.at("valid") == false) continue;
    CHECK(c.at("label").get<std::string>().find('_') == std::string::npos);
    const json again =
        call({{"command", "estimate"},
              {"model", "meta-llama/Llama-3.1-8B"},
              {"cluster", {{"gpu", "h100-sxm"}, {"gpus", 8}}},
              {"parallel", c.at("parallel")},
              {"workload",
               {{"finetune", "full"},
                {"seq_len", 4096},
                {"grad_ckpt", true},
                {"micro_batch",
                 std::max<std::uint64_t>(c.at("max_micro_batch").get<std::uint64_t>(), 1)}}}});
    REQUIRE(again.at("ok") == true);
    CHECK(again.at("result").at("peak_bytes") == c.at("peak_bytes"));
    CHECK(again.at("result").at("verdict") == c.at("verdict"));
    ++replayed;
  }
  CHECK(replayed >= 8);
}

TEST_CASE("a plan at a fixed micro-batch tries every method at that batch") {
  const json plan =
      call({{"command", "plan"},
            {"model", "meta-llama/Llama-3.1-8B"},
            {"cluster", {{"gpu", "a100-sxm4-80gb"}, {"gpus", 4}}},
            {"workload", {{"finetune", "lora"}, {"seq_len", 1024}, {"micro_batch", 3}}}});
  REQUIRE(plan.at("ok") == true);
  for (const auto& c : plan.at("result").at("candidates")) {
    if (c.at("fits") == true) CHECK(c.at("max_micro_batch") == 3);
  }
  REQUIRE(plan.at("result").at("choice").is_object());
  CHECK(plan.at("result").at("choice").at("max_micro_batch") == 3);
  // LLMem's Algorithm 1 searches the batch itself.
  const json llmem = call({{"command", "plan"},
                           {"mode", "llmem"},
                           {"model", "facebook/opt-1.3b"},
                           {"cluster", {{"gpu", "v100-sxm2-16gb"}, {"gpus", 2}}},
                           {"workload", {{"micro_batch", 2}}}});
  CHECK(llmem.at("error").at("field") == "workload.micro_batch");
}

TEST_CASE("solve max_batch for training: the largest micro-batch that leaves the headroom") {
  const json r = lora_8b({{"solve", "max_batch"}, {"workload", {{"micro_batch", nullptr}}}});
  REQUIRE(r.at("ok") == true);
  const auto best = r.at("result").at("solution").at("max_batch").get<std::uint64_t>();
  REQUIRE(best >= 1);
  CHECK(r.at("result").at("workload").at("micro_batch") == best);
  CHECK(r.at("result").at("verdict") == "fits");
  CHECK(r.at("result").at("solution").at("limited_by") == "memory");
  const json next = lora_8b({{"workload", {{"micro_batch", best + 1}}}});
  CHECK(next.at("result").at("verdict") != "fits");
  const json none = call({{"command", "estimate"},
                          {"model", "meta-llama/Llama-3.1-70B"},
                          {"cluster", {{"gpu", "rtx-4090"}}},
                          {"solve", "max_batch"},
                          {"workload", {{"finetune", "full"}}}});
  REQUIRE(none.at("ok") == true);
  CHECK(none.at("result").at("solution").at("max_batch") == 0);
  CHECK(none.at("result").at("solution").at("limited_by") == "nothing fits");
  CHECK(lora_8b({{"solve", "max_context"}}).at("error").at("field") == "solve");
}

TEST_CASE("vLLM: the card is its own; a short KV cache is the limit a candidate names") {
  json request = {{"command", "plan"},
                  {"model", "meta-llama/Llama-3.1-8B"},
                  {"cluster", {{"gpu", "l4"}, {"gpus", 2}}},
                  {"workload",
                   {{"phase", "inference"},
                    {"framework", "vllm"},
                    {"micro_batch", 64},
                    {"seq_len", 4000},
                    {"new_tokens", 96}}}};
  const json plan = call(request);
  REQUIRE(plan.at("ok") == true);
  const json& one = plan.at("result").at("candidates")[0];
  CHECK(one.at("gpus") == 1);
  CHECK(one.at("verdict") == "does_not_fit");
  CHECK(one.at("limited_by") == "kv_capacity");
  CHECK(plan.at("result").at("reason").get<std::string>().front() != 'n');  // a sentence
}

TEST_CASE("a number out of range carries its range; unmatched LoRA targets are listed") {
  const json r = call({{"command", "estimate"},
                       {"model", "gpt2"},
                       {"cluster", {{"gpu", {{"preset", "t4"}, {"memory_bytes", 5}}}}},
                       {"workload", {{"micro_batch", 1}}}});
  CHECK(r.at("error").at("field") == "cluster.gpu.memory_bytes");
  CHECK(r.at("error").at("range").at("min") == 256.0 * 1024 * 1024);
  const json typo = lora_8b({{"workload", {{"lora", {{"targets", {"q_proj", "foo_proj"}}}}}}});
  REQUIRE(typo.at("ok") == true);
  CHECK(typo.at("result").at("unmatched_targets") == json::array({"foo_proj"}));
  CHECK(lora_8b(json::object(), "plan").at("result").at("unmatched_targets") == json::array());
}

TEST_CASE("sentences print numbers grouped: a plan's tokens/s and GiB") {
  const json plan = call({{"command", "plan"},
                          {"model", "meta-llama/Llama-3.1-8B"},
                          {"cluster", {{"gpu", "h100-sxm"}, {"gpus", 8}}},
                          {"workload", {{"finetune", "lora"}, {"seq_len", 1024}}}});
  REQUIRE(plan.at("ok") == true);
  const std::string reason = plan.at("result").at("reason");
  CHECK(reason.find(" tokens/s") != std::string::npos);
  CHECK(reason.find(',') != std::string::npos);
}

}  // namespace
}  // namespace gpumem
