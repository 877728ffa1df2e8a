// The step-time model by hand, and the planner (LLMem's Algorithm 1) on every GPU preset.

#include "gpumem/plan/planner.hpp"

#include <doctest/doctest.h>

#include "gpumem/model/config_parser.hpp"
#include "gpumem/plan/step_time.hpp"
#include "test_files.hpp"

namespace gpumem {
namespace {

using nlohmann::json;

struct tiny {
  model_spec spec;
  param_count counts;
  cluster_spec cluster;
};

// hidden 64, 2 layers, 4 heads of 16 (2 KV heads), gated MLP 128, vocab 100, untied.
tiny tiny_model(std::uint64_t gpus) {
  const json config = {{"model_type", "llama"},    {"hidden_size", 64},
                       {"intermediate_size", 128}, {"num_hidden_layers", 2},
                       {"num_attention_heads", 4}, {"num_key_value_heads", 2},
                       {"vocab_size", 100},        {"tie_word_embeddings", false}};
  tiny t;
  t.spec = parse_model_config(config, {}, "c").value();
  t.counts = count_params(t.spec).value();
  t.cluster.gpu.fp16_dense_flops = 1e12;
  t.cluster.gpu.link_bandwidth_bytes_per_s = 1e9;
  t.cluster.gpus = gpus;
  return t;
}

TEST_CASE("step time of an encoder-decoder: each stack over its own tokens, by hand") {
  // One T5 block per stack: d_model 64, 4 heads of 16, ReLU MLP 128, vocab 100, untied.
  const json config = {
      {"model_type", "t5"}, {"d_model", 64},   {"d_kv", 16},        {"num_heads", 4},
      {"d_ff", 128},        {"num_layers", 1}, {"vocab_size", 100}, {"tie_word_embeddings", false}};
  tiny t;
  t.spec = parse_model_config(config, {}, "c").value();
  t.counts = count_params(t.spec).value();
  t.cluster.gpu.fp16_dense_flops = 1e12;
  t.cluster.gpus = 1;
  step_time_options options;
  options.recompute = 0.0;
  options.target_len = 4;
  // 8 encoder tokens: 2 x (q, k, v, o, wi, wo: 32768) each, attention 2 x 8 x 4 x 32 each; 4
  // decoder tokens: 2 x (self, cross, MLP: 49152) and the head's 6400 each, attention 2 x 4 x
  // 4 x 32 x (4 + 8) each. Per encoder token, forward and backward (3 forwards).
  const double forward =
      (8.0 * (2 * 32768 + 2 * 8 * 128) + 4.0 * (2 * (49152 + 6400) + 2 * 128 * 12)) / 8;
  auto s = estimate_step_time(t.spec, t.counts, t.cluster, {parallel_method::single, 1, false}, 2,
                              8, options);
  CHECK(s.flops_per_token == doctest::Approx(3 * forward));
}

TEST_CASE("a sliding window under SDPA with transformers' mask computes every score") {
  // The tiny Llama with a 64-token window at 128 tokens: a fused causal kernel attends over the
  // window's 64 keys and skips half; SDPA with the mask transformers passes once the keys reach
  // the window computes all 128 for every query.
  tiny t = tiny_model(1);
  for (auto& layer : t.spec.layers) layer.sliding_window_tokens = 64;
  step_time_options options;
  options.recompute = 0.0;
  options.causal_kernel = true;
  const double matmul = 2.0 * 80448;
  const double per_key = 2.0 * 2 * 4 * (16 + 16);  // 2 layers, 4 heads of (q.k, p.v) 16 each
  auto run = [&] {
    return estimate_step_time(t.spec, t.counts, t.cluster, {parallel_method::single, 1, false}, 1,
                              128, options)
        .flops_per_token;
  };
  CHECK(run() == doctest::Approx(3 * (matmul + per_key * 64 / 2)));
  options.sdpa_window_masks = true;
  CHECK(run() == doctest::Approx(3 * (matmul + per_key * 128)));
}

TEST_CASE("step time of a tiny model, by hand") {
  tiny t = tiny_model(2);
  REQUIRE(t.counts.total == 86848);
  step_time_options options;
  options.mfu = 0.5;
  // Forward per token: 2 x 80448 (parameters outside the embedding table) + 2 layers x
  // 2 x 128 x 4 heads x (16 + 16) = 226432; with recomputation 4 forwards.
  const double flops_per_token = 4.0 * 226432;
  const double tokens = 2.0 * 128;
  const double compute = tokens * flops_per_token / 0.5e12;
  // The host launches 30 kernels a block and forward (2 blocks, 4 forwards' worth with the
  // backward and the recomputation) at 40 us each: 9.6 ms, longer than the GPU's compute.
  const double launches = 2 * 30 * 4 * 40e-6;
  // ZeRO-3 / FSDP: one gather per block and pass (forward, recomputation, backward) at 25 us.
  const double gathers = 2 * 1 * 3 * 25e-6;

  SUBCASE("cdp: the gradient all-reduce hides behind backward") {
    auto s = estimate_step_time(t.spec, t.counts, t.cluster, {parallel_method::cdp, 1, false}, 2,
                                128, options);
    CHECK(s.flops_per_token == doctest::Approx(flops_per_token));
    CHECK(s.compute_s == doctest::Approx(compute));
    CHECK(s.communication_s == doctest::Approx(2 * 86848 / 1e9));  // 2 (N-1)/N x 2 bytes x P
    CHECK(s.exposed_communication_s == doctest::Approx(0));
    CHECK(s.dispatch_s == doctest::Approx(launches - compute));
    CHECK(s.optimizer_s == 0);  // (no memory bandwidth given)
    CHECK(s.tokens_per_s == doctest::Approx(2 * tokens / launches));
    CHECK(s.tokens_per_s_per_gpu == doctest::Approx(tokens / launches));
  }
  SUBCASE("adp: 1.5x the volume, hidden behind compute") {
    auto s = estimate_step_time(t.spec, t.counts, t.cluster, {parallel_method::adp, 1, false}, 2,
                                128, options);
    CHECK(s.communication_s == doctest::Approx(3 * 0.5 * 2 * 86848 / 1e9));
    CHECK(s.step_s == doctest::Approx(launches + gathers));
  }
  SUBCASE("gradient accumulation: 4 micro-batches' compute and launches, DDP's all-reduce once") {
    options.grad_accumulation = 4;
    t.cluster.gpu.link_bandwidth_bytes_per_s = 1e6;  // slow enough to show the all-reduce
    auto s = estimate_step_time(t.spec, t.counts, t.cluster, {parallel_method::cdp, 1, false}, 2,
                                128, options);
    const double all_reduce = 2 * 86848 / 1e6;
    // Behind the last micro-batch's backward only (2 of its 4 forwards' worth): no_sync before.
    const double hidden = compute * 2 / 4;
    CHECK(s.compute_s == doctest::Approx(4 * compute));
    CHECK(s.communication_s == doctest::Approx(all_reduce));
    CHECK(s.exposed_communication_s == doctest::Approx(all_reduce - hidden));
    CHECK(s.dispatch_s == doctest::Approx(4 * launches - 4 * compute));
    CHECK(s.tokens_per_s == doctest::Approx(2 * 4 * tokens / s.step_s));
  }
  SUBCASE("eager attention moves its score matrix through memory several times a pass") {
    t.cluster.gpu.memory_bandwidth_bytes_per_s = 1e9;
    auto s = estimate_step_time(t.spec, t.counts, t.cluster, {parallel_method::cdp, 1, false}, 2,
                                128, options);
    // 2 layers x 4 heads x 128 x 128 scores a sequence, 2 sequences; 2 + 2 + 4 + 2 bytes written
    // (+ 3 with dropout) and as many read a forward; two forwards and a backward of twice that.
    const double written = 10.0 + (t.spec.attention_dropout > 0 ? 3.0 : 0.0);
    const double forward_bytes = 2 * written * (2 * 4 * 128.0 * 128) * 2;
    CHECK(s.attention_memory_s == doctest::Approx(4 * forward_bytes / 0.85e9));
    CHECK(s.compute_s == doctest::Approx(compute + s.attention_memory_s + s.elementwise_s));
    options.causal_kernel = true;  // a fused kernel keeps no scores
    CHECK(estimate_step_time(t.spec, t.counts, t.cluster, {parallel_method::cdp, 1, false}, 2, 128,
                             options)
              .attention_memory_s == 0);
  }
  SUBCASE("a 4-bit base is dequantised before each use: forward, recomputation and backward") {
    t.cluster.gpu.memory_bandwidth_bytes_per_s = 1e9;
    options.causal_kernel = true;  // (no eager attention traffic)
    options.four_bit_params = 80000;
    auto s = estimate_step_time(t.spec, t.counts, t.cluster, {parallel_method::cdp, 1, false}, 2,
                                128, options);
    // 0.5625 bytes read and 2 written a weight, three times, at 85 % of 1 GB/s.
    CHECK(s.dequantize_s == doctest::Approx(80000 * 2.5625 * 3 / 0.85e9));
    options.four_bit_params = 0;
    auto plain = estimate_step_time(t.spec, t.counts, t.cluster, {parallel_method::cdp, 1, false},
                                    2, 128, options);
    CHECK(s.compute_s == doctest::Approx(plain.compute_s + s.dequantize_s));
  }
  SUBCASE("an optimizer moves its weights, gradients and states: AdamW, 8-bit, pure bf16, SGD") {
    CHECK(optimizer_bytes_per_param(4, 4, 2, false) == 28);  // fused AdamW beside fp32 weights
    CHECK(optimizer_bytes_per_param(4, 1, 2, false) == 16);  // bitsandbytes' 8-bit AdamW
    CHECK(optimizer_bytes_per_param(2, 2, 2, false) == 14);  // pure bf16
    CHECK(optimizer_bytes_per_param(4, 4, 0, false) == 12);  // SGD (and Adafactor)
    CHECK(optimizer_bytes_per_param(4, 4, 1, false) == 20);  // SGD with momentum, one pass
    // torch.optim's foreach kernels: 6 weight- and 14 state-sized passes for AdamW, 3 and 5 for
    // SGD with momentum; plain SGD is one kernel either way.
    CHECK(optimizer_bytes_per_param(4, 4, 2, true) == 80);
    CHECK(optimizer_bytes_per_param(2, 2, 2, true) == 40);
    CHECK(optimizer_bytes_per_param(4, 4, 1, true) == 32);
    CHECK(optimizer_bytes_per_param(4, 4, 0, true) == 12);
    // transformers' Adafactor: 21 fp32 passes; a bf16 weight and gradient upcast and copied back.
    CHECK(adafactor_bytes_per_param(4) == 84);
    CHECK(adafactor_bytes_per_param(2) == 102);
    t.cluster.gpu.memory_bandwidth_bytes_per_s = 1e9;
    options.optimizer_bytes_per_param = 16;
    CHECK(estimate_step_time(t.spec, t.counts, t.cluster, {parallel_method::cdp, 1, false}, 2, 128,
                             options)
              .optimizer_s == doctest::Approx(86848 * 16 / 0.85e9));
  }
  SUBCASE("the optimizer step reads and writes 28 bytes a trained parameter, sharded or not") {
    t.cluster.gpu.memory_bandwidth_bytes_per_s = 1e9;
    options.causal_kernel = true;  // (no eager attention traffic)
    auto ddp = estimate_step_time(t.spec, t.counts, t.cluster, {parallel_method::cdp, 1, false}, 2,
                                  128, options);
    CHECK(ddp.optimizer_s == doctest::Approx(86848 * 28 / 0.85e9));
    options.optimizer_sharded = true;
    auto zero = estimate_step_time(t.spec, t.counts, t.cluster, {parallel_method::cdp, 1, false}, 2,
                                   128, options);
    CHECK(zero.optimizer_s == doctest::Approx(86848 * 28 / 2 / 0.85e9));
    CHECK(zero.step_s == doctest::Approx(std::max(launches, zero.compute_s) + zero.optimizer_s));
    options.weight_gradients = false;  // adapters: a negligible share, left out
    CHECK(estimate_step_time(t.spec, t.counts, t.cluster, {parallel_method::cdp, 1, false}, 2, 128,
                             options)
              .optimizer_s == 0);
  }
  SUBCASE("tp: every Linear's all-reduce and gather on the critical path") {
    auto s = estimate_step_time(t.spec, t.counts, t.cluster, {parallel_method::tp, 2, false}, 2,
                                128, options);
    // Per layer: outputs 64+32+32+64+128+128+64 = 512, inputs 6 x 64 + 128 = 512; two forwards
    // all-reduce 2 x tokens x out bytes each, backward gathers tokens x in.
    const double bytes = 2 * tokens * (4.0 * 512 + 512);
    CHECK(s.communication_s == doctest::Approx(bytes / 1e9));
    CHECK(s.step_s == doctest::Approx(launches + bytes / 1e9));
    CHECK(s.tokens_per_s == doctest::Approx(tokens / (launches + bytes / 1e9)));
  }
  SUBCASE("adp with context parallelism 2: half the tokens a rank, the ring beside attention") {
    parallel_config ring{parallel_method::adp, 1, false};
    ring.cp = 2;
    auto s = estimate_step_time(t.spec, t.counts, t.cluster, ring, 2, 128, options);
    const double rank_compute = compute / 2;
    // Each layer passes a rank's K/V (128 tokens x 2 KV heads x (16 + 16) x 2 bytes) once in
    // each of the two forwards and twice in backward (K/V and dK/dV); attention's share of the
    // compute (2 x 128 x 4 x 32 of 226432 forward FLOPs a token) hides part of it.
    const double ring_s = 2 * 1 * (128.0 * 64 * 2) * 4 / 1e9;
    const double attention_s = rank_compute * 65536 / 226432;
    const double dp_s = 3 * 0.5 * 2 * 86848 / 1e9;
    CHECK(s.compute_s == doctest::Approx(rank_compute));
    CHECK(s.communication_s == doctest::Approx(dp_s + ring_s));
    CHECK(s.exposed_communication_s ==
          doctest::Approx(dp_s - rank_compute + ring_s - attention_s + gathers));
    CHECK(s.tokens_per_s == doctest::Approx(2 * 128.0 / s.step_s));
  }
  SUBCASE("adapters: only the trained parameters' gradients are reduced and stepped") {
    t.cluster.gpu.memory_bandwidth_bytes_per_s = 1e9;
    options.causal_kernel = true;  // (no eager attention traffic)
    options.weight_gradients = false;
    options.trainable_params = 1000;
    options.gradient_bytes = 4;  // fp32 adapters under autocast
    auto ddp = estimate_step_time(t.spec, t.counts, t.cluster, {parallel_method::cdp, 1, false}, 2,
                                  128, options);
    CHECK(ddp.communication_s == doctest::Approx(2 * 0.5 * 4 * 1000 / 1e9));
    CHECK(ddp.optimizer_s == doctest::Approx(1000 * 28 / 1e9));
    // ZeRO-3 / FSDP still gather the frozen base (16-bit) twice; they reduce-scatter adapters.
    auto sharded = estimate_step_time(t.spec, t.counts, t.cluster, {parallel_method::adp, 1, false},
                                      2, 128, options);
    CHECK(sharded.communication_s == doctest::Approx((2 * 0.5 * 2 * 86848 + 0.5 * 4 * 1000) / 1e9));
  }
  SUBCASE("fp32 compute runs its matmuls on the CUDA cores, not the tensor cores") {
    t.cluster.gpu.fp32_flops = 0.25e12;
    options.fp32 = true;
    auto s = estimate_step_time(t.spec, t.counts, t.cluster, {parallel_method::cdp, 1, false}, 2,
                                128, options);
    CHECK(s.compute_s == doctest::Approx(4 * compute));  // 1e12 / 0.25e12
    t.cluster.gpu.fp32_flops = 0;  // a custom GPU that states none: an eighth of fp16's figure
    CHECK(matmul_flops(t.cluster.gpu, false, true) == doctest::Approx(1e12 / 8));
    t.cluster.gpu.bf16_dense_flops = 2e12;
    CHECK(matmul_flops(t.cluster.gpu, true, false) == doctest::Approx(2e12));
    t.cluster.gpu.bf16_dense_flops = 0;  // no bf16 tensor cores: fp16's figure
    CHECK(matmul_flops(t.cluster.gpu, true, false) == doctest::Approx(1e12));
  }
  SUBCASE("across nodes, a collective's rings use every GPU's network adapter") {
    tiny wide = tiny_model(16);
    wide.cluster.gpus_per_node = 8;
    wide.cluster.gpu.link_bandwidth_bytes_per_s = 300e9;
    wide.cluster.inter_node_bandwidth_bytes_per_s = 1e6;
    auto s = estimate_step_time(wide.spec, wide.counts, wide.cluster,
                                {parallel_method::cdp, 1, false}, 2, 128, options);
    // 8 adapters of 1 MB/s a node carry the all-reduce: 2 x 15/16 x 2 bytes x P over 8 MB/s.
    CHECK(s.communication_s == doctest::Approx(2.0 * 15 / 16 * 2 * 86848 / 8e6));
    wide.cluster.inter_node_bandwidth_bytes_per_s = 100e9;  // capped by the node's NVLink
    s = estimate_step_time(wide.spec, wide.counts, wide.cluster, {parallel_method::cdp, 1, false},
                           2, 128, options);
    CHECK(s.communication_s == doctest::Approx(2.0 * 15 / 16 * 2 * 86848 / 300e9));
  }
  SUBCASE("no recomputation: three forwards' worth") {
    options.recompute = 0.0;
    auto s = estimate_step_time(t.spec, t.counts, t.cluster, {parallel_method::cdp, 1, false}, 2,
                                128, options);
    CHECK(s.flops_per_token == doctest::Approx(3.0 * 226432));
  }
  SUBCASE("torchtitan's per-op checkpoint recomputes k, o and up") {
    // 2 layers x 2 x 64 x (32 + 64 + 128) FLOPs a token of the 226432 a forward.
    options.recompute = per_op_recompute_share(t.spec, t.counts, 128, false);
    CHECK(options.recompute == doctest::Approx(57344.0 / 226432));
    auto s = estimate_step_time(t.spec, t.counts, t.cluster, {parallel_method::cdp, 1, false}, 2,
                                128, options);
    CHECK(s.flops_per_token == doctest::Approx(3.0 * 226432 + 57344));
  }
}

TEST_CASE("candidate methods") {
  auto names = [](std::uint64_t gpus) {
    std::string out;
    for (const auto& c : candidate_methods(gpus))
      out += std::string(method_name(c.method)) + std::to_string(c.tp) + " ";
    return out;
  };
  CHECK(names(1) == "single1 ");
  CHECK(names(2) == "cdp1 adp1 tp2 ");
  CHECK(names(6) == "cdp1 adp1 tp6 dp_tp2 dp_tp3 ");
  CHECK(names(8) == "cdp1 adp1 tp8 dp_tp2 dp_tp4 ");
}

json plan_request(const std::string& model, const std::string& gpu, std::uint64_t gpus) {
  return {{"api_version", 1},
          {"command", "plan"},
          {"mode", "llmem"},
          {"model", model},
          {"cluster", {{"gpu", gpu}, {"gpus", gpus}}},
          {"workload", {{"seq_len", 512}}}};
}

TEST_CASE("plan answers for 1-8 GPUs on every GPU preset, and chooses the fastest that fits") {
  const json gpus = test::call({{"command", "gpus"}}).at("result").at("gpus");
  int plans = 0;
  for (const auto& gpu : gpus) {
    for (std::uint64_t n = 1; n <= 8; ++n) {
      const json r = test::call(plan_request("facebook/opt-1.3b", gpu.at("id"), n));
      CAPTURE(gpu.at("id"));
      CAPTURE(n);
      REQUIRE(r.at("ok") == true);
      const json& plan = r.at("result");
      CHECK(plan.at("candidates").size() == candidate_methods(n).size());
      CHECK_FALSE(plan.at("reason").get<std::string>().empty());
      if (plan.at("choice").is_null()) {
        CHECK(plan.at("offload").is_object());
        continue;
      }
      const json& choice = plan.at("choice");
      CHECK(choice.at("max_micro_batch").get<std::uint64_t>() > 0);
      for (const auto& c : plan.at("candidates")) {
        // Speeds within 1 % tie (broken by the more sequences per GPU).
        if (c.at("fits") == true)
          CHECK(c.at("tokens_per_s").get<double>() <=
                1.01 * choice.at("tokens_per_s").get<double>());
        if (c.at("fits") == true)
          CHECK(c.at("peak_bytes").get<std::uint64_t>() <=
                gpu.at("memory_bytes").get<std::uint64_t>());
      }
      ++plans;
    }
  }
  CHECK(plans > 100);
}

TEST_CASE("when nothing fits, the plan names the offload that would") {
  const json r = test::call(plan_request("facebook/opt-6.7b", "t4", 1));
  REQUIRE(r.at("ok") == true);
  const json& plan = r.at("result");
  CHECK(plan.at("choice").is_null());
  const json& offload = plan.at("offload");
  REQUIRE(offload.is_object());
  const json& single = plan.at("candidates")[0].at("per_gpu")[0];
  CHECK(offload.at("gpu_peak_bytes").get<std::uint64_t>() +
            offload.at("host_bytes_per_gpu").get<std::uint64_t>() ==
        single.at("peak_bytes").get<std::uint64_t>());
  // The optimizer states alone are 2 x R(4n) per tensor: at least 8 bytes per parameter.
  CHECK(offload.at("host_bytes_per_gpu").get<std::uint64_t>() > 8ULL * 6000000000ULL);
  CHECK(plan.at("reason").get<std::string>().find("Nothing fits at micro-batch 1") == 0);
}

TEST_CASE("a plan's chosen batch is the estimate's largest fitting batch") {
  const json r = test::call(plan_request("facebook/opt-350m", "rtx-2060", 1));
  REQUIRE(r.at("ok") == true);
  const json& choice = r.at("result").at("choice");
  REQUIRE(choice.is_object());
  const std::uint64_t batch = choice.at("max_micro_batch");
  auto fits = [](std::uint64_t b) {
    json e = {{"command", "estimate"},
              {"mode", "llmem"},
              {"model", "facebook/opt-350m"},
              {"cluster", {{"gpu", "rtx-2060"}}},
              {"workload", {{"micro_batch", b}, {"seq_len", 512}}}};
    return test::call(e).at("result").at("fits").get<bool>();
  };
  CHECK(fits(batch));
  CHECK_FALSE(fits(batch + 1));
}

TEST_CASE("detailed plans: data- and tensor-parallel candidates, each at its largest batch") {
  json request = {{"command", "plan"},
                  {"model", "meta-llama/Llama-3.2-1B"},
                  {"cluster", {{"gpu", "a100-sxm4-40gb"}, {"gpus", 4}}},
                  {"workload", {{"seq_len", 1024}}}};
  const json r = test::call(request);
  REQUIRE(r.at("ok") == true);
  const json& plan = r.at("result");
  CHECK(plan.at("mode") == "detailed");
  std::string names;
  for (const auto& c : plan.at("candidates")) names += c.at("method").get<std::string>() + " ";
  // The last: ZeRO-3 over 2 groups of 2 tensor-parallel GPUs (DP+TP); no pipeline under
  // transformers, which says so.
  CHECK(names == "ddp zero1 zero2 zero3 fsdp_full_shard fsdp_shard_grad_op tensor_parallel zero3 ");
  REQUIRE(plan.at("not_offered").size() == 1);
  CHECK(plan.at("not_offered")[0].get<std::string>().rfind("pipeline parallelism: not offered",
                                                           0) == 0);
  CHECK(plan.at("candidates").back().at("tp") == 2);
  REQUIRE(plan.at("choice").is_object());
  for (const auto& c : plan.at("candidates")) {
    if (c.at("fits") != true) continue;
    const std::uint64_t batch = c.at("max_micro_batch");
    auto device_used = [&](std::uint64_t b) {
      json e = {{"command", "estimate"},
                {"model", "meta-llama/Llama-3.2-1B"},
                {"cluster", {{"gpu", "a100-sxm4-40gb"}, {"gpus", 4}}},
                {"parallel", json{{"method", c.at("method")}}},
                {"workload", {{"micro_batch", b}, {"seq_len", 1024}}}};
      if (c.at("sequence_parallel") == true) e["parallel"]["sequence_parallel"] = true;
      if (c.at("tp") > 1 && c.at("method") != "tensor_parallel") e["parallel"]["tp"] = c.at("tp");
      if (c.at("method") == "pipeline") e["parallel"]["micro_batches"] = 16;  // 4 per stage
      return test::call(e).at("result");
    };
    CAPTURE(c.at("method"));
    CAPTURE(c.at("tp"));
    CHECK(device_used(batch).at("fits") == true);
    CHECK(device_used(batch + 1).at("fits") == false);
    CHECK(device_used(batch).at("peak_bytes") == c.at("peak_bytes"));
  }
  // More sharding never needs more memory per GPU at the same batch.
  const auto peak = [&](const char* method) {
    for (const auto& c : plan.at("candidates")) {
      if (c.at("method") == method) return c.at("max_micro_batch").get<std::uint64_t>();
    }
    return std::uint64_t{0};
  };
  CHECK(peak("zero3") >= peak("zero2"));
  CHECK(peak("zero2") >= peak("zero1"));
  CHECK(peak("zero1") >= peak("ddp"));
}

}  // namespace
}  // namespace gpumem

namespace gpumem {
namespace {

TEST_CASE("detailed plans skip tensor parallelism where it cannot run, and say why") {
  // Llama-3.2-1B has 8 key/value heads: no 16-way TP.
  json request = {{"command", "plan"},
                  {"model", "meta-llama/Llama-3.2-1B"},
                  {"cluster", {{"gpu", "a100-sxm4-80gb"}, {"gpus", 16}}},
                  {"workload", {{"seq_len", 1024}}}};
  json r = test::call(request);
  REQUIRE(r.at("ok") == true);
  auto tensor_parallel = [](const json& result) {
    for (const auto& c : result.at("candidates")) {
      if (c.at("method") == "tensor_parallel") return c;
    }
    return json();
  };
  const json tp = tensor_parallel(r.at("result"));
  CHECK(tp.at("method") == "tensor_parallel");
  CHECK(tp.at("valid") == false);
  CHECK(tp.at("note").get<std::string>().find("key/value heads (8)") != std::string::npos);
  CHECK(r.at("result").at("choice").at("method") != "tensor_parallel");
  // Across nodes: TP's per-block all-reduces would cross the network.
  request["cluster"] = {{"gpu", "a100-sxm4-80gb"}, {"gpus", 8}, {"gpus_per_node", 4}};
  r = test::call(request);
  REQUIRE(r.at("ok") == true);
  CHECK(tensor_parallel(r.at("result")).at("valid") == false);
}

}  // namespace
}  // namespace gpumem

namespace gpumem {
namespace {

TEST_CASE("detailed plans split sequences that fit one at a time at best over context ranks") {
  // 65,536 tokens of Llama-3.2-1B on 4 A100 40GB: only tensor parallelism fits, one sequence.
  json request = {{"command", "plan"},
                  {"model", "meta-llama/Llama-3.2-1B"},
                  {"cluster", {{"gpu", "a100-sxm4-40gb"}, {"gpus", 4}}},
                  {"workload", {{"seq_len", 65536}, {"grad_ckpt", true}}}};
  const json r = test::call(request);
  REQUIRE(r.at("ok") == true);
  const json& plan = r.at("result");
  std::string context;
  for (const auto& c : plan.at("candidates")) {
    if (c.at("cp") == 1) continue;
    context += c.at("method").get<std::string>() + " cp " + std::to_string(c.at("cp").get<int>()) +
               (c.at("fits") == true ? " fits; " : "; ");
    if (c.at("fits") != true) continue;
    // The candidate's figure is the estimate's for the same layout.
    json e = {
        {"command", "estimate"},
        {"model", "meta-llama/Llama-3.2-1B"},
        {"cluster", {{"gpu", "a100-sxm4-40gb"}, {"gpus", 4}}},
        {"parallel", {{"method", c.at("method")}, {"cp", c.at("cp")}}},
        {"workload",
         {{"micro_batch", c.at("max_micro_batch")}, {"seq_len", 65536}, {"grad_ckpt", true}}}};
    CHECK(test::call(e).at("result").at("peak_bytes") == c.at("peak_bytes"));
  }
  CHECK(context == "fsdp_full_shard cp 2; fsdp_full_shard cp 4 fits; ");
  // Context parallelism 4 and tensor parallelism 4 both run one sequence a group of 4 GPUs
  // within the model's 10 % of each other: the earlier candidate, tensor parallelism, is chosen.
  CHECK(plan.at("choice").at("method") == "tensor_parallel");
  CHECK(plan.at("choice").at("reason").get<std::string>().find(
            "micro-batch 1 per group of 4 GPUs") != std::string::npos);
  CHECK(plan.at("choice").at("reason").get<std::string>().find("within 10 %") != std::string::npos);
  // At 16,384 tokens one sequence fits per GPU without it: context parallelism then ties at
  // best (the same sequences per GPU at the same speed) and the plain method stays the choice.
  request["workload"]["seq_len"] = 16384;
  const json tie = test::call(request);
  CHECK(tie.at("result").at("choice").at("cp") == 1);
  // Shorter sequences that fit several at a time leave context parallelism out.
  request["workload"]["seq_len"] = 1024;
  const json short_plan = test::call(request);
  for (const auto& c : short_plan.at("result").at("candidates")) CHECK(c.at("cp") == 1);
  // torchtitan splits sequences over context ranks too (its ring attention) and pairs tensor
  // parallelism with FSDP (its 2D parallelism); ZeRO is not its.
  request["workload"] = {
      {"seq_len", 65536}, {"grad_ckpt", true}, {"finetune", "full"}, {"framework", "torchtitan"}};
  const json titan = test::call(request);
  REQUIRE(titan.at("ok") == true);
  bool split = false;
  bool two_d = false;
  for (const auto& c : titan.at("result").at("candidates")) {
    split = split || (c.at("cp") != 1 && c.at("fits") == true);
    if (c.at("method") == "zero3") CHECK(c.at("fits") == false);
    two_d = two_d || (c.at("tp") != 1 && c.at("method") == "fsdp_full_shard");
  }
  CHECK(split);
  CHECK(two_d);
}

}  // namespace
}  // namespace gpumem

namespace gpumem {
namespace {

json lora_plan(json workload, std::uint64_t gpus, const char* gpu = "rtx-4090") {
  workload["finetune"] = "lora";
  return test::call({{"command", "plan"},
                     {"model", "meta-llama/Llama-3.1-8B"},
                     {"cluster", {{"gpu", gpu}, {"gpus", gpus}}},
                     {"workload", workload}});
}

TEST_CASE("a plan chooses gradient checkpointing where the request leaves it open") {
  // 8B LoRA at 2,048 tokens on a 24 GB card fits only with every block checkpointed.
  const json open = lora_plan({{"seq_len", 2048}}, 1);
  REQUIRE(open.at("ok") == true);
  const json& choice = open.at("result").at("choice");
  REQUIRE(choice.is_object());
  CHECK(choice.at("grad_ckpt") == true);
  const json& chosen = open.at("result").at("candidates")[choice.at("candidate").get<int>()];
  CHECK(chosen.at("workload").at("grad_ckpt") == true);
  CHECK(chosen.at("label").get<std::string>().find("gradient checkpointing") != std::string::npos);
  // Fixed off, it is not the plan's to change: nothing fits on the card alone, and no candidate
  // carries a choice.
  const json fixed = lora_plan({{"seq_len", 2048}, {"grad_ckpt", false}}, 1);
  REQUIRE(fixed.at("ok") == true);
  for (const auto& c : fixed.at("result").at("candidates")) {
    CHECK_FALSE(c.contains("workload"));
    if (!c.contains("offload")) CHECK(c.at("fits") == false);
  }
  // An estimate of the chosen candidate with its workload gives the plan's peak.
  const json estimate = test::call({{"command", "estimate"},
                                    {"model", "meta-llama/Llama-3.1-8B"},
                                    {"cluster", {{"gpu", "rtx-4090"}}},
                                    {"workload",
                                     {{"finetune", "lora"},
                                      {"seq_len", 2048},
                                      {"grad_ckpt", true},
                                      {"micro_batch", chosen.at("max_micro_batch")}}}});
  CHECK(estimate.at("result").at("per_gpu")[0].at("peak_bytes") == chosen.at("peak_bytes"));
}

TEST_CASE("a plan offers only the layouts the framework runs, each refusal said once") {
  // transformers + PEFT: no tensor, pipeline or context parallelism.
  const json lora = lora_plan({{"seq_len", 1024}, {"grad_ckpt", true}}, 4, "a100-sxm4-40gb");
  REQUIRE(lora.at("ok") == true);
  for (const auto& c : lora.at("result").at("candidates")) {
    CHECK(c.at("tp") == 1);
    CHECK(c.at("method") != "tensor_parallel");
    CHECK(c.at("method") != "pipeline");
  }
  const std::string refused = lora.at("result").at("not_offered").dump();
  CHECK(refused.find("tensor parallelism: not offered, transformers runs it for full "
                     "fine-tuning only") != std::string::npos);
  CHECK(refused.find("pipeline parallelism") != std::string::npos);
  // torchtitan runs all of them.
  const json titan = test::call({{"command", "plan"},
                                 {"model", "meta-llama/Llama-3.2-1B"},
                                 {"cluster", {{"gpu", "a100-sxm4-40gb"}, {"gpus", 4}}},
                                 {"workload", {{"seq_len", 1024}, {"framework", "torchtitan"}}}});
  REQUIRE(titan.at("ok") == true);
  // ... but not DeepSpeed's ZeRO: its data parallelism is DDP or FSDP2.
  REQUIRE(titan.at("result").at("not_offered").size() == 1);
  CHECK(titan.at("result").at("not_offered").at(0) ==
        "zero1, zero2, zero3: not offered, torchtitan's training recipes run one GPU, ddp, "
        "fsdp_full_shard, fsdp_shard_grad_op");
  // torchtune: one device or FSDP2, and FSDP's CPU offload rather than DeepSpeed's.
  const json tune = test::call({{"command", "plan"},
                                {"model", "meta-llama/Llama-3.1-70B"},
                                {"cluster", {{"gpu", "rtx-4090"}, {"gpus", 4}}},
                                {"workload",
                                 {{"seq_len", 2048},
                                  {"framework", "torchtune"},
                                  {"finetune", "full"},
                                  {"compute", "pure_bf16"}}}});
  REQUIRE(tune.at("ok") == true);
  for (const auto& c : tune.at("result").at("candidates")) {
    CAPTURE(c.dump());
    const std::string m = c.at("method");
    CHECK((m.rfind("fsdp", 0) == 0 || m == "tensor_parallel"));
  }
  CHECK(tune.at("result").at("choice").at("method") == "fsdp_full_shard");
  // A 4-bit base: the offloads keep its weights on the GPU.
  // A 4-bit base: the offloads keep its weights on the GPU (70B in 4 bits does not fit a 24 GB
  // card, so the offloads are tried).
  const json qlora = test::call(
      {{"command", "plan"},
       {"model", "meta-llama/Llama-3.1-70B"},
       {"cluster", {{"gpu", "rtx-4090"}}},
       {"workload",
        {{"finetune", "lora"}, {"weights", "nf4"}, {"seq_len", 1024}, {"grad_ckpt", true}}}});
  REQUIRE(qlora.at("ok") == true);
  int offloads = 0;
  for (const auto& c : qlora.at("result").at("candidates")) {
    if (!c.contains("offload")) continue;
    ++offloads;
    CHECK(c.at("offload").at("params") == "none");
  }
  CHECK(offloads == 2);
  const std::string reason = qlora.at("result").at("reason");
  CHECK(reason.find("Try more GPUs or a shorter sequence.") != std::string::npos);
}

}  // namespace
}  // namespace gpumem

namespace gpumem {
namespace {

TEST_CASE("a plan says what it would take: changes that fit where nothing does") {
  // 70B full fine-tuning on 8 H100s: nothing fits on the GPUs alone; LoRA does.
  const json r = test::call({{"command", "plan"},
                             {"model", "meta-llama/Llama-3.1-70B"},
                             {"cluster", {{"gpu", "h100-sxm"}, {"gpus", 8}}},
                             {"workload", {{"finetune", "full"}, {"seq_len", 4096}}}});
  REQUIRE(r.at("ok") == true);
  const json& plan = r.at("result");
  REQUIRE(plan.at("alternatives").is_array());
  REQUIRE_FALSE(plan.at("alternatives").empty());
  bool lora = false;
  double last = 1e300;
  for (const auto& a : plan.at("alternatives")) {
    CHECK(a.at("tokens_per_s").get<double>() <= last);  // fastest first
    last = a.at("tokens_per_s").get<double>();
    const std::string sentence = a.at("sentence");
    CHECK(sentence.rfind("With ", 0) == 0);
    lora |= a.at("request").value("workload", json::object()).value("finetune", "") == "lora";
    // Replaying the change as an estimate of the named method gives the same peak.
    json changed = {{"command", "plan"},
                    {"model", "meta-llama/Llama-3.1-70B"},
                    {"cluster", {{"gpu", "h100-sxm"}, {"gpus", 8}}},
                    {"workload", {{"finetune", "full"}, {"seq_len", 4096}}},
                    {"options", {{"alternatives", false}}}};
    changed.merge_patch(a.at("request"));
    const json again = test::call(changed);
    REQUIRE(again.at("ok") == true);
    CHECK_FALSE(again.at("result").contains("alternatives"));
    bool found = false;
    for (const auto& c : again.at("result").at("candidates"))
      found |= c.at("label") == a.at("label") && c.at("peak_bytes") == a.at("peak_bytes");
    CHECK(found);
  }
  CHECK(lora);
}

TEST_CASE("a plan that fits lists only changes faster than its choice beyond the model's error") {
  const json r = test::call({{"command", "plan"},
                             {"model", "meta-llama/Llama-3.1-8B"},
                             {"cluster", {{"gpu", "rtx-4090"}, {"gpus", 2}}},
                             {"workload", {{"finetune", "lora"}, {"seq_len", 2048}}}});
  REQUIRE(r.at("ok") == true);
  const json& plan = r.at("result");
  const double chosen = plan.at("choice").at("tokens_per_s");
  for (const auto& a : plan.at("alternatives"))
    CHECK(a.at("tokens_per_s").get<double>() > chosen * plan_speed_tie);
}

TEST_CASE("a plan's time and cost for so many training tokens") {
  json request = {
      {"command", "plan"},
      {"model", "meta-llama/Llama-3.2-1B"},
      {"cluster", {{"gpu", "a100-sxm4-80gb"}, {"gpus", 1}, {"price_per_gpu_hour", 2.0}}},
      {"workload", {{"seq_len", 1024}, {"train_tokens", 1000000000}}},
      {"options", {{"alternatives", false}}}};
  const json r = test::call(request);
  REQUIRE(r.at("ok") == true);
  const json& plan = r.at("result");
  const json& t = plan.at("time_and_cost");
  const double speed = plan.at("choice").at("tokens_per_s");
  CHECK(t.at("train_time_s").get<double>() == doctest::Approx(1e9 / speed));
  CHECK(t.at("cost").get<double>() == doctest::Approx(1e9 / speed / 3600 * 2.0));
  // Without a price: the time, no cost; out of range: a coded error naming the field.
  request["cluster"].erase("price_per_gpu_hour");
  CHECK(test::call(request).at("result").at("time_and_cost").at("cost").is_null());
  request["workload"]["train_tokens"] = -5;
  const json bad = test::call(request);
  CHECK(bad.at("error").at("field") == "workload.train_tokens");
  request["workload"].erase("train_tokens");
  request["cluster"]["price_per_gpu_hour"] = 1e9;
  CHECK(test::call(request).at("error").at("field") == "cluster.price_per_gpu_hour");
}

}  // namespace
}  // namespace gpumem

#include "gpumem/inference/inference_speed.hpp"

namespace gpumem {
namespace {

TEST_CASE("inference speed by hand: a compute-bound prefill and a bandwidth-bound decode") {
  tiny t = tiny_model(1);
  t.cluster.gpu.bf16_dense_flops = 1e12;
  t.cluster.gpu.memory_bandwidth_bytes_per_s = 1e9;
  inference_config c;
  c.batch = 2;
  c.prompt_tokens = 128;
  c.new_tokens = 65;
  c.framework = serving_framework::vllm;  // CUDA graphs: no launch floor
  inference_estimate rank;
  rank.weight_bytes = 200000;
  rank.kv_bytes_per_token = 512;
  const inference_speed v = estimate_inference_speed(t.spec, t.counts, c, t.cluster.gpu, rank);
  // Prefill: 2 x 128 tokens x 226432 FLOPs a token (SDPA: causal half of 65536 attention
  // FLOPs counted, 193664) at 45 % of 1 TFLOP/s.
  const double forward = model_forward_flops_per_token(t.spec, t.counts, 128, true);
  CHECK(forward == doctest::Approx(2 * 80448 + 65536 / 2));
  CHECK(v.prefill_s == doctest::Approx(256 * forward / 0.45e12));
  // Decode: the weights and 2 sequences x 512 bytes x 160.5 tokens (the mean length) at 85 % of
  // 1 GB/s; the matmuls (2 x 2 x active parameters at 0.45 TFLOP/s) take less.
  const double step = (200000 + 2 * 512 * 160.5) / 0.85e9;
  CHECK(v.decode_step_s == doctest::Approx(step));
  CHECK(v.decode_tokens_per_s == doctest::Approx(2 / step));
  CHECK(v.request_s == doctest::Approx(v.prefill_s + 64 * step));
  CHECK_FALSE(v.launch_bound);
  // transformers' generate launches 46 kernels a block from the host each step (55 over a
  // static cache), 20 us each as measured warm on an H200 host: 1.84 ms for two blocks, longer
  // than the 0.43 ms the memory takes; litgpt's loop, not measured, 30 at a bare 10 us launch.
  c.framework = serving_framework::transformers;
  const inference_speed eager = estimate_inference_speed(t.spec, t.counts, c, t.cluster.gpu, rank);
  CHECK(eager.launch_bound);
  CHECK(eager.decode_step_s == doctest::Approx(2 * 46 * 20e-6));
  c.kv = kv_cache_kind::static_cache;
  CHECK(estimate_inference_speed(t.spec, t.counts, c, t.cluster.gpu, rank).decode_step_s ==
        doctest::Approx(2 * 55 * 20e-6));
  c.framework = serving_framework::litgpt;
  CHECK(estimate_inference_speed(t.spec, t.counts, c, t.cluster.gpu, rank).decode_step_s ==
        doctest::Approx(2 * 30 * 10e-6));
  c.framework = serving_framework::transformers;
  c.kv = kv_cache_kind::dynamic;
  t.cluster.gpu.memory_bandwidth_bytes_per_s = 1e7;  // now the memory is slower than the host
  const inference_speed slow = estimate_inference_speed(t.spec, t.counts, c, t.cluster.gpu, rank);
  CHECK_FALSE(slow.launch_bound);
  CHECK(slow.decode_step_s == doctest::Approx(step * 100));
}

}  // namespace
}  // namespace gpumem

namespace gpumem {
namespace {

TEST_CASE("a global batch: each candidate's micro-batch and accumulation make it up exactly") {
  json request = {{"command", "plan"},
                  {"model", "meta-llama/Llama-3.2-1B"},
                  {"cluster", {{"gpu", "a100-sxm4-40gb"}, {"gpus", 4}}},
                  {"workload", {{"finetune", "full"}, {"seq_len", 1024}, {"global_batch", 96}}},
                  {"options", {{"alternatives", false}}}};
  const json r = test::call(request);
  REQUIRE(r.at("ok") == true);
  int fitting = 0;
  for (const auto& c : r.at("result").at("candidates")) {
    if (c.at("valid") != true || c.at("fits") != true) continue;
    ++fitting;
    const std::uint64_t group = c.at("tp").get<std::uint64_t>() * c.at("cp").get<std::uint64_t>();
    const std::uint64_t accumulation = c.value("grad_accumulation", std::uint64_t{1});
    CHECK(c.at("max_micro_batch").get<std::uint64_t>() * accumulation * (4 / group) == 96);
    // An estimate with the candidate's micro-batch and accumulation gives its peak.
    json estimate = {
        {"command", "estimate"},
        {"model", "meta-llama/Llama-3.2-1B"},
        {"cluster", {{"gpu", "a100-sxm4-40gb"}, {"gpus", 4}}},
        {"parallel", c.at("parallel")},
        {"workload",
         {{"finetune", "full"}, {"seq_len", 1024}, {"micro_batch", c.at("max_micro_batch")}}}};
    if (c.contains("workload")) estimate["workload"].update(c.at("workload"));
    const json e = test::call(estimate);
    REQUIRE(e.at("ok") == true);
    CHECK(e.at("result").at("per_gpu")[0].at("peak_bytes") == c.at("peak_bytes"));
  }
  CHECK(fitting > 3);
  // 97 sequences do not split over 4 data-parallel groups: every data-parallel candidate says so.
  request["workload"]["global_batch"] = 97;
  const json odd = test::call(request);
  REQUIRE(odd.at("ok") == true);
  CHECK(odd.at("result").at("candidates")[0].at("note") ==
        "a global batch of 97 sequences does not split evenly over its 4 data-parallel groups");
  // A stated accumulation contradicts it.
  request["workload"]["grad_accumulation"] = 2;
  CHECK(test::call(request).at("error").at("field") == "workload.global_batch");
}

}  // namespace
}  // namespace gpumem

namespace gpumem {
namespace {

TEST_CASE("a plan replays once the offloads that share a step on the GPU, each as its own") {
  // Nothing fits 70B full fine-tuning on 8 H100s without offload: the plan tries ZeRO-3's
  // offloads, those to NVMe after those to host RAM (the same step on the GPU).
  const json workload = {{"finetune", "full"}, {"seq_len", 4096}, {"grad_ckpt", true}};
  const json cluster = {{"gpu", "h100-sxm"}, {"gpus", 8}};
  const json r = test::call({{"command", "plan"},
                             {"model", "meta-llama/Llama-3.1-70B"},
                             {"cluster", cluster},
                             {"workload", workload},
                             {"options", {{"alternatives", false}}}});
  REQUIRE(r.at("ok") == true);
  int to_nvme = 0;
  for (const json& c : r.at("result").at("candidates")) {
    const json& parallel = c.at("parallel");
    if (!parallel.contains("offload") ||
        parallel.at("offload").dump().find("nvme") == std::string::npos)
      continue;
    ++to_nvme;
    // Its micro-batch and footprint are what an estimate of its own layout answers.
    const std::uint64_t batch = c.at("max_micro_batch");
    REQUIRE(batch > 0);
    const auto estimate = [&](std::uint64_t b) {
      json w = workload;
      w["micro_batch"] = b;
      return test::call({{"command", "estimate"},
                         {"model", "meta-llama/Llama-3.1-70B"},
                         {"cluster", cluster},
                         {"workload", w},
                         {"parallel", parallel}});
    };
    const json at = estimate(batch);
    REQUIRE(at.at("ok") == true);
    CHECK(at.at("result").at("fits") == true);
    CHECK(at.at("result").at("per_gpu")[0].at("peak_bytes") == c.at("peak_bytes"));
    CHECK(estimate(batch + 1).at("result").at("fits") == false);
  }
  CHECK(to_nvme == 3);
}

}  // namespace
}  // namespace gpumem
