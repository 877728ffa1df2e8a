// The detailed training estimator: the memory timeline, and the parts of a step whose sizes follow
// from PyTorch's own rules, by hand.

#include "gpumem/training/training_step.hpp"

#include <doctest/doctest.h>

#include <cmath>

#include "gpumem/model/config_parser.hpp"
#include "gpumem/model/param_count.hpp"
#include "gpumem/offload/offload.hpp"
#include "gpumem/runtime/memory_timeline.hpp"
#include "test_files.hpp"
#include "training/block_activations.hpp"

namespace gpumem {
namespace {

// The preset most tests here use: small, grouped-query attention, tied embeddings.
result<model_spec> llama_1b() {
  const auto presets = test::read_presets();
  return parse_model_config(presets.at("meta-llama/Llama-3.2-1B").at("config"), {}, "c");
}

// bert-large-uncased with a 3-label sequence-classification head (a pooled, tiny output).
result<model_spec> bert_classifier() {
  model_options classifier;
  classifier.task_head = "sequence_classification";
  classifier.num_labels = 3;
  return parse_model_config(test::read_presets().at("bert-large-uncased").at("config"), classifier,
                            "c");
}

// Two blocks of h = 256, i = 512 with an untied head: small enough for per-block hand counts.
result<model_spec> tiny_llama() {
  return parse_model_config({{"model_type", "llama"},
                             {"hidden_size", 256},
                             {"intermediate_size", 512},
                             {"num_hidden_layers", 2},
                             {"num_attention_heads", 4},
                             {"vocab_size", 1000},
                             {"tie_word_embeddings", false}},
                            {}, "c");
}

// Bytes of one component alive at the peak.
double at_peak(const training_estimate& e, memory_category category) {
  return static_cast<double>(e.peak.by_category[static_cast<std::size_t>(category)]);
}

// LoRA on q_proj and v_proj, PEFT's default targets for Llama.
training_config lora_qv() {
  training_config config;
  config.finetune = finetune_kind::lora;
  config.lora_targets = {"q_proj", "v_proj"};
  return config;
}

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
  const auto spec = llama_1b();
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

TEST_CASE("autocast caches a 16-bit copy of every trainable linear weight until its backward") {
  const auto spec = tiny_llama();
  REQUIRE(spec.ok());
  training_config config;  // full fine-tuning, AMP bf16 over fp32 weights
  config.micro_batch = 8;
  config.seq_len = 512;
  config.optimizer_step = false;
  auto e = estimate_training_step(spec.value(), config, gpu_spec{});
  REQUIRE(e.ok());
  // The loss (4,096 tokens x 1,000 logits) peaks before the LM head's backward has run, so every
  // copy is alive: per block q, k, v, o (256 x 256) and gate, up, down (256 x 512), and the untied
  // LM head (1,000 x 256), 2 bytes an element, each a multiple of 512 B already.
  const double copies = 2.0 * (2 * (4 * 256 * 256 + 3 * 256 * 512) + 1000 * 256);
  CHECK(at_peak(e.value(), memory_category::autocast_weight_copies) == copies);
  // Pure bf16 computes with the weights themselves.
  config.compute = compute_precision::pure_bf16;
  auto pure = estimate_training_step(spec.value(), config, gpu_spec{});
  REQUIRE(pure.ok());
  CHECK(at_peak(pure.value(), memory_category::autocast_weight_copies) == 0);
}

TEST_CASE("LoRA trains only the adapters: A [r, in] and B [out, r] per target") {
  const auto spec = llama_1b();
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

TEST_CASE("DoRA adds a magnitude per output feature and keeps two outputs per adapted linear") {
  const auto spec = llama_1b();
  REQUIRE(spec.ok());
  training_config lora = lora_qv();
  lora.optimizer_step = false;
  training_config dora = lora;
  dora.dora = true;
  auto a = estimate_training_step(spec.value(), lora, gpu_spec{});
  auto b = estimate_training_step(spec.value(), dora, gpu_spec{});
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  // 16 layers x (q: 2048 + v: 512 output features).
  CHECK(b.value().trainable_params - a.value().trainable_params == 16ULL * (2048 + 512));
  // Both peak as the loss is stepped back, with every block's saved tensors alive; DoRA adds
  // base_result and lora_result, [512 tokens, out] in bf16, per adapted linear.
  CHECK(a.value().peak.phase == "backward");
  CHECK(b.value().peak.phase == "backward");
  const auto act = static_cast<std::size_t>(memory_category::activations);
  // Equal up to the allocator's unsplit remainders of blocks carved from cached segments.
  const auto added =
      static_cast<double>(b.value().peak.by_category[act] - a.value().peak.by_category[act]);
  CHECK(added == doctest::Approx(16.0 * 2 * 512 * (2048 + 512) * 2).epsilon(0.05));
}

TEST_CASE(
    "a mixture-of-experts block keeps what a gated MLP k experts wide keeps, and the router") {
  const auto presets = test::read_presets();
  auto config = presets.at("mistralai/Mixtral-8x7B-v0.1").at("config");
  config["num_hidden_layers"] = 4;
  const auto moe = parse_model_config(config, {}, "c");
  // The same model with one dense MLP as wide as the two experts each token runs through.
  config["model_type"] = "mistral";
  config.erase("num_local_experts");
  config.erase("num_experts_per_tok");
  config["intermediate_size"] = 2 * 14336;
  const auto dense = parse_model_config(config, {}, "c");
  REQUIRE(moe.ok());
  REQUIRE(dense.ok());
  training_config c = lora_qv();
  c.compute = compute_precision::pure_bf16;
  c.micro_batch = 2;
  c.seq_len = 1024;
  c.optimizer_step = false;
  auto routed = estimate_training_step(moe.value(), c, gpu_spec{});
  auto wide = estimate_training_step(dense.value(), c, gpu_spec{});
  REQUIRE(routed.ok());
  REQUIRE(wide.ok());
  // LoRA names reach no router (a bare parameter in transformers 5) and no fused expert: as
  // PEFT does, targets that name no linear module are refused.
  c.lora_targets = {"gate_proj", "up_proj"};
  auto none = estimate_training_step(moe.value(), c, gpu_spec{});
  REQUIRE(!none.ok());
  CHECK(none.failure().field == "workload.lora.targets");
  c.lora_targets = {"q_proj", "v_prj"};  // one target matches: the other is a note
  const auto typo = estimate_training_step(moe.value(), c, gpu_spec{});
  REQUIRE(typo.ok());
  REQUIRE(typo.value().notes.size() >= 1);
  CHECK(typo.value().notes.front().find("'v_prj'") != std::string::npos);
  c.lora_targets = {"lm_head"};  // Mixtral's untied head
  CHECK(estimate_training_step(moe.value(), c, gpu_spec{}).ok());
  c.lora_targets = {"q_proj", "v_proj"};
  // Per block, the router's bf16 logits and fp32 softmax over 8 experts for 2,048 tokens, and
  // each of the 2 experts' bf16 outputs a token gets, kept for the routing weight's gradient.
  const double router = 4.0 * 2048 * 8 * (2 + 4);
  const double expert_outputs = 4.0 * 2048 * 2 * 4096 * 2;
  CHECK(at_peak(routed.value(), memory_category::activations) -
            at_peak(wide.value(), memory_category::activations) ==
        doctest::Approx(router + expert_outputs).epsilon(0.05));
}

TEST_CASE("tensor parallelism over experts: widths checked, gathered tokens and outputs whole") {
  const nlohmann::json qwen = {{"model_type", "qwen2_moe"},
                               {"hidden_size", 2048},
                               {"num_hidden_layers", 2},
                               {"num_attention_heads", 16},
                               {"num_key_value_heads", 16},
                               {"intermediate_size", 5632},
                               {"moe_intermediate_size", 1400},
                               {"shared_expert_intermediate_size", 5632},
                               {"num_experts", 60},
                               {"num_experts_per_tok", 4},
                               {"vocab_size", 151936}};
  const auto spec = parse_model_config(qwen, {}, "c");
  REQUIRE(spec.ok());
  training_config c;
  c.compute = compute_precision::pure_bf16;
  c.optimizer_step = false;
  c.seq_len = 1024;
  c.tp_degree = 16;  // divides the heads and the dense widths, not the 1,400-wide experts
  auto refused = estimate_training_step(spec.value(), c, gpu_spec{});
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.failure().code == "parallel.invalid_degree");
  CHECK(refused.failure().message.find("expert width (1400)") != std::string::npos);
  // Full fine-tuning at tp 1 and 2: the gathered tokens and the expert outputs (4 experts a
  // token, 2,048 wide, bf16) are whole on every rank, so the per-rank activations drop by less
  // than half of them.
  c.tp_degree = 1;
  auto one = estimate_training_step(spec.value(), c, gpu_spec{});
  c.tp_degree = 2;
  auto two = estimate_training_step(spec.value(), c, gpu_spec{});
  REQUIRE(one.ok());
  REQUIRE(two.ok());
  const double whole = 2.0 * 1024 * 4 * 2048 * 2 * 2;  // 2 blocks x (tokens + outputs)
  CHECK(at_peak(two.value(), memory_category::activations) >=
        at_peak(one.value(), memory_category::activations) / 2 + whole / 2);
}

TEST_CASE("bitsandbytes 4-bit and LLM.int8 storage, by hand") {
  tensor_spec w;
  w.name = "model.layers.0.self_attn.q_proj.weight";
  w.role = tensor_role::attention;
  w.module = module_kind::linear;
  w.shape = {4096, 4096};
  w.layer = 0;
  const std::uint64_t n = 4096ULL * 4096;
  // 4-bit codes + one fp32 absmax per 64 weights: 0.5625 bytes per weight.
  CHECK(quantized_weight_bytes(w, 1, base_quantization::nf4) == n / 2 + 4 * (n / 64));
  // Double quantisation: 8-bit absmax, one fp32 absmax per 256 blocks, and the fp32 offset.
  CHECK(quantized_weight_bytes(w, 1, base_quantization::nf4_double_quant) ==
        n / 2 + n / 64 + 4 * (n / 64 / 256) + 4);
  // LLM.int8: one byte a weight and an fp32 absmax per output row.
  CHECK(quantized_weight_bytes(w, 1, base_quantization::int8) == n + 4 * 4096);
  // A column-parallel rank holds a quarter of the rows, with their scales.
  CHECK(quantized_weight_bytes(w, 4, base_quantization::int8) == n / 4 + 4 * 1024);
  CHECK(quantized_weight_bytes(w, 1, base_quantization::none) == 0);
}

TEST_CASE("QLoRA stores the block linears in 4 bits and keeps the rest 16-bit") {
  const auto spec = llama_1b();
  REQUIRE(spec.ok());
  training_config lora = lora_qv();
  lora.base_weight_bytes = 2;
  training_config qlora = lora;
  qlora.quantization = base_quantization::nf4;
  auto a = estimate_training_step(spec.value(), lora, gpu_spec{});
  auto b = estimate_training_step(spec.value(), qlora, gpu_spec{});
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  const auto weights = static_cast<std::size_t>(memory_category::weights);
  std::uint64_t block_linear = 0;
  std::uint64_t block_linear_4bit = 0;
  for (const auto& t : spec.value().tensors) {
    if (t.layer >= 0 && t.module == module_kind::linear && !t.is_bias) {
      block_linear += allocator_round(2 * t.numel());
      block_linear_4bit += allocator_round(quantized_weight_bytes(t, 1, base_quantization::nf4));
    }
  }
  // Equal up to the allocator's unsplit remainders of blocks carved from shared segments.
  const auto saved = static_cast<double>(a.value().peak.by_category[weights] -
                                         b.value().peak.by_category[weights]);
  CHECK(saved ==
        doctest::Approx(static_cast<double>(block_linear - block_linear_4bit)).epsilon(0.001));
  CHECK(b.value().trainable_params == a.value().trainable_params);
}

TEST_CASE("PEFT's kbit preparation: fp32 norms feed the 4-bit linears fp32, which return fp32") {
  const auto spec = tiny_llama();
  REQUIRE(spec.ok());
  training_config config;
  config.finetune = finetune_kind::lora;
  config.lora_targets = {"lm_head"};  // every block linear frozen and 4-bit
  config.quantization = base_quantization::nf4;
  config.base_weight_bytes = 2;
  config.micro_batch = 1;
  config.seq_len = 64;
  auto prepared = estimate_training_step(spec.value(), config, gpu_spec{});
  config.kbit_preparation = false;
  auto plain = estimate_training_step(spec.value(), config, gpu_spec{});
  REQUIRE(prepared.ok());
  REQUIRE(plain.ok());
  // Per block, by hand (t = 64 tokens, h = 256, i = 512, bf16 compute). Plain: each norm's
  // bf16 output is kept once for the linears it feeds (2 x 2th) and the MLP keeps gate, SiLU
  // output, up and the product in bf16 (8ti). Prepared: each of q/k/v and gate/up keeps its own
  // bf16 cast of the fp32 norm output (5 x 2th), the MLP keeps gate, SiLU output and up in fp32
  // (12ti) and the down projection a bf16 cast of the fp32 product (2ti): 6th + 6ti more.
  const std::uint64_t t = 64;
  CHECK(prepared.value().saved_activation_bytes - plain.value().saved_activation_bytes ==
        2 * (6 * t * 256 + 6 * t * 512));
  // The five norms' weights in fp32; under bf16 the embeddings and LM head go back to bf16.
  CHECK(at_peak(prepared.value(), memory_category::weights) -
            at_peak(plain.value(), memory_category::weights) ==
        doctest::Approx(5 * 256 * 2));
  // Under fp16 they stay fp32 (TRL casts back under bf16 only).
  config.compute = compute_precision::amp_fp16;
  auto fp16_plain = estimate_training_step(spec.value(), config, gpu_spec{});
  config.kbit_preparation = true;
  auto fp16_prepared = estimate_training_step(spec.value(), config, gpu_spec{});
  REQUIRE(fp16_plain.ok());
  REQUIRE(fp16_prepared.ok());
  CHECK(at_peak(fp16_prepared.value(), memory_category::weights) -
            at_peak(fp16_plain.value(), memory_category::weights) ==
        doctest::Approx(5 * 256 * 2 + 2 * 1000 * 256 * 2));

  // GemmaRMSNorm casts its output back to the input's dtype (output.type_as(x)): the fp32
  // norm weights change nothing else.
  const auto gemma = parse_model_config({{"model_type", "gemma"},
                                         {"hidden_size", 256},
                                         {"intermediate_size", 512},
                                         {"num_hidden_layers", 2},
                                         {"num_attention_heads", 4},
                                         {"num_key_value_heads", 4},
                                         {"head_dim", 64},
                                         {"vocab_size", 1000}},
                                        {}, "c");
  REQUIRE(gemma.ok());
  config.compute = compute_precision::amp_bf16;
  auto gemma_prepared = estimate_training_step(gemma.value(), config, gpu_spec{});
  config.kbit_preparation = false;
  auto gemma_plain = estimate_training_step(gemma.value(), config, gpu_spec{});
  REQUIRE(gemma_prepared.ok());
  REQUIRE(gemma_plain.ok());
  CHECK(gemma_prepared.value().saved_activation_bytes ==
        gemma_plain.value().saved_activation_bytes);
  CHECK(at_peak(gemma_prepared.value(), memory_category::weights) -
            at_peak(gemma_plain.value(), memory_category::weights) ==
        doctest::Approx(5 * 256 * 2));
}

TEST_CASE("an LLM.int8 base keeps each linear's input as it came, in its own dtype") {
  const auto spec = tiny_llama();
  REQUIRE(spec.ok());
  training_config config;
  config.finetune = finetune_kind::lora;
  config.lora_targets = {"lm_head"};  // every block linear frozen and quantised
  config.base_weight_bytes = 2;
  config.micro_batch = 1;
  config.seq_len = 64;
  const auto saved = [&](base_quantization q, bool prepared) {
    config.quantization = q;
    config.kbit_preparation = prepared;
    auto e = estimate_training_step(spec.value(), config, gpu_spec{});
    REQUIRE(e.ok());
    return e.value().saved_activation_bytes;
  };
  // Unprepared, every input is already bf16: 4-bit and int8 keep the same tensors.
  CHECK(saved(base_quantization::int8, false) == saved(base_quantization::nf4, false));
  // Prepared (fp32 norms, fp32 MLP), per block by hand (t = 64, h = 256, i = 512): the 4-bit
  // linears keep a bf16 cast each (q, k, v: 3 x 2th; gate, up: 2 x 2th; down: 2ti), int8 keeps
  // the fp32 tensors once (4th + 4th + 4ti): 2ti - 2th more.
  const std::uint64_t t = 64;
  CHECK(saved(base_quantization::int8, true) - saved(base_quantization::nf4, true) ==
        2 * (2 * t * 512 - 2 * t * 256));
  // Weights: one byte per block-linear weight plus an fp32 scale per output row.
  config.kbit_preparation = false;
  config.quantization = base_quantization::int8;
  auto int8 = estimate_training_step(spec.value(), config, gpu_spec{});
  config.quantization = base_quantization::none;
  auto bf16 = estimate_training_step(spec.value(), config, gpu_spec{});
  REQUIRE(int8.ok());
  REQUIRE(bf16.ok());
  std::uint64_t weights = 0;
  std::uint64_t rows = 0;
  for (const auto& w : spec.value().tensors) {
    if (w.layer < 0 || w.module != module_kind::linear || w.is_bias) continue;
    weights += w.numel();
    rows += w.shape[0];
  }
  CHECK(at_peak(bf16.value(), memory_category::weights) -
            at_peak(int8.value(), memory_category::weights) ==
        doctest::Approx(static_cast<double>(2 * weights - (weights + 4 * rows))).epsilon(0.01));
  // Nothing shards or splits Int8Params, and only transformers + PEFT trains on them.
  config.quantization = base_quantization::int8;
  config.sharding = data_parallel::fsdp_full_shard;
  config.dp_degree = 2;
  auto sharded = estimate_training_step(spec.value(), config, gpu_spec{});
  REQUIRE_FALSE(sharded.ok());
  CHECK(sharded.failure().field == "parallel.method");
  config.sharding = data_parallel::none;
  config.dp_degree = 1;
  config.framework = framework_profile::litgpt;
  auto litgpt = estimate_training_step(spec.value(), config, gpu_spec{});
  REQUIRE_FALSE(litgpt.ok());
  CHECK(litgpt.failure().field == "workload.weights");
}

TEST_CASE("ALBERT's shared blocks: parameters once, activations for every block") {
  auto config = test::read_json("tests/configs/albert-base-v2.json");
  const auto with_groups = [&](std::uint64_t groups) {
    config["num_hidden_groups"] = groups;
    auto spec = parse_model_config(config, {}, "c");
    REQUIRE(spec.ok());
    return spec.value();
  };
  const model_spec shared = with_groups(1);
  const model_spec own = with_groups(12);  // the same network with a block of parameters each
  training_config c;
  c.finetune = finetune_kind::full;
  c.compute = compute_precision::amp_bf16;
  c.micro_batch = 4;
  c.seq_len = 256;
  auto a = estimate_training_step(shared, c, gpu_spec{});
  auto b = estimate_training_step(own, c, gpu_spec{});
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  CHECK(a.value().saved_activation_bytes == b.value().saved_activation_bytes);
  // fp32 weights under autocast: 11 blocks' parameters fewer, 4 bytes each.
  std::uint64_t block = 0;
  for (const auto& t : shared.tensors) {
    if (t.layer == 0) block += t.numel();
  }
  CHECK(a.value().trainable_params + 11 * block == b.value().trainable_params);
  // (Up to the allocator's 512-byte rounding of each tensor.)
  CHECK(at_peak(b.value(), memory_category::weights) -
            at_peak(a.value(), memory_category::weights) ==
        doctest::Approx(static_cast<double>(11 * block * 4)).epsilon(0.01));
  // Under FSDP each rank keeps a quarter of the difference, and every block still runs (and
  // gathers) its parameters: the same activations.
  c.sharding = data_parallel::fsdp_full_shard;
  c.dp_degree = 4;
  auto fsdp_shared = estimate_training_step(shared, c, gpu_spec{});
  auto fsdp_own = estimate_training_step(own, c, gpu_spec{});
  REQUIRE(fsdp_shared.ok());
  REQUIRE(fsdp_own.ok());
  CHECK(fsdp_shared.value().saved_activation_bytes == fsdp_own.value().saved_activation_bytes);
  CHECK(at_peak(fsdp_own.value(), memory_category::weights) -
            at_peak(fsdp_shared.value(), memory_category::weights) ==
        doctest::Approx(static_cast<double>(11 * block * 4 / 4)).epsilon(0.01));
  // ZeRO-3 gathers the shared block for each block that runs it: with a small vocabulary, the
  // busiest moment has one whole block gathered in 16 bits.
  config["num_hidden_groups"] = 1;
  config["vocab_size"] = 1000;
  config["hidden_size"] = 2048;
  config["intermediate_size"] = 8192;
  config["num_attention_heads"] = 16;
  auto wide = parse_model_config(config, {}, "c");
  REQUIRE(wide.ok());
  std::uint64_t wide_block = 0;
  for (const auto& t : wide.value().tensors) {
    if (t.layer == 0) wide_block += t.numel();
  }
  training_config z = c;
  z.sharding = data_parallel::zero3;
  z.dp_degree = 8;
  z.grad_ckpt = true;
  z.micro_batch = 1;
  z.seq_len = 128;
  auto zero3 = estimate_training_step(wide.value(), z, gpu_spec{});
  REQUIRE(zero3.ok());
  CHECK(at_peak(zero3.value(), memory_category::gathered_params) >=
        static_cast<double>(2 * wide_block));
  // A pipeline cannot split one set of parameters over its stages.
  c.sharding = data_parallel::none;
  c.dp_degree = 1;
  c.pp_degree = 2;
  auto piped = estimate_training_step(shared, c, gpu_spec{});
  REQUIRE_FALSE(piped.ok());
  CHECK(piped.failure().field == "parallel.pp");
}

TEST_CASE("PEFT IA3: one vector per target, and the tensors its scaling keeps, by hand") {
  const auto spec = tiny_llama();
  REQUIRE(spec.ok());
  training_config config;
  config.finetune = finetune_kind::ia3;
  config.lora_targets = {"k_proj", "v_proj", "down_proj"};  // PEFT's Llama default
  config.compute = compute_precision::amp_bf16;
  config.micro_batch = 1;
  config.seq_len = 64;
  const auto run = [&](std::vector<std::string> targets) {
    config.lora_targets = std::move(targets);
    auto e = estimate_training_step(spec.value(), config, gpu_spec{});
    REQUIRE(e.ok());
    return e.value();
  };
  // Vectors: k and v outputs (256 each) and down_proj's input (512), per block.
  CHECK(run({"k_proj", "v_proj", "down_proj"}).trainable_params == 2 * (256 + 256 + 512));
  // Per block (t = 64): k and v keep their bf16 outputs for the vector's gradient (2 x 2t x 256),
  // down_proj keeps an fp32 copy of its input (4t x 512); q alone keeps 2t x 256.
  const std::uint64_t t = 64;
  CHECK(run({"k_proj", "v_proj", "down_proj"}).saved_activation_bytes -
            run({"q_proj"}).saved_activation_bytes ==
        2 * (2 * 2 * t * 256 + 4 * t * 512 - 2 * t * 256));
  // In pure bf16 the vector is bf16: down_proj keeps its bf16 input itself (2t x 512).
  config.compute = compute_precision::pure_bf16;
  CHECK(run({"k_proj", "v_proj", "down_proj"}).saved_activation_bytes -
            run({"q_proj"}).saved_activation_bytes ==
        2 * (2 * 2 * t * 256 + 2 * t * 512 - 2 * t * 256));
  // PEFT's, under transformers only.
  config.framework = framework_profile::torchtune;
  auto refused = estimate_training_step(spec.value(), config, gpu_spec{});
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.failure().field == "workload.finetune");
}

TEST_CASE("PEFT prompt tuning: virtual tokens lengthen every sequence and are all that trains") {
  const auto spec = tiny_llama();
  REQUIRE(spec.ok());
  training_config config;
  config.finetune = finetune_kind::prompt_tuning;
  config.micro_batch = 2;
  const auto run = [&](std::uint64_t seq_len, std::uint64_t virtual_tokens) {
    config.seq_len = seq_len;
    config.virtual_tokens = virtual_tokens;
    auto e = estimate_training_step(spec.value(), config, gpu_spec{});
    REQUIRE(e.ok());
    return e.value();
  };
  // 48 + 16 and 56 + 8 positions: the same activations; 16 or 8 rows of the 256-wide embedding.
  const auto a = run(48, 16);
  const auto b = run(56, 8);
  CHECK(a.saved_activation_bytes == b.saved_activation_bytes);
  CHECK(a.trainable_params == 16 * 256);
  CHECK(b.trainable_params == 8 * 256);
  CHECK(run(64, 16).saved_activation_bytes > a.saved_activation_bytes);
  // Without its number of virtual tokens there is nothing to estimate.
  config.virtual_tokens = 0;
  auto missing = estimate_training_step(spec.value(), config, gpu_spec{});
  REQUIRE_FALSE(missing.ok());
  CHECK(missing.failure().field == "workload.prompt_tuning.num_virtual_tokens");
  // It is PEFT's: under another framework the fine-tuning kind is what is wrong.
  config.virtual_tokens = 8;
  config.framework = framework_profile::litgpt;
  auto elsewhere = estimate_training_step(spec.value(), config, gpu_spec{});
  REQUIRE_FALSE(elsewhere.ok());
  CHECK(elsewhere.failure().field == "workload.finetune");
}

TEST_CASE("eager attention under autocast keeps fp32 probabilities and one 16-bit copy, by hand") {
  auto spec = tiny_llama();
  REQUIRE(spec.ok());
  training_config config;
  config.finetune = finetune_kind::full;
  config.compute = compute_precision::amp_bf16;
  config.attention = attention_kernel::eager;
  config.micro_batch = 2;
  config.seq_len = 64;
  const auto saved = [&](double dropout) {
    spec.value().attention_dropout = dropout;
    auto e = estimate_training_step(spec.value(), config, gpu_spec{});
    REQUIRE(e.ok());
    return e.value().saved_activation_bytes;
  };
  // Per score (2 x 4 heads x 64 x 64 a block): softmax's fp32 output and the bf16 tensor the
  // product with V keeps -- the cast back (4 + 2 bytes), or with dropout its output, beside its
  // one-byte mask, the cast living only until dropout has run (4 + 1 + 2): one byte more.
  const std::uint64_t scores = 2 * 4 * 64 * 64;
  CHECK(saved(0.1) - saved(0.0) == 2 * scores);  // two blocks
}

TEST_CASE(
    "AdamW's implementation: foreach's square roots of every state, the loop's two, fused none") {
  const auto spec = tiny_llama();
  REQUIRE(spec.ok());
  training_config config;
  config.finetune = finetune_kind::full;
  config.compute = compute_precision::amp_bf16;  // fp32 parameters and states
  config.micro_batch = 1;
  config.seq_len = 8;  // the optimizer step is the busiest moment
  const auto temporaries = [&](adamw_implementation impl) {
    config.adamw_impl = impl;
    auto e = estimate_training_step(spec.value(), config, gpu_spec{});
    REQUIRE(e.ok());
    return at_peak(e.value(), memory_category::optimizer_temporaries);
  };
  std::uint64_t all = 0;
  std::uint64_t largest = 0;
  for (const auto& t : spec.value().tensors) {
    all += allocator_round(4 * t.numel());
    largest = std::max(largest, allocator_round(4 * t.numel()));
  }
  CHECK(temporaries(adamw_implementation::foreach) ==
        doctest::Approx(static_cast<double>(all)).epsilon(0.01));
  CHECK(temporaries(adamw_implementation::for_loop) == static_cast<double>(2 * largest));
  CHECK(temporaries(adamw_implementation::fused) == 0);
}

TEST_CASE("tensor parallelism splits block linears, the vocabulary, and nothing else") {
  tensor_spec q{"model.layers.0.self_attn.q_proj.weight",
                tensor_role::attention,
                module_kind::linear,
                {4096, 4096},
                0,
                false};
  tensor_spec q_bias{"model.layers.0.self_attn.q_proj.bias",
                     tensor_role::attention,
                     module_kind::linear,
                     {4096},
                     0,
                     true};
  tensor_spec o_bias{"model.layers.0.self_attn.o_proj.bias",
                     tensor_role::attention,
                     module_kind::linear,
                     {4096},
                     0,
                     true};
  tensor_spec embed{"model.embed_tokens.weight",
                    tensor_role::token_embedding,
                    module_kind::embedding,
                    {128256, 4096},
                    -1,
                    false};
  tensor_spec norm{"model.layers.0.input_layernorm.weight",
                   tensor_role::norm,
                   module_kind::norm,
                   {4096},
                   0,
                   false};
  CHECK(tensor_parallel_numel(q, 4) == 4096 * 1024);
  CHECK(tensor_parallel_numel(q_bias, 4) == 1024);  // column-parallel: split with the outputs
  CHECK(tensor_parallel_numel(o_bias, 4) == 4096);  // row-parallel: added after the reduce
  CHECK(tensor_parallel_numel(embed, 3) == 42752ULL * 4096);  // 128256 / 3 rows
  CHECK(tensor_parallel_numel(norm, 4) == 4096);
  CHECK(tensor_parallel_numel(q, 1) == q.numel());
}

TEST_CASE("sequence parallelism divides the activations by the tensor-parallel degree") {
  const auto spec = llama_1b();
  REQUIRE(spec.ok());
  training_config config;
  config.optimizer_step = false;
  config.micro_batch = 2;
  config.seq_len = 1024;
  auto single = estimate_training_step(spec.value(), config, gpu_spec{});
  config.tp_degree = 4;
  auto tp = estimate_training_step(spec.value(), config, gpu_spec{});
  config.sequence_parallel = true;
  auto sp = estimate_training_step(spec.value(), config, gpu_spec{});
  REQUIRE(single.ok());
  REQUIRE(tp.ok());
  REQUIRE(sp.ok());
  // Korthikanti et al. 2022: tensor parallelism alone leaves the hidden-width tensors (norms,
  // column-parallel inputs, residuals) whole on every rank; with sequence parallelism everything
  // a block keeps is split t ways.
  CHECK(at_peak(tp.value(), memory_category::activations) >
        at_peak(single.value(), memory_category::activations) / 4 * 1.2);
  CHECK(at_peak(sp.value(), memory_category::activations) ==
        doctest::Approx(at_peak(single.value(), memory_category::activations) / 4).epsilon(0.03));
  config.tp_degree = 16;  // 8 key/value heads
  auto bad = estimate_training_step(spec.value(), config, gpu_spec{});
  REQUIRE_FALSE(bad.ok());
  CHECK(bad.failure().code == "parallel.invalid_degree");
  CHECK(bad.failure().field == "parallel.tp");
}

TEST_CASE("context parallelism: a rank keeps its tokens' share; Ulysses attends over all") {
  const auto spec = llama_1b();  // 32 heads, 8 key/value heads of 64, MLP 8192
  REQUIRE(spec.ok());
  training_config config;
  config.optimizer_step = false;
  config.seq_len = 1024;
  auto single = estimate_training_step(spec.value(), config, gpu_spec{});
  config.seq_len = 4096;
  config.cp_degree = 4;
  auto ring = estimate_training_step(spec.value(), config, gpu_spec{});
  REQUIRE(single.ok());
  REQUIRE(ring.ok());
  // 1024 tokens a rank either way. The ring's buffers, by hand (t 1024, bf16): forward 3 K/V
  // chunks of 2 MiB and 4 outputs of 4 MiB (22 MiB), backward 2 x 4 MiB + 5 x 2 MiB (18 MiB),
  // stay under the block's own MLP temporaries (24 and 64 MiB), so nothing else changes.
  CHECK(ring.value().peak.allocated == single.value().peak.allocated);
  CHECK(at_peak(ring.value(), memory_category::logits_and_loss) ==
        at_peak(single.value(), memory_category::logits_and_loss));

  // Eager attention under Ulysses keeps B (heads / cp) s^2 scores per block: 4x the scores of a
  // 1024-token sequence over all heads.
  config.attention = attention_kernel::eager;
  config.cp_kind = context_parallel_kind::ulysses;
  auto ulysses_eager = estimate_training_step(spec.value(), config, gpu_spec{});
  config.attention = attention_kernel::sdpa;
  auto ulysses_sdpa = estimate_training_step(spec.value(), config, gpu_spec{});
  config.cp_degree = 1;
  config.seq_len = 1024;
  config.attention = attention_kernel::eager;
  auto single_eager = estimate_training_step(spec.value(), config, gpu_spec{});
  REQUIRE(ulysses_eager.ok());
  REQUIRE(ulysses_sdpa.ok());
  REQUIRE(single_eager.ok());
  const auto scores_of = [](const training_estimate& eager, const training_estimate& fused) {
    return at_peak(eager, memory_category::activations) -
           at_peak(fused, memory_category::activations);
  };
  CHECK(scores_of(ulysses_eager.value(), ulysses_sdpa.value()) ==
        doctest::Approx(4 * scores_of(single_eager.value(), single.value())).epsilon(0.03));

  // The split must be even, Ulysses must divide the heads, and the ring runs fused kernels.
  config.cp_degree = 3;
  config.attention = attention_kernel::sdpa;
  auto uneven = estimate_training_step(spec.value(), config, gpu_spec{});
  REQUIRE_FALSE(uneven.ok());
  CHECK(uneven.failure().field == "parallel.cp");
  config.cp_degree = 16;
  config.seq_len = 16384;
  auto heads = estimate_training_step(spec.value(), config, gpu_spec{});
  REQUIRE_FALSE(heads.ok());
  CHECK(heads.failure().code == "parallel.invalid_degree");
  config.cp_kind = context_parallel_kind::ring;
  config.attention = attention_kernel::eager;
  auto eager_ring = estimate_training_step(spec.value(), config, gpu_spec{});
  REQUIRE_FALSE(eager_ring.ok());
  CHECK(eager_ring.failure().field == "workload.attention");
}

TEST_CASE("context parallelism's buffers: the ring's K/V and outputs, Ulysses' all-to-alls") {
  // h 256, 4 heads of 64, LoRA on q and v, pure bf16, forward and backward only.
  const auto spec_with = [](std::uint64_t mlp, std::uint64_t vocab) {
    return parse_model_config({{"model_type", "llama"},
                               {"hidden_size", 256},
                               {"intermediate_size", mlp},
                               {"num_hidden_layers", 2},
                               {"num_attention_heads", 4},
                               {"vocab_size", vocab},
                               {"tie_word_embeddings", false}},
                              {}, "c");
  };
  training_config config = lora_qv();
  config.compute = compute_precision::pure_bf16;
  config.optimizer_step = false;
  const auto peak_with = [&](const model_spec& spec, std::uint64_t tokens, std::uint64_t cp,
                             context_parallel_kind kind) {
    config.cp_degree = cp;
    config.cp_kind = kind;
    config.seq_len = tokens * cp;
    auto e = estimate_training_step(spec, config, gpu_spec{});
    REQUIRE(e.ok());
    return e.value();
  };
  // TransformerEngine's ring forward, by hand (t = 64 tokens a rank, bf16, q = k = v = 256
  // wide): cp K/V buffers of 2 x 64 x 512 B and cp outputs of 2 x 64 x 256 B beside the fp32
  // output; from cp 128 on they make the peak, and doubling cp adds 128 x (65,536 + 32,768) B.
  const auto small = spec_with(512, 1000);
  REQUIRE(small.ok());
  const auto ring128 = peak_with(small.value(), 64, 128, context_parallel_kind::ring);
  const auto ring256 = peak_with(small.value(), 64, 256, context_parallel_kind::ring);
  CHECK(ring256.peak.phase == "forward");
  CHECK(static_cast<double>(ring256.peak.allocated - ring128.peak.allocated) ==
        128.0 * (65536 + 32768));
  // Ulysses keeps the caller's q/k/v and three q-sized buffers of an all-to-all (3,072 B a
  // token) while it runs, more than a narrow MLP's temporaries: the peak rises, by no more.
  const auto narrow = spec_with(64, 100);
  REQUIRE(narrow.ok());
  const std::uint64_t t = 4096;
  const auto alone = peak_with(narrow.value(), t, 1, context_parallel_kind::ring);
  const auto ulysses = peak_with(narrow.value(), t, 2, context_parallel_kind::ulysses);
  CHECK(ulysses.peak.allocated > alone.peak.allocated);
  CHECK(ulysses.peak.allocated - alone.peak.allocated <= 3072 * t);
}

TEST_CASE("selective recomputation drops the attention core's score-sized tensors, nothing else") {
  const auto spec = llama_1b();  // 16 blocks, 32 heads
  REQUIRE(spec.ok());
  training_config config;
  config.optimizer_step = false;
  config.seq_len = 256;
  config.attention = attention_kernel::eager;
  auto kept = estimate_training_step(spec.value(), config, gpu_spec{});
  config.selective_recompute = true;
  auto selective = estimate_training_step(spec.value(), config, gpu_spec{});
  REQUIRE(kept.ok());
  REQUIRE(selective.ok());
  // Eager Llama attention under autocast keeps the fp32 softmax and its bf16 cast: 6 bytes per
  // score, 32 x 256^2 scores per block, 16 blocks.
  CHECK(kept.value().saved_activation_bytes - selective.value().saved_activation_bytes ==
        16ULL * 6 * 32 * 256 * 256);
  // Made again only for their block's backward, where the kept ones are alive anyway.
  CHECK(selective.value().peak.allocated <= kept.value().peak.allocated);
  // Fused attention keeps no scores: nothing changes.
  config.attention = attention_kernel::sdpa;
  auto fused_selective = estimate_training_step(spec.value(), config, gpu_spec{});
  config.selective_recompute = false;
  auto fused = estimate_training_step(spec.value(), config, gpu_spec{});
  REQUIRE(fused_selective.ok());
  REQUIRE(fused.ok());
  CHECK(fused_selective.value().peak.allocated == fused.value().peak.allocated);
}

TEST_CASE("pipeline stages split the blocks evenly, the first stages taking the remainder") {
  CHECK(pipeline_stage_layers(32, 4, 0).first == 0);
  CHECK(pipeline_stage_layers(32, 4, 3).first == 24);
  CHECK(pipeline_stage_layers(32, 4, 3).last == 32);
  // 12 blocks over 5 stages: 3, 3, 2, 2, 2.
  CHECK(pipeline_stage_layers(12, 5, 1).first == 3);
  CHECK(pipeline_stage_layers(12, 5, 1).last == 6);
  CHECK(pipeline_stage_layers(12, 5, 2).last == 8);
  CHECK(pipeline_stage_layers(12, 5, 4).last == 12);
}

TEST_CASE(
    "1F1B: stage s keeps the activations of p - s micro-batches; the ends hold the embeddings") {
  const auto spec = llama_1b();
  REQUIRE(spec.ok());
  training_config config;
  config.micro_batch = 2;
  config.seq_len = 1024;
  config.pp_degree = 4;
  std::vector<training_estimate> stages;
  for (std::uint64_t s = 0; s < 4; ++s) {
    config.pp_stage = s;
    auto e = estimate_training_step(spec.value(), config, gpu_spec{});
    REQUIRE(e.ok());
    stages.push_back(e.value());
  }
  // Stages 1 and 2 run 4 blocks each and differ only in micro-batches in flight (3 and 2) when
  // their first backward starts.
  CHECK(stages[1].peak.phase == "backward");
  CHECK(at_peak(stages[1], memory_category::activations) /
            at_peak(stages[2], memory_category::activations) ==
        doctest::Approx(1.5).epsilon(0.05));
  // 4 of 16 blocks each; the first stage adds the token embedding, the last the final norm and
  // (tied embeddings) its own copy of the embedding as the LM head: 128256 x 2048 fp32.
  std::uint64_t block = 0;
  for (const auto& t : spec.value().tensors)
    if (t.layer == 0) block += allocator_round(4 * t.numel());
  const double embedding = 128256.0 * 2048 * 4;
  CHECK(stages[1].trainable_params == stages[2].trainable_params);
  CHECK(static_cast<double>(stages[0].trainable_params - stages[1].trainable_params) ==
        128256.0 * 2048);
  CHECK(static_cast<double>(stages[3].trainable_params - stages[1].trainable_params) ==
        128256.0 * 2048 + 2048);
  CHECK(at_peak(stages[1], memory_category::weights) ==
        doctest::Approx(4.0 * static_cast<double>(block)).epsilon(0.01));
  CHECK(at_peak(stages[0], memory_category::weights) ==
        doctest::Approx(4.0 * static_cast<double>(block) + embedding).epsilon(0.01));
}

TEST_CASE("DP+TP: ZeRO shards each tensor-parallel rank's states over the data-parallel ranks") {
  const auto spec = llama_1b();
  REQUIRE(spec.ok());
  training_config config;
  config.seq_len = 128;
  auto single = estimate_training_step(spec.value(), config, gpu_spec{});
  config.tp_degree = 2;
  config.sharding = data_parallel::zero1;
  config.dp_degree = 4;
  auto hybrid = estimate_training_step(spec.value(), config, gpu_spec{});
  REQUIRE(single.ok());
  REQUIRE(hybrid.ok());
  REQUIRE(single.value().peak.phase == "optimizer step");
  REQUIRE(hybrid.value().peak.phase == "optimizer step");
  // Norms are replicated across the TP pair, so slightly more than 1/8.
  CHECK(at_peak(hybrid.value(), memory_category::optimizer_states) /
            at_peak(single.value(), memory_category::optimizer_states) ==
        doctest::Approx(1.0 / 8).epsilon(0.02));
}

TEST_CASE("DeepSpeed ZeRO and Gemini keep a 16-bit module with fp32 masters under AMP; DDP fp32") {
  const auto spec = llama_1b();
  REQUIRE(spec.ok());
  double params = 0;
  for (const auto& t : spec.value().tensors) params += static_cast<double>(t.numel());
  training_config config;
  config.seq_len = 128;
  config.dp_degree = 4;
  config.sharding = data_parallel::ddp;
  CHECK(full_model_weight_bytes(config) == 4);
  for (auto method :
       {data_parallel::zero1, data_parallel::zero2, data_parallel::zero3, data_parallel::gemini}) {
    config.sharding = method;
    CHECK(full_model_weight_bytes(config) == 2);
  }
  config.sharding = data_parallel::zero1;
  auto zero1 = estimate_training_step(spec.value(), config, gpu_spec{});
  REQUIRE(zero1.ok());
  // ZeRO-1 by hand: bf16 weights whole (2 bytes each), fp32 masters a quarter of 4 bytes each
  // (allocations rounded by the caching allocator, hence the tolerance).
  CHECK(at_peak(zero1.value(), memory_category::weights) ==
        doctest::Approx(2 * params).epsilon(1e-3));
  CHECK(at_peak(zero1.value(), memory_category::master_weights) ==
        doctest::Approx(params).epsilon(1e-3));
  // Stated fp32 weights (DeepSpeed's torch_autocast): no master copy.
  config.full_weight_bytes = 4;
  auto autocast = estimate_training_step(spec.value(), config, gpu_spec{});
  REQUIRE(autocast.ok());
  CHECK(at_peak(autocast.value(), memory_category::weights) ==
        doctest::Approx(4 * params).epsilon(1e-3));
  CHECK(at_peak(autocast.value(), memory_category::master_weights) == 0);
  // Pure 16-bit and fp32 compute store what they compute in.
  config.full_weight_bytes = 0;
  config.compute = compute_precision::pure_bf16;
  CHECK(full_model_weight_bytes(config) == 2);
  config.compute = compute_precision::fp32;
  CHECK(full_model_weight_bytes(config) == 4);
}

TEST_CASE("FSDP mixed precision runs the residual stream in the gathered 16-bit dtype") {
  const auto spec = tiny_llama();
  REQUIRE(spec.ok());
  training_config config;  // full fine-tuning, fp32 weights under amp_bf16
  config.micro_batch = 2;
  config.seq_len = 64;
  config.grad_ckpt = true;  // what a block keeps: its input, the residual stream
  config.sharding = data_parallel::ddp;
  config.dp_degree = 2;
  auto ddp = estimate_training_step(spec.value(), config, gpu_spec{});
  config.sharding = data_parallel::fsdp_full_shard;
  auto fsdp = estimate_training_step(spec.value(), config, gpu_spec{});
  REQUIRE(ddp.ok());
  REQUIRE(fsdp.ok());
  // 2 blocks x 128 tokens x 256 features: fp32 under autocast, bf16 as FSDP gathers the
  // embedding.
  CHECK(ddp.value().saved_activation_bytes == 2 * 128 * 256 * 4);
  CHECK(fsdp.value().saved_activation_bytes == 2 * 128 * 256 * 2);
}

TEST_CASE("DeepSpeed ZeRO-3: reduce bucket, gradient partitions and persistent parameters") {
  const auto spec = llama_1b();
  REQUIRE(spec.ok());
  training_config config;
  config.seq_len = 128;
  config.sharding = data_parallel::zero3;
  config.dp_degree = 4;
  config.reduce_bucket_elements = 100000000;
  auto e = estimate_training_step(spec.value(), config, gpu_spec{});
  REQUIRE(e.ok());
  REQUIRE(e.value().peak.phase == "optimizer step");
  // The bf16 reduce bucket, made with the optimizer (stage3.py _setup_for_real_optimizer).
  CHECK(at_peak(e.value(), memory_category::communication_buffers) == 2e8);
  // The flat buffer of this rank's bf16 gradient partitions: a quarter of every tensor, rounded
  // up, in one allocation (which the allocator gives a whole 2 MiB-rounded segment).
  double partitions = 0;
  double persistent = 0;
  for (const auto& t : spec.value().tensors) {
    partitions += static_cast<double>((t.numel() * 2 + 3) / 4);
    if (t.numel() <= 100000) persistent += static_cast<double>(t.numel() * 2);
  }
  CHECK(at_peak(e.value(), memory_category::gradients) >= partitions);
  CHECK(at_peak(e.value(), memory_category::gradients) < partitions + (2 << 20));
  // Parameters of at most 1e5 elements (here the 33 RMSNorm weights of 2,048) stay gathered.
  CHECK(persistent == 33 * 2048 * 2);
  CHECK(at_peak(e.value(), memory_category::gathered_params) == doctest::Approx(persistent));
  config.persistence_threshold = 0;
  auto none = estimate_training_step(spec.value(), config, gpu_spec{});
  REQUIRE(none.ok());
  CHECK(at_peak(none.value(), memory_category::gathered_params) == 0);
  // FusedAdam steps in place; the step's temporaries peak as the flattened bf16 partition is
  // converted to fp32 (both alive): 6 bytes per partition element.
  CHECK(at_peak(e.value(), memory_category::optimizer_temporaries) ==
        doctest::Approx(3 * partitions).epsilon(1e-3));
}

TEST_CASE("LoRA under ZeRO: the engine makes the adapters 16-bit with fp32 masters") {
  const auto spec = llama_1b();
  REQUIRE(spec.ok());
  training_config config = lora_qv();
  config.compute = compute_precision::amp_bf16;
  config.sharding = data_parallel::zero2;
  config.dp_degree = 2;
  auto e = estimate_training_step(spec.value(), config, gpu_spec{});
  REQUIRE(e.ok());
  // Rank 8 on 16 blocks: q (2,048 -> 2,048) and v (2,048 -> 512) adapters,
  // 16 x (2 x 2,048 x 8 + 2,048 x 8 + 8 x 512) = 851,968 parameters.
  const double trainable = 851968.0;
  CHECK(e.value().trainable_params == 851968);
  CHECK(at_peak(e.value(), memory_category::adapters) == doctest::Approx(2 * trainable));
  CHECK(at_peak(e.value(), memory_category::master_weights) ==
        doctest::Approx(4 * trainable / 2).epsilon(1e-3));
  // No autocast: the converted module's activations are those of pure bf16 on one GPU (the
  // same 16-bit tensors), not autocast's (DDP over fp32 adapters keeps cast copies).
  config.optimizer_step = false;
  auto converted = estimate_training_step(spec.value(), config, gpu_spec{});
  config.sharding = data_parallel::ddp;
  auto autocast = estimate_training_step(spec.value(), config, gpu_spec{});
  config.sharding = data_parallel::none;
  config.dp_degree = 1;
  config.compute = compute_precision::pure_bf16;
  auto pure = estimate_training_step(spec.value(), config, gpu_spec{});
  REQUIRE(converted.ok());
  REQUIRE(autocast.ok());
  REQUIRE(pure.ok());
  CHECK(at_peak(converted.value(), memory_category::activations) ==
        at_peak(pure.value(), memory_category::activations));
  CHECK(at_peak(autocast.value(), memory_category::activations) >
        at_peak(converted.value(), memory_category::activations));
}

// LoRA in pure bf16 with checkpointing, 2 x 2,048 tokens: runs whose logits dwarf the rest.
training_config chunked_loss_run(framework_profile framework) {
  training_config config = lora_qv();
  config.framework = framework;
  config.compute = compute_precision::pure_bf16;
  config.grad_ckpt = true;
  config.micro_batch = 2;
  config.seq_len = 2048;
  return config;
}

TEST_CASE("torchtune's chunked cross-entropy is taken back chunk by chunk") {
  const auto spec = llama_1b();
  REQUIRE(spec.ok());
  training_config config = chunked_loss_run(framework_profile::torchtune);
  auto e = estimate_training_step(spec.value(), config, gpu_spec{});
  REQUIRE(e.ok());
  // 4,096 tokens x 128,256 vocabulary. After the loss: the bf16 output chunks (2 bytes each),
  // every chunk's fp32 log-softmax (4) and the last chunk's fp32 upcast (4 / 8). The backward
  // adds only one chunk's two fp32 gradients (2 x 4 / 8) after the bf16 chunks are deleted, so
  // the peak stays at the loss; taken back whole (12 bytes an element) it would not.
  const double tv = 4096.0 * 128256;
  CHECK(e.value().peak.phase == "loss");
  CHECK(at_peak(e.value(), memory_category::logits_and_loss) ==
        doctest::Approx(tv * (2 + 4 + 0.5)).epsilon(1e-6));
}

TEST_CASE("a plain cross-entropy keeps the loss in the logits' dtype outside autocast") {
  const auto spec = llama_1b();
  REQUIRE(spec.ok());
  training_config config = chunked_loss_run(framework_profile::transformers);
  auto model = estimate_training_step(spec.value(), config, gpu_spec{});
  config.loss = loss_kind::plain_cross_entropy;
  auto plain = estimate_training_step(spec.value(), config, gpu_spec{});
  REQUIRE(model.ok());
  REQUIRE(plain.ok());
  // 4,096 tokens x 128,256 vocabulary in pure bf16. The model's loss opens the backward with its
  // fp32 log-softmax and two fp32 gradients (12 bytes an element); the plain one with the same
  // three in bf16 (6). Its forward held the logits, their shifted copy (one position fewer per
  // sequence) and the log-softmax, 2 bytes each: 2 x 128,256 elements under that.
  const double tv = 4096.0 * 128256;
  CHECK(at_peak(model.value(), memory_category::logits_and_loss) ==
        doctest::Approx(12 * tv).epsilon(1e-6));
  CHECK(at_peak(plain.value(), memory_category::logits_and_loss) ==
        doctest::Approx(6 * tv).epsilon(1e-6));
  // Under autocast the plain loss's forward adds the shifted 16-bit copy to the model's (bf16
  // logits, fp32 cast, fp32 log-softmax), and the backward is the model's.
  config.compute = compute_precision::amp_bf16;
  config.optimizer_step = false;
  config.loss = loss_kind::model;
  auto amp_model = estimate_training_step(spec.value(), config, gpu_spec{});
  config.loss = loss_kind::plain_cross_entropy;
  auto amp_plain = estimate_training_step(spec.value(), config, gpu_spec{});
  REQUIRE(amp_model.ok());
  REQUIRE(amp_plain.ok());
  CHECK(at_peak(amp_model.value(), memory_category::logits_and_loss) ==
        doctest::Approx(12 * tv).epsilon(1e-6));
  CHECK(at_peak(amp_plain.value(), memory_category::logits_and_loss) ==
        doctest::Approx(12 * tv).epsilon(1e-6));
}

TEST_CASE("a loop that holds the model's outputs keeps the logits through the backward") {
  const auto spec = llama_1b();
  REQUIRE(spec.ok());
  training_config config = chunked_loss_run(framework_profile::transformers);
  config.keep_outputs = true;
  auto e = estimate_training_step(spec.value(), config, gpu_spec{});
  REQUIRE(e.ok());
  // 4,096 tokens x 128,256 vocabulary in pure bf16: the backward opens with the loss's fp32
  // log-softmax and two fp32 gradients (12 bytes an element, as without) beside the held bf16
  // logits (2).
  const double tv = 4096.0 * 128256;
  CHECK(e.value().peak.phase == "backward");
  CHECK(at_peak(e.value(), memory_category::logits_and_loss) ==
        doctest::Approx(14 * tv).epsilon(1e-6));
}

TEST_CASE("litgpt's fp32 logits: held until the next forward returns, their loss chunked") {
  const auto spec = llama_1b();
  REQUIRE(spec.ok());
  training_config config = chunked_loss_run(framework_profile::litgpt);
  // 4,096 tokens x 128,256 vocabulary; the loss is taken in chunks of 2 x 128 tokens (1/16).
  const double tv = 4096.0 * 128256;
  const double chunk = tv / 16;
  // One forward and backward: the fp32 logits (4 bytes an element) and every chunk's fp32
  // log-softmax (4), then one chunk's two fp32 gradients as the backward starts. Taken back
  // whole, it would add two full fp32 gradients instead (16 bytes an element).
  config.optimizer_step = false;
  auto once = estimate_training_step(spec.value(), config, gpu_spec{});
  REQUIRE(once.ok());
  CHECK(once.value().peak.phase == "backward");
  CHECK(at_peak(once.value(), memory_category::logits_and_loss) ==
        doctest::Approx(4 * tv + 4 * tv + 8 * chunk).epsilon(1e-6));
  // The next step's forward ends with the last step's fp32 logits still held by the loop's
  // `logits`, beside the new bf16 chunks (2) and their fp32 casts (4).
  config.optimizer_step = true;
  auto stepped = estimate_training_step(spec.value(), config, gpu_spec{});
  REQUIRE(stepped.ok());
  CHECK(stepped.value().peak.phase == "loss");
  CHECK(at_peak(stepped.value(), memory_category::logits_and_loss) ==
        doctest::Approx(4 * tv + 2 * tv + 4 * tv).epsilon(1e-6));
}

TEST_CASE("litgpt's loss chunks never exceed a pooled classifier's output") {
  const auto spec = bert_classifier();
  REQUIRE(spec.ok());
  training_config config;
  config.framework = framework_profile::litgpt;
  config.compute = compute_precision::pure_bf16;
  config.micro_batch = 2;
  config.seq_len = 512;
  auto e = estimate_training_step(spec.value(), config, gpu_spec{});
  REQUIRE(e.ok());
  // 2 sequences x 3 labels: a few fp32 logits, their log-softmax and gradients, in 512-byte
  // blocks.
  CHECK(at_peak(e.value(), memory_category::logits_and_loss) <= 8 * 512);
}

TEST_CASE("gradient accumulation under FSDP keeps every unit's unsharded gradient (no_sync)") {
  const auto spec = llama_1b();
  REQUIRE(spec.ok());
  training_config config;
  config.optimizer_step = false;
  config.sharding = data_parallel::fsdp_full_shard;
  config.dp_degree = 4;
  auto once = estimate_training_step(spec.value(), config, gpu_spec{});
  config.grad_accumulation = 8;
  auto accumulated = estimate_training_step(spec.value(), config, gpu_spec{});
  REQUIRE(once.ok());
  REQUIRE(accumulated.ok());
  // The bf16 (MixedPrecision param_dtype) gradient of all 1,235,814,400 parameters waits for
  // the last micro-batch's reduce-scatter; without accumulation only shards and one unit's
  // gradient exist.
  const double unsharded = 1235814400.0 * 2;
  CHECK(at_peak(accumulated.value(), memory_category::gradients) >= 0.99 * unsharded);
  CHECK(at_peak(accumulated.value(), memory_category::gradients) <= 1.30 * unsharded);
  CHECK(at_peak(once.value(), memory_category::gradients) < 0.4 * unsharded);
  // torchtune reduce-scatters on every micro-batch (no no_sync): only this rank's fp32 shards
  // (a quarter of the fp32 parameters) accumulate; the peak comes with the embedding unit's
  // bf16 gradient (the tied 128,256 x 2,048 matrix) waiting for its reduce-scatter.
  config.framework = framework_profile::torchtune;
  auto torchtune = estimate_training_step(spec.value(), config, gpu_spec{});
  REQUIRE(torchtune.ok());
  const double shards = 1235814400.0 * 4 / 4;
  CHECK(at_peak(torchtune.value(), memory_category::gradients) ==
        doctest::Approx(shards + 128256.0 * 2048 * 2).epsilon(0.005));
}

}  // namespace
}  // namespace gpumem

namespace gpumem {
namespace {

// Llama-3.2-1B's blocks (16, hidden 2048, MLP 8192) with small logits, so the peak is where
// activations are, under LoRA q/v in pure bf16 over 4 x 1,024 checkpointed tokens: only block
// inputs are saved, so what bitsandbytes holds stands out.
model_spec checkpointed_1b() {
  auto spec = llama_1b();
  REQUIRE(spec.ok());
  spec.value().vocab_size = 1024;
  return spec.value();
}
training_config checkpointed_lora_qv() {
  training_config c = lora_qv();
  c.compute = compute_precision::pure_bf16;
  c.micro_batch = 4;
  c.seq_len = 1024;
  c.grad_ckpt = true;
  return c;
}
// The last step's inputs of every 4-bit linear (recomputed in backward) alive in the next
// forward: at least the MLP down projection's, T x 8192 in bf16, in each of the 16 blocks.
constexpr double held_down_inputs = 16 * 4.0 * 1024 * 8192 * 2;

// Activations at the peak of `after` beyond those of `before`.
double activations_gain(const model_spec& spec, const training_config& before,
                        const training_config& after) {
  auto a = estimate_training_step(spec, before, gpu_spec{});
  auto b = estimate_training_step(spec, after, gpu_spec{});
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  return at_peak(b.value(), memory_category::activations) -
         at_peak(a.value(), memory_category::activations);
}

TEST_CASE("litgpt QLoRA: bitsandbytes' 4-bit inputs live on into the next step's forward") {
  training_config bf16 = checkpointed_lora_qv();
  bf16.framework = framework_profile::litgpt;
  training_config nf4 = bf16;
  nf4.quantization = base_quantization::nf4;
  CHECK(activations_gain(checkpointed_1b(), bf16, nf4) >= held_down_inputs);
}

TEST_CASE("a transformers loop keeping its outputs keeps the 4-bit inputs into the next forward") {
  training_config dropped = checkpointed_lora_qv();
  dropped.quantization = base_quantization::nf4;
  training_config kept = dropped;
  kept.keep_outputs = true;  // `outputs = model(**batch)` lives until the next forward returns
  CHECK(activations_gain(checkpointed_1b(), dropped, kept) >= held_down_inputs);
}

}  // namespace
}  // namespace gpumem

namespace gpumem {
namespace {

TEST_CASE("BERT: an encoder trains; a classification head has no vocabulary-wide logits") {
  const auto presets = test::read_presets();
  model_options masked;
  masked.task_head = "masked_lm";
  const auto mlm = parse_model_config(presets.at("bert-large-uncased").at("config"), masked, "c");
  const auto cls = bert_classifier();
  REQUIRE(mlm.ok());
  REQUIRE(cls.ok());
  training_config c;
  c.micro_batch = 4;
  c.seq_len = 512;
  c.compute = compute_precision::fp32;
  auto a = estimate_training_step(mlm.value(), c, gpu_spec{});
  auto b = estimate_training_step(cls.value(), c, gpu_spec{});
  REQUIRE(a.ok());
  REQUIRE(b.ok());
  // MLM: fp32 logits over 30,522 tokens for 2,048 positions (with log-softmax's and their
  // gradients); classification: 4 rows of 3 labels.
  CHECK(at_peak(a.value(), memory_category::logits_and_loss) >= 2.0 * 4 * 2048 * 30522);
  CHECK(at_peak(b.value(), memory_category::logits_and_loss) < 1024 * 1024);
}

}  // namespace
}  // namespace gpumem

namespace gpumem {
namespace {

// Llama-2-7B as litgpt fine-tunes it with LLaMA-Adapter, in bf16-true.
training_config llama_adapter(finetune_kind kind) {
  training_config c;
  c.finetune = kind;
  c.framework = framework_profile::litgpt;
  c.compute = compute_precision::pure_bf16;
  c.base_weight_bytes = 2;
  c.seq_len = 256;
  return c;
}

TEST_CASE("LLaMA-Adapter trains a prompt and a gate per block from layer 2; v2 also scales") {
  const auto presets = test::read_presets();
  const auto spec =
      parse_model_config(presets.at("meta-llama/Llama-2-7b-hf").at("config"), {}, "c");
  REQUIRE(spec.ok());
  auto v1 = estimate_training_step(spec.value(), llama_adapter(finetune_kind::llama_adapter_v1),
                                   gpu_spec{});
  REQUIRE(v1.ok());
  // 30 blocks x (10 x 4096 prompt + 32 gates): litgpt's own count in its resource tables.
  CHECK(v1.value().trainable_params == 1229760);
  auto v2 = estimate_training_step(spec.value(), llama_adapter(finetune_kind::llama_adapter_v2),
                                   gpu_spec{});
  REQUIRE(v2.ok());
  // + RMSNorm weights (2 per block and the final one) + a scale and a bias per output feature of
  // every linear: q/k/v 12,288, o 4,096, gate and up 11,008 each, down 4,096, LM head 32,000.
  const std::uint64_t norms = 2 * 4096 * 32 + 4096;
  const std::uint64_t scales = 2 * (32 * (12288 + 4096 + 11008 + 11008 + 4096) + 32000);
  CHECK(v2.value().trainable_params == 1229760 + norms + scales);
  // A model no deeper than the start layer has nothing to adapt.
  auto shallow_config = presets.at("meta-llama/Llama-3.2-1B").at("config");
  shallow_config["num_hidden_layers"] = 2;
  const auto shallow = parse_model_config(shallow_config, {}, "c");
  REQUIRE(shallow.ok());
  auto refused = estimate_training_step(shallow.value(),
                                        llama_adapter(finetune_kind::llama_adapter_v1), gpu_spec{});
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.failure().field == "workload.finetune");
}

TEST_CASE("LLaMA-Adapter: the blocks before adapter_start_layer keep nothing for backward") {
  const auto presets = test::read_presets();
  auto config = presets.at("meta-llama/Llama-3.2-1B").at("config");
  const auto deep = parse_model_config(config, {}, "c");
  config["num_hidden_layers"] = 14;
  const auto shallow = parse_model_config(config, {}, "c");
  REQUIRE(deep.ok());
  REQUIRE(shallow.ok());
  training_config c = llama_adapter(finetune_kind::llama_adapter_v1);
  c.optimizer_step = false;
  auto with_frozen_start = estimate_training_step(deep.value(), c, gpu_spec{});
  c.adapter_start_layer = 0;
  auto adapted_throughout = estimate_training_step(shallow.value(), c, gpu_spec{});
  REQUIRE(with_frozen_start.ok());
  REQUIRE(adapted_throughout.ok());
  // 16 blocks with adapters from block 2 save what 14 blocks adapted from block 0 save.
  CHECK(at_peak(with_frozen_start.value(), memory_category::activations) ==
        at_peak(adapted_throughout.value(), memory_category::activations));
}

}  // namespace
}  // namespace gpumem

namespace gpumem {
namespace {

TEST_CASE("LoRA targets named Llama-style adapt a fused or differently named module by role") {
  const auto presets = test::read_presets();
  // Pythia (GPT-NeoX): query_key_value, dense, dense_h_to_4h, dense_4h_to_h; 24 blocks of 1,024
  // with an MLP of 4,096, the LM head embed_out [50,304 x 1,024].
  const auto neox =
      parse_model_config(presets.at("EleutherAI/pythia-410m-deduped").at("config"), {}, "c");
  REQUIRE(neox.ok());
  training_config c = lora_qv();  // q_proj, v_proj, rank 8
  c.seq_len = 64;
  auto qv = estimate_training_step(neox.value(), c, gpu_spec{});
  REQUIRE(qv.ok());
  // One adapter on the fused matrix: A [8 x 1,024] and B [3,072 x 8] per block.
  CHECK(qv.value().trainable_params == 24 * 8 * (1024 + 3072));
  c.lora_targets = {"o_proj", "up_proj", "down_proj", "lm_head"};
  auto rest = estimate_training_step(neox.value(), c, gpu_spec{});
  REQUIRE(rest.ok());
  CHECK(rest.value().trainable_params ==
        24 * 8 * ((1024 + 1024) + (1024 + 4096) + (4096 + 1024)) + 8 * (1024 + 50304));
  // A model with the named module adapts only that one (Llama: q_proj, not k_proj or v_proj).
  const auto llama = llama_1b();
  REQUIRE(llama.ok());
  c.lora_targets = {"q_proj"};
  auto q = estimate_training_step(llama.value(), c, gpu_spec{});
  REQUIRE(q.ok());
  CHECK(q.value().trainable_params == 16 * 8 * (2048 + 2048));
}

}  // namespace
}  // namespace gpumem

namespace gpumem {
namespace {

// A small decoder, as Qwen3 (q_norm, k_norm) and as Llama with the same widths.
nlohmann::json small_decoder(const char* model_type) {
  return {{"model_type", model_type}, {"hidden_size", 1024},       {"intermediate_size", 3072},
          {"num_hidden_layers", 4},   {"num_attention_heads", 16}, {"num_key_value_heads", 4},
          {"head_dim", 128},          {"vocab_size", 1000},        {"tie_word_embeddings", true}};
}

model_spec small_model(const char* model_type) {
  auto spec = parse_model_config(small_decoder(model_type), {}, "c");
  REQUIRE(spec.ok());
  return spec.value();
}

// Parameters and activations at the peak that the small decoder has as `model_type` beyond what
// it has as `base`.
std::int64_t extra_params(const char* model_type, const char* base) {
  return static_cast<std::int64_t>(count_params(small_model(model_type)).value().total) -
         static_cast<std::int64_t>(count_params(small_model(base)).value().total);
}
double extra_activations(const char* model_type, const char* base, const training_config& c) {
  auto with = estimate_training_step(small_model(model_type), c, gpu_spec{});
  auto without = estimate_training_step(small_model(base), c, gpu_spec{});
  REQUIRE(with.ok());
  REQUIRE(without.ok());
  return at_peak(with.value(), memory_category::activations) -
         at_peak(without.value(), memory_category::activations);
}

TEST_CASE("Qwen3's q_norm and k_norm keep each head's fp32 input and an inverse RMS per head") {
  CHECK(small_model("qwen3").architecture == "Qwen3ForCausalLM");
  // Two head_dim norms a block: 4 x 2 x 128 parameters more than Llama.
  CHECK(extra_params("qwen3", "llama") == 4 * 2 * 128);
  training_config c = lora_qv();
  c.compute = compute_precision::pure_bf16;
  c.seq_len = 512;
  c.optimizer_step = false;
  // Per block and token: fp32 copies of q (16 x 128) and k (4 x 128), an fp32 inverse RMS for
  // each of the 20 heads; the norms' weights are frozen under LoRA.
  const double per_block = 512.0 * (4 * (2048 + 512) + 4 * 20);
  CHECK(extra_activations("qwen3", "llama", c) == doctest::Approx(4 * per_block).epsilon(1e-9));

  // Gemma 3 over Gemma at 2,048 tokens (within Gemma 3's 4,096-token window): the same q/k norms
  // and two post-norms over 16-bit 1024-wide outputs (the caching allocator may hand out a block
  // up to 1 MiB larger than asked in either replay, hence the 1 % margin).
  c.seq_len = 2048;
  const double qk_norms = 2048.0 * (4 * (2048 + 512) + 4 * 20);
  const double post_norms = 2 * 2048.0 * (4 * 1024 + 4);
  CHECK(extra_activations("gemma3_text", "gemma", c) ==
        doctest::Approx(4 * (qk_norms + post_norms)).epsilon(0.01));
}

TEST_CASE("Dropout on the embeddings keeps a mask of a byte a feature to the step's end") {
  const auto gpt2 = [](double embd_pdrop) {
    auto spec = parse_model_config({{"model_type", "gpt2"},
                                    {"n_embd", 768},
                                    {"n_layer", 2},
                                    {"n_head", 12},
                                    {"vocab_size", 1000},
                                    {"embd_pdrop", embd_pdrop}},
                                   {}, "c");
    REQUIRE(spec.ok());
    return spec.value();
  };
  CHECK(gpt2(0.1).embedding_dropout_features == 768);  // GPT2Model: self.drop(embeddings)
  CHECK(gpt2(0.0).embedding_dropout_features == 0);
  training_config c;
  c.compute = compute_precision::amp_bf16;
  c.micro_batch = 8;
  c.seq_len = 1024;
  const auto activations = [&](const model_spec& spec) {
    auto e = estimate_training_step(spec, c, gpu_spec{});
    REQUIRE(e.ok());
    return at_peak(e.value(), memory_category::activations);
  };
  // 8 x 1,024 tokens of 768 features: 6 MiB (1 % for the caching allocator's blocks).
  CHECK(activations(gpt2(0.1)) - activations(gpt2(0.0)) ==
        doctest::Approx(8.0 * 1024 * 768).epsilon(0.01));
}

TEST_CASE("A sliding layer at its window: SDPA's mask in the query's dtype, K/V on every head") {
  training_config c = lora_qv();
  c.compute = compute_precision::pure_bf16;
  c.optimizer_step = false;
  const auto saved = [&](const model_spec& spec, std::uint64_t seq) {
    c.seq_len = seq;
    auto e = estimate_training_step(spec, c, gpu_spec{});
    REQUIRE(e.ok());
    return e.value().saved_activation_bytes;
  };
  const model_spec gemma3 = small_model("gemma3_text");  // four layers sliding over 4,096
  model_spec unwindowed = gemma3;
  for (auto& layer : unwindowed.layers) layer.sliding_window_tokens = 0;
  // Under the window transformers passes no mask: nothing changes.
  CHECK(saved(gemma3, 4095) == saved(unwindowed, 4095));
  // From the window on, each layer keeps the bf16 additive mask of 4096 x 4096 and K/V repeated
  // from 4 to 16 heads of 128 (2 x 2 x 4096 x (2048 - 512) more).
  const std::uint64_t per_layer = 2ULL * 4096 * 4096 + 2ULL * 2 * 4096 * (2048 - 512);
  CHECK(saved(gemma3, 4096) - saved(unwindowed, 4096) == 4 * per_layer);
  // Checkpointed, every block takes the boolean mask (4096 x 4096 bytes) as an input kept to the
  // first block's backward, beside the recomputed block's additive mask.
  c.grad_ckpt = true;
  const auto peak = [&](const model_spec& spec) {
    auto e = estimate_training_step(spec, c, gpu_spec{});
    REQUIRE(e.ok());
    return e.value().peak.allocated;
  };
  CHECK(peak(gemma3) - peak(unwindowed) >= 4096ULL * 4096 + 2ULL * 4096 * 4096);
  c.grad_ckpt = false;
  // FlashAttention takes the window itself; eager attention adds the mask without keeping it.
  c.attention = attention_kernel::flash;
  CHECK(saved(gemma3, 4096) == saved(unwindowed, 4096));
  c.attention = attention_kernel::eager;
  CHECK(saved(gemma3, 4096) == saved(unwindowed, 4096));
}

TEST_CASE("OLMo 2: norms after attention and MLP only, q/k norms over all heads at once") {
  const model_spec olmo2 = small_model("olmo2");
  CHECK(olmo2.architecture == "Olmo2ForCausalLM");
  CHECK_FALSE(olmo2.pre_norms);
  // q_norm (16 x 128) and k_norm (4 x 128) a block; its two post-norms replace Llama's two.
  CHECK(extra_params("olmo2", "llama") == 4 * (2048 + 512));
  training_config c = lora_qv();
  c.compute = compute_precision::pure_bf16;
  c.seq_len = 4096;
  c.optimizer_step = false;
  // The post-norms keep what Llama's pre-norms keep (fp32 copies of 16-bit inputs and an inverse
  // RMS a token); the q/k norms add fp32 copies of q and k and one inverse RMS a token each (1 %
  // for the caching allocator's block sizes).
  const double per_block = 4096.0 * (4 * (2048 + 512) + 4 * 2);
  CHECK(extra_activations("olmo2", "llama", c) == doctest::Approx(4 * per_block).epsilon(0.01));
  // unsloth's fast path is Llama's block: refused.
  training_config u = c;
  u.framework = framework_profile::unsloth;
  u.lora_targets = {"all-linear"};
  CHECK(estimate_training_step(olmo2, u, gpu_spec{}).failure().field == "model");
}

TEST_CASE("unsloth keeps Qwen3's q/k norms as its RMSNorm kernel does: 16-bit input, fp32 rows") {
  training_config c;
  c.finetune = finetune_kind::lora;
  c.lora_targets = {"all-linear"};
  c.framework = framework_profile::unsloth;
  c.seq_len = 8192;
  c.optimizer_step = false;
  // Per block and token: bf16 q (2048) and k (512) and an fp32 inverse RMS for each of 20 heads
  // (1 % for where the backward's peak falls, which moves the cuBLAS workspace and a gradient).
  const double per_block = 8192.0 * (2 * (2048 + 512) + 4 * 20);
  CHECK(extra_activations("qwen3", "llama", c) == doctest::Approx(4 * per_block).epsilon(0.01));
}

TEST_CASE("The Gemma 3 wrapper's own loss returns fp32 logits, which a loop holding them keeps") {
  auto wrapper = parse_model_config(test::read_json("tests/configs/gemma-3-4b.json"), {}, "c");
  REQUIRE(wrapper.ok());
  CHECK(wrapper.value().loss == model_loss::plain_fp32);
  training_config c = lora_qv();
  c.compute = compute_precision::pure_bf16;
  c.seq_len = 512;
  c.optimizer_step = false;
  c.keep_outputs = true;
  const auto loss_peak = [&](const model_spec& spec) {
    auto e = estimate_training_step(spec, c, gpu_spec{});
    REQUIRE(e.ok());
    CHECK(e.value().peak.phase == "backward");
    return at_peak(e.value(), memory_category::logits_and_loss);
  };
  const double own = loss_peak(wrapper.value());
  wrapper.value().loss = model_loss::causal_lm;
  const double causal_lm = loss_peak(wrapper.value());
  // 512 tokens of 262,208 logits. The loss's backward holds two fp32 gradients and log-softmax's
  // output either way; the logits the loop holds are the wrapper's fp32 upcast (logits.float()
  // is what it returns) rather than ForCausalLM's bf16 ones. (Its forward holds the fp32 logits,
  // their shifted copy and log-softmax's output, as much as that backward.)
  const double tv = 512.0 * 262208;
  CHECK(own - causal_lm == doctest::Approx(2 * tv).epsilon(0.01));
}

TEST_CASE("Gemma 3's vision tower is loaded but text-only training gives it no gradient") {
  const auto multimodal =
      parse_model_config(test::read_json("tests/configs/gemma-3-4b.json"), {}, "c");
  // The same language model on its own, with Gemma3TextConfig's defaults spelled out.
  nlohmann::json text = test::read_json("tests/configs/gemma-3-4b.json").at("text_config");
  text.update({{"vocab_size", 262208},
               {"num_attention_heads", 8},
               {"num_key_value_heads", 4},
               {"head_dim", 256},
               {"hidden_activation", "gelu_pytorch_tanh"}});
  const auto language = parse_model_config(text, {}, "c");
  REQUIRE(multimodal.ok());
  REQUIRE(language.ok());
  CHECK(multimodal.value().architecture == "Gemma3ForConditionalGeneration");
  CHECK(!multimodal.value().warnings.empty());
  const std::uint64_t vision = count_params(multimodal.value()).value().groups.vision;
  // PEFT's q_proj and v_proj also match SigLIP's 27 layers (1152 wide): bf16 adapters of rank 8.
  const double tower_adapters = 27.0 * 2 * 8 * (1152 + 1152) * 2;
  for (const auto finetune : {finetune_kind::full, finetune_kind::lora}) {
    CAPTURE(finetune == finetune_kind::full);
    training_config c = finetune == finetune_kind::full ? training_config{} : lora_qv();
    c.compute = compute_precision::pure_bf16;
    c.seq_len = 1024;
    c.grad_ckpt = true;
    auto with_tower = estimate_training_step(multimodal.value(), c, gpu_spec{});
    auto without = estimate_training_step(language.value(), c, gpu_spec{});
    REQUIRE(with_tower.ok());
    REQUIRE(without.ok());
    CHECK(with_tower.value().trainable_params == without.value().trainable_params);
    // Only the tower's bf16 weights (and adapters) come on top (the caching allocator's blocks
    // may be a little larger than the tensors, hence the 2 % margin).
    const double tower = 2.0 * static_cast<double>(vision);
    const double adapters = finetune == finetune_kind::lora ? tower_adapters : 0.0;
    CHECK(at_peak(with_tower.value(), memory_category::weights) -
              at_peak(without.value(), memory_category::weights) ==
          doctest::Approx(tower).epsilon(0.02));
    CHECK(static_cast<double>(with_tower.value().peak.allocated - without.value().peak.allocated) ==
          doctest::Approx(tower + adapters).epsilon(0.02));
    CHECK(at_peak(with_tower.value(), memory_category::adapters) -
              at_peak(without.value(), memory_category::adapters) ==
          doctest::Approx(adapters).epsilon(0.01));
  }
  // Under DDP the unused tower's gradients are zero-filled (find_unused_parameters), so it
  // trains as far as memory goes.
  training_config ddp;
  ddp.compute = compute_precision::pure_bf16;
  ddp.seq_len = 1024;
  ddp.sharding = data_parallel::ddp;
  ddp.dp_degree = 2;
  CHECK(estimate_training_step(multimodal.value(), ddp, gpu_spec{}).value().trainable_params -
            estimate_training_step(language.value(), ddp, gpu_spec{}).value().trainable_params ==
        vision);
}

TEST_CASE("training steps whose byte counts could pass 2^53 are refused, not wrapped") {
  const auto spec = llama_1b();
  REQUIRE(spec.ok());
  training_config c;
  c.seq_len = 1 << 24;
  const std::uint64_t largest = largest_sized_micro_batch(spec.value(), c.seq_len, false);
  REQUIRE(largest > 0);
  c.micro_batch = largest;
  c.optimizer_step = false;
  auto at_limit = estimate_training_step(spec.value(), c, gpu_spec{});
  REQUIRE(at_limit.ok());
  CHECK(at_limit.value().peak.allocated < (1ULL << 53));
  c.micro_batch = largest + 1;
  auto beyond = estimate_training_step(spec.value(), c, gpu_spec{});
  REQUIRE(!beyond.ok());
  CHECK(beyond.failure().code == "request.too_large");
  CHECK(beyond.failure().field == "workload.micro_batch");
  // Eager attention's scores count too: fewer sequences fit the bound.
  CHECK(largest_sized_micro_batch(spec.value(), c.seq_len, true) < largest);
}

TEST_CASE("Gemma 2's soft-capped attention: litgpt computes it by hand, keeping the tanh output") {
  const auto presets = test::read_presets();
  auto config = presets.at("google/gemma-2-9b").at("config");
  config.erase("attn_logit_softcapping");
  const auto capped = parse_model_config(config, {}, "c");  // Gemma2Config's default: 50
  config["attn_logit_softcapping"] = nullptr;
  const auto uncapped = parse_model_config(config, {}, "c");
  REQUIRE(capped.ok());
  REQUIRE(uncapped.ok());
  CHECK(capped.value().attention_softcap == 50.0);
  CHECK(uncapped.value().attention_softcap == 0.0);
  training_config c = lora_qv();
  c.framework = framework_profile::litgpt;
  c.compute = compute_precision::pure_bf16;
  c.seq_len = 256;
  c.optimizer_step = false;
  auto sdpa_asked = estimate_training_step(capped.value(), c, gpu_spec{});
  c.attention = attention_kernel::eager;
  auto eager = estimate_training_step(uncapped.value(), c, gpu_spec{});
  REQUIRE(sdpa_asked.ok());
  REQUIRE(eager.ok());
  // 42 blocks x 16 heads x 256 x 256 scores, one bf16 tanh output each, kept for the backward.
  CHECK(sdpa_asked.value().saved_activation_bytes - eager.value().saved_activation_bytes ==
        42ULL * 16 * 256 * 256 * 2);
}

}  // namespace
}  // namespace gpumem

namespace gpumem {
namespace {

TEST_CASE("a 16-bit module under DeepSpeed or Colossal-AI runs without autocast") {
  const auto presets = test::read_presets();
  // BERT-large: 24 blocks, 16 heads; its eager softmax takes the scores' dtype.
  const auto bert = parse_model_config(presets.at("bert-large-uncased").at("config"), {}, "c");
  REQUIRE(bert.ok());
  training_config c;
  c.compute = compute_precision::amp_fp16;
  c.attention = attention_kernel::eager;
  c.micro_batch = 8;  // activations dominate: the peak opens the backward
  c.seq_len = 512;
  c.optimizer_step = false;
  c.dp_degree = 2;
  c.sharding = data_parallel::ddp;  // torch autocast over fp32 weights
  auto autocast = estimate_training_step(bert.value(), c, gpu_spec{});
  c.sharding = data_parallel::zero2;  // the engine's fp16 module, no autocast
  auto converted = estimate_training_step(bert.value(), c, gpu_spec{});
  REQUIRE(autocast.ok());
  REQUIRE(converted.ok());
  // Autocast keeps each block's fp32 softmax output where the fp16 module keeps fp16 ones (both
  // keep dropout's mask and its fp16 output for the product with V), and LayerNorm's fp32
  // outputs: at least 24 x 8 x 16 x 512 x 512 x 2 bytes fewer.
  const double scores = 24.0 * 8 * 16 * 512 * 512;
  CHECK(at_peak(autocast.value(), memory_category::activations) -
            at_peak(converted.value(), memory_category::activations) >=
        2 * scores);
  // Llama-style code asks for an fp32 softmax itself: the fp16 module keeps it too.
  const auto llama = llama_1b();
  REQUIRE(llama.ok());
  CHECK(llama.value().eager_softmax_fp32);
  CHECK_FALSE(bert.value().eager_softmax_fp32);
  // So do BLOOM's and Phi's attention modules.
  const auto bloom = parse_model_config(presets.at("bigscience/bloom-560m").at("config"), {}, "c");
  const auto phi = parse_model_config(presets.at("microsoft/phi-2").at("config"), {}, "c");
  REQUIRE(bloom.ok());
  REQUIRE(phi.ok());
  CHECK(bloom.value().eager_softmax_fp32);
  CHECK(phi.value().eager_softmax_fp32);
  // BLOOM (eager only) under ZeRO keeps 24 blocks x 4 x 16 heads x 512 x 512 fp32 softmax
  // outputs beside their fp16 casts: 4 bytes a score more than with the flag off.
  model_spec plain = bloom.value();
  plain.eager_softmax_fp32 = false;
  c.micro_batch = 4;
  auto bloom_fp32 = estimate_training_step(bloom.value(), c, gpu_spec{});
  auto bloom_fp16 = estimate_training_step(plain, c, gpu_spec{});
  REQUIRE(bloom_fp32.ok());
  REQUIRE(bloom_fp16.ok());
  CHECK(at_peak(bloom_fp32.value(), memory_category::activations) -
            at_peak(bloom_fp16.value(), memory_category::activations) ==
        doctest::Approx(4.0 * 24 * 4 * 16 * 512 * 512).epsilon(0.01));
}

TEST_CASE("BERT's dense layers: attention output, MLP input and MLP output by their paths") {
  const auto presets = test::read_presets();
  const auto bert = parse_model_config(presets.at("bert-large-uncased").at("config"), {}, "c");
  REQUIRE(bert.ok());
  training_config c;
  c.finetune = finetune_kind::lora;
  c.seq_len = 64;
  auto trainable = [&](std::vector<std::string> targets) {
    c.lora_targets = std::move(targets);
    auto e = estimate_training_step(bert.value(), c, gpu_spec{});
    REQUIRE(e.ok());
    return e.value().trainable_params;
  };
  const std::uint64_t r = 8;
  CHECK(trainable({"o_proj"}) == 24 * r * (1024 + 1024));     // attention.output.dense
  CHECK(trainable({"up_proj"}) == 24 * r * (1024 + 4096));    // intermediate.dense
  CHECK(trainable({"down_proj"}) == 24 * r * (4096 + 1024));  // output.dense
  CHECK(trainable({"q_proj"}) == 24 * r * (1024 + 1024));     // query alone
}

}  // namespace
}  // namespace gpumem

namespace gpumem {
namespace {

// unsloth on Llama-3.2-1B (16 blocks; hidden 2048, q 2048, k/v 512, MLP 8192), LoRA on every
// block linear, 2 x 2,048 tokens.
training_config unsloth_run() {
  training_config config;
  config.finetune = finetune_kind::lora;
  config.lora_targets = {"all-linear"};
  config.framework = framework_profile::unsloth;
  config.micro_batch = 2;
  config.seq_len = 2048;
  return config;
}

TEST_CASE("unsloth's fast LoRA blocks keep norms' inputs, q/k/v, output, gate and up") {
  const auto spec = llama_1b();
  REQUIRE(spec.ok());
  auto e = estimate_training_step(spec.value(), unsloth_run(), gpu_spec{});
  REQUIRE(e.ok());
  // Per block and token: two RMSNorm inputs (2 x 2048 x 2 bytes + 4), two norm outputs
  // (2 x 2048 x 2), Q/K/V (3072 x 2), the attention output (2048 x 2), log-sum-exp (32 heads x
  // 4), gate and up (2 x 8192 x 2).
  const double per_token =
      2 * (2048.0 * 2 + 4) + 2 * 2048.0 * 2 + 3072.0 * 2 + 2048.0 * 2 + 32.0 * 4 + 2 * 8192.0 * 2;
  CHECK(static_cast<double>(e.value().saved_activation_bytes) ==
        doctest::Approx(16 * 4096 * per_token).epsilon(1e-9));
}

TEST_CASE("unsloth: checkpoints in host memory, the loss in chunks of at most 4 GiB") {
  const auto spec = llama_1b();
  REQUIRE(spec.ok());
  training_config config = unsloth_run();
  config.grad_ckpt = true;
  auto e = estimate_training_step(spec.value(), config, gpu_spec{});
  REQUIRE(e.ok());
  CHECK(e.value().peak.phase == "loss");
  // 4,096 tokens x 128,256 logits at 16 bytes need 2 chunks of 4 GiB less the hidden states'
  // gradient (16 MiB), so 4 (multiples of 4): 1,024 tokens a chunk at 14 bytes a logit (bf16,
  // fp32 copy, log-softmax, gradient; its fresh segment, rounded up to 2 MiB, keeps the 0.6 MiB
  // left over), beside the gradient kept for backward.
  const double hidden = 4096.0 * 2048 * 2;
  const double chunk = std::ceil(14.0 * 1024 * 128256 / (2 * mib)) * (2 * mib);
  CHECK(at_peak(e.value(), memory_category::logits_and_loss) ==
        doctest::Approx(chunk + hidden).epsilon(1e-9));
  // On the GPU: the last block's input (the others went to host memory), the residual stream,
  // the final norm's input and inverse RMS, its output being projected, and the two buffers the
  // inputs are copied back into, sized in the first forward.
  CHECK(at_peak(e.value(), memory_category::activations) ==
        doctest::Approx(6 * hidden + 4.0 * 4096).epsilon(1e-9));
  // In pinned host memory: one buffer per block (every block's input on the first step).
  CHECK(offload_footprint(spec.value(), config, e.value()).pinned_bytes == 16 * 4096 * 2048 * 2);
}

TEST_CASE("the unsloth profile refuses what its fast path does not run") {
  const auto spec = llama_1b();
  REQUIRE(spec.ok());
  training_config partial = unsloth_run();
  partial.lora_targets = {"q_proj", "v_proj"};
  auto e = estimate_training_step(spec.value(), partial, gpu_spec{});
  REQUIRE(!e.ok());
  CHECK(e.failure().field == "workload.lora.targets");
  training_config full = unsloth_run();
  full.finetune = finetune_kind::full;
  CHECK(estimate_training_step(spec.value(), full, gpu_spec{}).failure().field ==
        "workload.finetune");
  training_config sharded = unsloth_run();
  sharded.sharding = data_parallel::zero3;
  sharded.dp_degree = 2;
  CHECK(estimate_training_step(spec.value(), sharded, gpu_spec{}).failure().field ==
        "parallel.method");
}

TEST_CASE("the unsloth profile refuses Gemma 2's post-norm blocks, soft-capped or not") {
  const auto presets = test::read_presets();
  auto config = presets.at("google/gemma-2-9b").at("config");
  config["attn_logit_softcapping"] = nullptr;
  const auto gemma2 = parse_model_config(config, {}, "c");
  const auto gemma = parse_model_config(presets.at("google/gemma-2b").at("config"), {}, "c");
  REQUIRE(gemma2.ok());
  REQUIRE(gemma.ok());
  REQUIRE(gemma2.value().attention_softcap == 0.0);
  training_config c = unsloth_run();
  c.seq_len = 256;
  auto refused = estimate_training_step(gemma2.value(), c, gpu_spec{});
  REQUIRE(!refused.ok());
  CHECK(refused.failure().field == "model");
  // Gemma's blocks have Llama's two norms.
  CHECK(estimate_training_step(gemma.value(), c, gpu_spec{}).ok());
}

// Full training of tiny_llama under torchtitan: FSDP2 over 2 GPUs in bf16 mixed precision.
training_config torchtitan_run() {
  training_config config;
  config.framework = framework_profile::torchtitan;
  config.micro_batch = 2;
  config.seq_len = 64;
  config.sharding = data_parallel::fsdp_full_shard;
  config.dp_degree = 2;
  return config;
}

TEST_CASE(
    "torchtitan's per-op selective checkpoint keeps the input and every other matmul's output") {
  const auto spec = tiny_llama();
  REQUIRE(spec.ok());
  training_config config = torchtitan_run();
  config.selective_recompute = true;
  auto sac = estimate_training_step(spec.value(), config, gpu_spec{});
  REQUIRE(sac.ok());
  // A block, 128 tokens in bf16: its input (256 features); the outputs of the 1st, 3rd, 5th and
  // 7th matmuls — q (256), v (256: four KV heads of 64), gate (512) and down (256); SDPA's
  // output (256) and fp32 log-sum-exp (2 sequences x 4 heads x 64 positions).
  const std::uint64_t block =
      2 * 128 * 256 + 2 * 128 * (256 + 256 + 512 + 256) + 2 * 128 * 256 + 4 * 2 * 4 * 64;
  CHECK(sac.value().saved_activation_bytes == 2 * block);
  // More than full checkpointing keeps, less than no checkpointing.
  config.selective_recompute = false;
  config.grad_ckpt = true;
  auto full = estimate_training_step(spec.value(), config, gpu_spec{});
  config.grad_ckpt = false;
  auto none = estimate_training_step(spec.value(), config, gpu_spec{});
  REQUIRE(full.ok());
  REQUIRE(none.ok());
  CHECK(full.value().saved_activation_bytes == 2 * 2 * 128 * 256);
  CHECK(none.value().saved_activation_bytes > 2 * block);
  // A checkpoint with fused q/k/v and gate/up (Phi-3) runs as torchtitan's Llama: the same four
  // projections kept (h 3,072, 32 heads of 96 with 32 KV heads, MLP 8,192; 32 blocks).
  auto phi3_config = test::read_presets().at("microsoft/Phi-3-mini-4k-instruct").at("config");
  phi3_config["sliding_window"] = nullptr;  // (torchtitan's Llama attends over every token)
  auto phi3 = parse_model_config(phi3_config, {}, "c");
  REQUIRE(phi3.ok());
  config.selective_recompute = true;
  auto fused = estimate_training_step(phi3.value(), config, gpu_spec{});
  REQUIRE(fused.ok());
  const std::uint64_t phi3_block =
      2 * 128 * 3072 + 2 * 128 * (3072 + 3072 + 3072 + 8192 + 3072) + 4 * 2 * 32 * 64;
  CHECK(fused.value().saved_activation_bytes == 32 * phi3_block);
  // Tensor parallelism over 2 with sequence parallelism: each rank's share of q, v, gate and the
  // attention output, down's whole partial output, and the reduce-scattered outputs of o and down
  // (64 of the 128 tokens), beside the sequence-split block input.
  config.tp_degree = 2;
  config.sequence_parallel = true;
  auto split = estimate_training_step(spec.value(), config, gpu_spec{});
  REQUIRE(split.ok());
  const std::uint64_t split_block = 2 * 64 * 256 + 2 * 128 * (128 + 128 + 128) + 4 * 2 * 2 * 64 +
                                    2 * 64 * 256 + 2 * 128 * (256 + 256) + 2 * 64 * 256;
  CHECK(split.value().saved_activation_bytes == 2 * split_block);
}

TEST_CASE("torchtitan steps with the fused AdamW by default, its 2025 optimizer.implementation") {
  const auto spec = llama_1b();
  REQUIRE(spec.ok());
  training_config config = torchtitan_run();
  config.sharding = data_parallel::none;
  config.dp_degree = 1;
  config.micro_batch = 1;
  config.seq_len = 8;  // a step whose peak is the optimizer's
  auto by_default = estimate_training_step(spec.value(), config, gpu_spec{});
  config.adamw_impl = adamw_implementation::fused;
  auto fused = estimate_training_step(spec.value(), config, gpu_spec{});
  config.adamw_impl = adamw_implementation::foreach;
  auto foreach = estimate_training_step(spec.value(), config, gpu_spec{});
  REQUIRE(by_default.ok());
  REQUIRE(fused.ok());
  REQUIRE(foreach.ok());
  CHECK(by_default.value().peak.allocated == fused.value().peak.allocated);
  CHECK(foreach.value().peak.allocated > fused.value().peak.allocated);
}

TEST_CASE("torchtitan's FSDP2 gathers the block stepped back next while one is") {
  // tiny_llama with 16 logits a token, so a block's backward makes the peak.
  auto spec = parse_model_config({{"model_type", "llama"},
                                  {"hidden_size", 256},
                                  {"intermediate_size", 512},
                                  {"num_hidden_layers", 2},
                                  {"num_attention_heads", 4},
                                  {"vocab_size", 16},
                                  {"tie_word_embeddings", false}},
                                 {}, "c");
  REQUIRE(spec.ok());
  training_config config = torchtitan_run();
  config.micro_batch = 64;
  config.seq_len = 512;
  config.grad_ckpt = true;
  auto e = estimate_training_step(spec.value(), config, gpu_spec{});
  REQUIRE(e.ok());
  CHECK(e.value().peak.phase == "backward");
  // bf16: the root (two 16 x 256 matrices and the final norm) and both blocks (4 x 256^2 +
  // 3 x 256 x 512 + two norms of 256 each). (At other lengths the allocator can hand a block a
  // larger free one whose rest, under 1 MiB, it does not split off.)
  const double root = 2.0 * (2 * 16 * 256 + 256);
  const double block = 2.0 * (4 * 256 * 256 + 3 * 256 * 512 + 2 * 256);
  CHECK(at_peak(e.value(), memory_category::gathered_params) ==
        doctest::Approx(root + 2 * block).epsilon(0.01));
}

TEST_CASE("the torchtitan profile refuses what torchtitan does not run") {
  const auto spec = tiny_llama();
  REQUIRE(spec.ok());
  const auto field = [&](const model_spec& model, const training_config& config) {
    auto e = estimate_training_step(model, config, gpu_spec{});
    return e.ok() ? std::string("ok") : e.failure().field;
  };
  CHECK(field(spec.value(), torchtitan_run()) == "ok");
  training_config lora = torchtitan_run();
  lora.finetune = finetune_kind::lora;
  lora.lora_targets = {"q_proj"};
  CHECK(field(spec.value(), lora) == "workload.finetune");
  training_config zero = torchtitan_run();
  zero.sharding = data_parallel::zero3;
  CHECK(field(spec.value(), zero) == "parallel.method");
  training_config eager = torchtitan_run();
  eager.attention = attention_kernel::eager;
  CHECK(field(spec.value(), eager) == "workload.attention");
  auto gpt2 = parse_model_config(test::read_presets().at("gpt2").at("config"), {}, "c");
  REQUIRE(gpt2.ok());
  CHECK(field(gpt2.value(), torchtitan_run()) == "model");
  auto windowed = parse_model_config({{"model_type", "mistral"},
                                      {"hidden_size", 256},
                                      {"intermediate_size", 512},
                                      {"num_hidden_layers", 2},
                                      {"num_attention_heads", 4},
                                      {"vocab_size", 1000},
                                      {"sliding_window", 32}},
                                     {}, "c");
  REQUIRE(windowed.ok());
  CHECK(field(windowed.value(), torchtitan_run()) == "model");
}

TEST_CASE("the allocator's limit leaves out the request's CUDA context, an explicit 0 too") {
  const auto spec = llama_1b();
  REQUIRE(spec.ok());
  training_config config = lora_qv();
  config.micro_batch = 1;
  config.seq_len = 8192;
  gpu_spec gpu;
  gpu.architecture = "ampere";
  const auto reserved = [&](std::uint64_t memory, std::optional<std::uint64_t> context) {
    gpu.memory_bytes = memory;
    training_config c = config;
    c.cuda_context_bytes = context;
    return estimate_training_step(spec.value(), c, gpu).value().peak_reserved;
  };
  // A card just larger than the allocated peak beside the default context and the libraries:
  // the replay gives segments back on the way, which changes what stays reserved.
  const std::uint64_t context = default_cuda_context_bytes("ampere");
  gpu.memory_bytes = 0;
  const auto unlimited = estimate_training_step(spec.value(), config, gpu);
  REQUIRE(unlimited.ok());
  const std::uint64_t tight =
      unlimited.value().peak.allocated + cuda_libraries_bytes() + context + (64ULL << 20);
  REQUIRE(reserved(tight, std::nullopt) != reserved(tight + context, std::nullopt));
  CHECK(reserved(tight, context) == reserved(tight, std::nullopt));
  // No context at all leaves the allocator the whole card.
  CHECK(reserved(tight, 0) == reserved(tight + context, std::nullopt));
}

}  // namespace
}  // namespace gpumem

namespace gpumem {
namespace {

// One encoder and one decoder block of d_model 64 (4 heads of 16), d_ff 128, ReLU, no dropout.
result<model_spec> tiny_t5() {
  return parse_model_config({{"model_type", "t5"},
                             {"d_model", 64},
                             {"d_kv", 16},
                             {"num_heads", 4},
                             {"d_ff", 128},
                             {"num_layers", 1},
                             {"num_decoder_layers", 1},
                             {"vocab_size", 100},
                             {"dropout_rate", 0.0},
                             {"tie_word_embeddings", false}},
                            {}, "c");
}

// bf16 full fine-tuning of 2 sequences of 8 tokens: the tiny models' hand counts below.
training_config tiny_bf16_run() {
  training_config c;
  c.compute = compute_precision::pure_bf16;
  c.micro_batch = 2;
  c.seq_len = 8;
  return c;
}

// The same with 4 decoder tokens a sequence.
training_config t5_run() {
  training_config c = tiny_bf16_run();
  c.target_len = 4;
  return c;
}

TEST_CASE("T5: encoder and decoder blocks over their own tokens, cross-attention, by hand") {
  const auto spec = tiny_t5();
  REQUIRE(spec.ok());
  training_config c = t5_run();
  auto e = estimate_training_step(spec.value(), c, gpu_spec{});
  REQUIRE(e.ok());
  // Encoder block, 16 tokens of 64, bf16: each RMSNorm its fp32 input, an fp32 rsqrt a token
  // and its bf16 output (4096 + 64 + 2048), the output once more as q/k/v's input (2048); q, k,
  // v (6144); eager attention's fp32 softmax and bf16 cast of 2 x 4 x 8 x 8 scores (2048 + 1024);
  // o's input (2048); the MLP's input (2048) and ReLU's output (4096), which is wo's input too
  // (a dropout of rate 0 hands back its input).
  const std::uint64_t encoder = 2 * (6208 + 2048) + 6144 + 3072 + 2048 + 4096;
  // Decoder block, 8 tokens: the same over 2 x 4 x 4 x 4 scores, and cross-attention's norm and
  // q input (3104 + 1024), its q (1024) with k and v of the 16 encoder tokens (4096), fp32 and
  // bf16 probabilities of 2 x 4 x 4 x 8 scores (1536) and o's input (1024); k and v keep the
  // encoder's output, which the step holds once for every block.
  const std::uint64_t decoder = 3 * (3104 + 1024) + 3072 + 768 + 1024 + 5120 + 1536 + 1024 + 2048;
  CHECK(e.value().saved_activation_bytes == encoder + decoder);
  // Checkpointed, each block keeps its bf16 input: 16 and 8 tokens of 64.
  c.grad_ckpt = true;
  auto ckpt = estimate_training_step(spec.value(), c, gpu_spec{});
  REQUIRE(ckpt.ok());
  CHECK(ckpt.value().saved_activation_bytes == 2 * 16 * 64 + 2 * 8 * 64);
}

TEST_CASE("T5: q_proj names both attentions' q; fp16 or quantised loads keep wo in fp32") {
  const auto spec = tiny_t5();
  REQUIRE(spec.ok());
  training_config c = t5_run();
  c.finetune = finetune_kind::lora;
  c.compute = compute_precision::amp_fp16;
  for (const char* target : {"q_proj", "q"}) {
    c.lora_targets = {target};
    auto e = estimate_training_step(spec.value(), c, gpu_spec{});
    REQUIRE(e.ok());
    // The encoder's q and the decoder's two: A [8, 64] and B [64, 8] each.
    CHECK(e.value().trainable_params == 3 * 2 * 8 * 64);
  }
  // Loaded in fp16, the two wo [64, 128] stay fp32 (transformers' _keep_in_fp32_modules);
  // loaded in bf16 they do not.
  const auto weights = [&](std::uint64_t base_bytes, compute_precision compute) {
    c.base_weight_bytes = base_bytes;
    c.compute = compute;
    auto e = estimate_training_step(spec.value(), c, gpu_spec{});
    REQUIRE(e.ok());
    return at_peak(e.value(), memory_category::weights);
  };
  CHECK(weights(2, compute_precision::amp_fp16) - weights(2, compute_precision::amp_bf16) ==
        2 * 2 * 64 * 128);
}

TEST_CASE("T5 runs as transformers does, on data-parallel ranks; target_len is T5's alone") {
  const auto spec = tiny_t5();
  REQUIRE(spec.ok());
  training_config c = t5_run();
  c.framework = framework_profile::litgpt;
  auto litgpt = estimate_training_step(spec.value(), c, gpu_spec{});
  REQUIRE_FALSE(litgpt.ok());
  CHECK(litgpt.failure().field == "workload.framework");
  c = t5_run();
  c.tp_degree = 2;
  auto tp = estimate_training_step(spec.value(), c, gpu_spec{});
  REQUIRE_FALSE(tp.ok());
  CHECK(tp.failure().field == "parallel.method");
  // T5 materialises its scores whatever the kernel: lengths are bounded as eager attention's.
  c = t5_run();
  c.target_len = 1ULL << 27;
  auto long_labels = estimate_training_step(spec.value(), c, gpu_spec{});
  REQUIRE_FALSE(long_labels.ok());
  CHECK(long_labels.failure().code == "request.too_large");
  CHECK(long_labels.failure().field == "workload.target_len");
  const auto llama = tiny_llama();
  REQUIRE(llama.ok());
  auto decoder_only = estimate_training_step(llama.value(), t5_run(), gpu_spec{});
  REQUIRE_FALSE(decoder_only.ok());
  CHECK(decoder_only.failure().field == "workload.target_len");
}

}  // namespace
}  // namespace gpumem

namespace gpumem {
namespace {

// DeepSeek's latent attention, small: hidden 64, 2 heads of 8 + 4 (rope) with values of 8, q and
// kv latents of 16 and 32; block 0 dense (MLP 128), block 1 MoE (4 experts of 32, top 2).
result<model_spec> tiny_mla(std::uint64_t layers) {
  return parse_model_config({{"model_type", "deepseek_v3"},
                             {"hidden_size", 64},
                             {"intermediate_size", 128},
                             {"moe_intermediate_size", 32},
                             {"num_hidden_layers", layers},
                             {"num_attention_heads", 2},
                             {"num_key_value_heads", 2},
                             {"n_routed_experts", 4},
                             {"n_shared_experts", 1},
                             {"num_experts_per_tok", 2},
                             {"first_k_dense_replace", 1},
                             {"n_group", 1},
                             {"topk_group", 1},
                             {"q_lora_rank", 16},
                             {"kv_lora_rank", 32},
                             {"qk_nope_head_dim", 8},
                             {"qk_rope_head_dim", 4},
                             {"v_head_dim", 8},
                             {"vocab_size", 100},
                             {"tie_word_embeddings", false}},
                            {}, "c");
}

TEST_CASE("DeepSeek's latent attention: latents, their norms, q/k and kv_b's output, by hand") {
  const auto spec = tiny_mla(1);
  REQUIRE(spec.ok());
  training_config c = tiny_bf16_run();
  auto e = estimate_training_step(spec.value(), c, gpu_spec{});
  REQUIRE(e.ok());
  // 16 tokens, bf16, everything trained. The input norm (4096 + 64 + 2048) and its output for
  // q_a_proj and kv_a_proj_with_mqa (2048); the q latent's norm (1024 + 64 + 512) and its output
  // for q_b_proj (512); the kv latent's (2048 + 64 + 1024, then 1024); queries and keys of 2 x
  // 12 a token and kv_b_proj's 2 x (8 + 8) output (2560); SDPA's 2 x 8-wide output (512) and
  // fp32 log-sum-exp (128); o_proj's input (512); then the dense gated MLP: its norm (6208),
  // input (2048), gate, SiLU and up (12288) and down's input (4096).
  const std::uint64_t attention = 6208 + 2048 + 1600 + 512 + 3136 + 1024 + 2560 + 512 + 128 + 512;
  const std::uint64_t mlp = 6208 + 2048 + 12288 + 4096;
  CHECK(e.value().saved_activation_bytes == attention + mlp);
}

TEST_CASE("DeepSeek's router scores in fp32 from an fp32 copy of its input") {
  auto spec = tiny_mla(2);
  REQUIRE(spec.ok());
  REQUIRE(spec.value().layers[1].moe);
  REQUIRE(spec.value().moe.fp32_router);
  training_config c = tiny_bf16_run();
  auto deepseek = estimate_training_step(spec.value(), c, gpu_spec{});
  spec.value().moe.fp32_router = false;  // as a softmax router in the model's dtype scores
  auto softmax = estimate_training_step(spec.value(), c, gpu_spec{});
  REQUIRE(deepseek.ok());
  REQUIRE(softmax.ok());
  // 16 tokens, 4 experts: fp32 logits and sigmoid (8 bytes an expert score) rather than bf16
  // logits and an fp32 softmax (6), and the trained router's fp32 copy of its 64-wide input.
  CHECK(deepseek.value().saved_activation_bytes - softmax.value().saved_activation_bytes ==
        2 * 16 * 4 + 4 * 16 * 64);
}

TEST_CASE("DeepSeek's latent attention runs as transformers does, on data-parallel ranks") {
  const auto spec = tiny_mla(1);
  REQUIRE(spec.ok());
  training_config c;
  c.framework = framework_profile::torchtune;
  auto torchtune = estimate_training_step(spec.value(), c, gpu_spec{});
  REQUIRE_FALSE(torchtune.ok());
  CHECK(torchtune.failure().field == "workload.framework");
  c = training_config{};
  c.cp_degree = 2;
  c.sharding = data_parallel::ddp;
  c.dp_degree = 1;
  auto split = estimate_training_step(spec.value(), c, gpu_spec{});
  REQUIRE_FALSE(split.ok());
  CHECK(split.failure().field == "parallel.method");
}

}  // namespace
}  // namespace gpumem

namespace gpumem {
namespace {

// gpt-oss, small: hidden 64, 4 heads of 16 (2 KV heads) with sinks, 4 experts of 32 (top 2)
// with biases, one block.
result<model_spec> tiny_gpt_oss() {
  return parse_model_config({{"model_type", "gpt_oss"},
                             {"hidden_size", 64},
                             {"intermediate_size", 32},
                             {"num_hidden_layers", 1},
                             {"num_attention_heads", 4},
                             {"num_key_value_heads", 2},
                             {"head_dim", 16},
                             {"num_local_experts", 4},
                             {"num_experts_per_tok", 2},
                             {"attention_bias", true},
                             {"vocab_size", 100}},
                            {}, "c");
}

TEST_CASE("gpt-oss: the clamped SwiGLU keeps six tensors, the sinks' softmax its own dtype") {
  auto spec = tiny_gpt_oss();
  REQUIRE(spec.ok());
  training_config c = tiny_bf16_run();
  c.attention = attention_kernel::eager;
  const auto saved = [&] {
    auto e = estimate_training_step(spec.value(), c, gpu_spec{});
    REQUIRE(e.ok());
    return e.value().saved_activation_bytes;
  };
  const std::uint64_t gpt_oss = saved();
  // 16 tokens reach 2 experts of 32 each: the fused gate_up, the clamped gate, sigmoid's
  // output, up + 1 and glu (6 bf16 tensors) rather than SiLU's input, its output and up (3).
  spec.value().activation = "silu";
  const std::uint64_t swiglu = saved();
  CHECK(gpt_oss - swiglu == 3 * 2 * 16 * 2 * 32);
  // The softmax over logits and sinks stays bf16 (2 bytes a score) where Llama's eager
  // attention keeps an fp32 softmax and its bf16 cast (4 + 2): 2 x 4 heads x 8 x 8 scores.
  spec.value().eager_softmax_fp32 = true;
  CHECK(saved() - swiglu == 4 * 2 * 4 * 8 * 8);
}

TEST_CASE("gpt-oss in transformers: sdpa falls back to eager attention, flash keeps no scores") {
  const auto spec = tiny_gpt_oss();
  REQUIRE(spec.ok());
  training_config c = tiny_bf16_run();
  const auto run = [&](attention_kernel kernel) {
    c.attention = kernel;
    auto e = estimate_training_step(spec.value(), c, gpu_spec{});
    REQUIRE(e.ok());
    return e.value();
  };
  const auto sdpa = run(attention_kernel::sdpa);
  const auto eager = run(attention_kernel::eager);
  const auto flash = run(attention_kernel::flash);
  CHECK(sdpa.saved_activation_bytes == eager.saved_activation_bytes);
  REQUIRE(sdpa.notes.size() == 1);
  CHECK(sdpa.notes[0].find("falls back to eager") != std::string::npos);
  CHECK(eager.notes.empty());
  CHECK(flash.notes.empty());
  CHECK(flash.saved_activation_bytes < eager.saved_activation_bytes);
}

}  // namespace
}  // namespace gpumem

namespace gpumem {
namespace {

// Llama 4, small: hidden 64, 4 heads of 16 (2 KV heads), 4 experts of 32 (top 1) and a shared
// expert of 32 on every layer, dense MLPs 128 wide where a layer has none; every fourth layer
// NoPE.
result<model_spec> tiny_llama4(std::uint64_t layers) {
  return parse_model_config({{"model_type", "llama4_text"},
                             {"hidden_size", 64},
                             {"intermediate_size", 32},
                             {"intermediate_size_mlp", 128},
                             {"num_hidden_layers", layers},
                             {"num_attention_heads", 4},
                             {"num_key_value_heads", 2},
                             {"head_dim", 16},
                             {"num_local_experts", 4},
                             {"num_experts_per_tok", 1},
                             {"vocab_size", 100}},
                            {}, "c");
}

TEST_CASE("Llama 4: L2 q/k norms in fp32, every token through every expert, by hand") {
  auto spec = tiny_llama4(1);
  REQUIRE(spec.ok());
  REQUIRE(spec.value().layers[0].l2_qk_norm);
  training_config c = tiny_bf16_run();
  const auto saved = [&] {
    auto e = estimate_training_step(spec.value(), c, gpu_spec{});
    REQUIRE(e.ok());
    return e.value().saved_activation_bytes;
  };
  // 16 tokens, bf16, everything trained. The input norm (4096 + 64 + 2048) and its output for
  // q/k/v (2048); the fp32 copies of the roped q (64 wide) and k (32) and an fp32 inverse norm a
  // head (6144 + 384); SDPA's q, k, v (4096), output (2048) and log-sum-exp (256); o_proj's
  // input (2048).
  const std::uint64_t attention = 6208 + 2048 + 6528 + 4096 + 2048 + 256 + 2048;
  // The second norm (6208) and its output for the router and the shared expert (2048); the
  // router's fp32 sigmoid and its bf16 column (256 + 128); the tokens repeated for the 4 experts
  // and their scaled copy (2 x 8192); SiLU's input, its output and up over 4 x 32 + 32 features
  // (15360) and the down projections' input (5120).
  const std::uint64_t mlp = 6208 + 2048 + 384 + 2 * 8192 + 15360 + 5120;
  CHECK(saved() == attention + mlp);
  // Routed as its top-1 alone, the three idle experts' share goes: the repeated and scaled
  // tokens (2 x 2 x 16 x 3 x 64) and their gate, SiLU, up and down input (4 x 2 x 16 x 3 x 32).
  spec.value().moe.dense_dispatch = false;
  CHECK(attention + mlp - saved() == 2 * 2 * 16 * 3 * 64 + 4 * 2 * 16 * 3 * 32);
}

TEST_CASE("Llama 4: NoPE layers attend to all, RoPE layers in chunks; the wrapper's own loss") {
  const auto spec = tiny_llama4(4);
  REQUIRE(spec.ok());
  for (const auto& layer : spec.value().layers) {
    const bool nope = layer.index == 3;
    CHECK(layer.l2_qk_norm == !nope);
    CHECK(layer.sliding_window_tokens == (nope ? 0 : 8192));
  }
  CHECK(spec.value().loss == model_loss::causal_lm);  // Llama4ForCausalLM: ForCausalLMLoss
  const auto unchunked = parse_model_config({{"model_type", "llama4_text"},
                                             {"hidden_size", 64},
                                             {"intermediate_size", 32},
                                             {"num_hidden_layers", 2},
                                             {"num_attention_heads", 4},
                                             {"vocab_size", 100},
                                             {"attention_chunk_size", nullptr},
                                             {"moe_layers", nlohmann::json::array({1})}},
                                            {}, "c");
  REQUIRE(unchunked.ok());
  CHECK(unchunked.value().layers[0].sliding_window_tokens == 0);
  CHECK_FALSE(unchunked.value().layers[0].moe);
  CHECK(unchunked.value().layers[1].moe);
  CHECK(unchunked.value().layers[0].mlp_intermediate == 16384);  // intermediate_size_mlp
  const auto short_list = parse_model_config({{"model_type", "llama4_text"},
                                              {"hidden_size", 64},
                                              {"intermediate_size", 32},
                                              {"num_hidden_layers", 2},
                                              {"num_attention_heads", 4},
                                              {"vocab_size", 100},
                                              {"no_rope_layers", nlohmann::json::array({1})}},
                                             {}, "c");
  REQUIRE_FALSE(short_list.ok());
  CHECK(short_list.failure().field == "c.no_rope_layers");
  // The wrapper (Llama4ForConditionalGeneration) shifts its bf16 logits (a contiguous copy) and
  // takes a plain CrossEntropyLoss of them: the loss is transformers' plain one.
  auto scout =
      parse_model_config(test::read_json("tests/configs/llama-4-scout-17b-16e.json"), {}, "c");
  REQUIRE(scout.ok());
  CHECK(scout.value().loss == model_loss::plain);
}

TEST_CASE("Llama 4 runs as transformers does") {
  const auto spec = tiny_llama4(1);
  REQUIRE(spec.ok());
  training_config c = tiny_bf16_run();
  c.framework = framework_profile::torchtune;
  auto torchtune = estimate_training_step(spec.value(), c, gpu_spec{});
  REQUIRE_FALSE(torchtune.ok());
  CHECK(torchtune.failure().field == "workload.framework");
}

// The field a refused estimate names.
std::string refusal_field(const model_spec& spec, const training_config& config) {
  auto e = estimate_training_step(spec, config, gpu_spec{});
  REQUIRE_FALSE(e.ok());
  return e.failure().field;
}

TEST_CASE("PEFT LoRA on the token embedding: A [r, vocab] and B [dim, r], trained with the rest") {
  const auto spec = tiny_llama();
  REQUIRE(spec.ok());
  training_config config = lora_qv();
  auto base = estimate_training_step(spec.value(), config, gpu_spec{});
  config.lora_targets = {"q_proj", "v_proj", "embed_tokens"};
  auto embedded = estimate_training_step(spec.value(), config, gpu_spec{});
  REQUIRE(base.ok());
  REQUIRE(embedded.ok());
  const std::uint64_t added = 8 * (1000 + 256);  // r x (vocab + dim)
  CHECK(embedded.value().trainable_params - base.value().trainable_params == added);
  CHECK(embedded.value().notes.empty());  // embed_tokens matched, not skipped
  // fp32 under AMP (PEFT's autocast_adapter_dtype), with AdamW's two fp32 moments at the peak;
  // A's 32,000 bytes take the allocator's 512-byte blocks (32,256), B's 8,192 are whole.
  const double adapters = 32256 + 4 * 256 * 8;
  CHECK(at_peak(embedded.value(), memory_category::adapters) -
            at_peak(base.value(), memory_category::adapters) ==
        doctest::Approx(adapters));
  CHECK(at_peak(embedded.value(), memory_category::optimizer_states) -
            at_peak(base.value(), memory_category::optimizer_states) ==
        doctest::Approx(2 * adapters));
  // GPT-2 names its table wte: the same adapter by the model's own name.
  auto gpt2 = parse_model_config(
      {{"model_type", "gpt2"}, {"n_embd", 64}, {"n_layer", 1}, {"n_head", 2}, {"vocab_size", 100}},
      {}, "c");
  REQUIRE(gpt2.ok());
  config.lora_targets = {"c_attn", "wte"};
  auto wte = estimate_training_step(gpt2.value(), config, gpu_spec{});
  REQUIRE(wte.ok());
  CHECK(wte.value().trainable_params == 8 * (64 + 192) + 8 * (100 + 64));
  // PEFT's alone, LoRA only.
  config.framework = framework_profile::torchtune;
  CHECK(refusal_field(gpt2.value(), config) == "workload.lora.targets");
  config.framework = framework_profile::transformers;
  config.dora = true;
  CHECK(refusal_field(gpt2.value(), config) == "workload.lora.targets");
}

TEST_CASE("PEFT modules_to_save: a trained copy of the embedding or LM head beside the original") {
  const auto spec = tiny_llama();
  REQUIRE(spec.ok());
  training_config config = lora_qv();
  config.compute = compute_precision::pure_bf16;
  auto base = estimate_training_step(spec.value(), config, gpu_spec{});
  config.save_embeddings = true;
  config.save_lm_head = true;
  auto copied = estimate_training_step(spec.value(), config, gpu_spec{});
  REQUIRE(base.ok());
  REQUIRE(copied.ok());
  const std::uint64_t table = 1000 * 256;
  CHECK(copied.value().trainable_params - base.value().trainable_params == 2 * table);
  // Two bf16 copies, the originals still loaded; AdamW's moments in the copies' dtype.
  CHECK(at_peak(copied.value(), memory_category::weights) ==
        at_peak(base.value(), memory_category::weights));
  CHECK(at_peak(copied.value(), memory_category::adapters) -
            at_peak(base.value(), memory_category::adapters) ==
        doctest::Approx(2.0 * 2 * table));
  CHECK(at_peak(copied.value(), memory_category::optimizer_states) -
            at_peak(base.value(), memory_category::optimizer_states) ==
        doctest::Approx(2.0 * 4 * table));
  // A tied head is copied too: Llama-3.2-1B's [128256, 2048].
  const auto tied = llama_1b();
  REQUIRE(tied.ok());
  config.save_embeddings = false;
  auto head = estimate_training_step(tied.value(), config, gpu_spec{});
  config.save_lm_head = false;
  auto plain = estimate_training_step(tied.value(), config, gpu_spec{});
  REQUIRE(head.ok());
  REQUIRE(plain.ok());
  CHECK(head.value().trainable_params - plain.value().trainable_params == 128256ULL * 2048);
  // Refused where its copies would be sharded, and for a model without an LM head.
  config.save_lm_head = true;
  config.sharding = data_parallel::fsdp_full_shard;
  config.dp_degree = 2;
  CHECK(refusal_field(spec.value(), config) == "parallel.method");
  config.sharding = data_parallel::none;
  config.dp_degree = 1;
  const auto classifier = bert_classifier();
  REQUIRE(classifier.ok());
  config.lora_targets = {"query", "value"};
  CHECK(refusal_field(classifier.value(), config) == "workload.lora.modules_to_save");
}

// The small decoder as GPT-NeoX: LayerNorms, parallel attention and MLP, fused query_key_value.
model_spec small_neox() {
  auto spec = parse_model_config({{"model_type", "gpt_neox"},
                                  {"hidden_size", 1024},
                                  {"intermediate_size", 4096},
                                  {"num_hidden_layers", 4},
                                  {"num_attention_heads", 16},
                                  {"vocab_size", 1000}},
                                 {}, "c");
  REQUIRE(spec.ok());
  return spec.value();
}

std::uint64_t saved_bytes(const model_spec& spec, const training_config& c) {
  auto e = estimate_training_step(spec, c, gpu_spec{});
  REQUIRE(e.ok());
  return e.value().saved_activation_bytes;
}

TEST_CASE("values that are a view of a fused q/k/v output keep all of it beside the roped q, k") {
  CHECK(small_model("phi3").values_view_fused_qkv);
  CHECK(small_neox().values_view_fused_qkv);
  CHECK_FALSE(small_model("llama").values_view_fused_qkv);
  training_config c = lora_qv();
  c.compute = compute_precision::pure_bf16;
  c.seq_len = 512;
  c.optimizer_step = false;
  // Phi-3 (16 heads of 128, 4 K/V heads): SDPA takes the K/V heads as they are (enable_gqa), so
  // qkv_proj's whole output (q + 2 kv) stays alive through v, beside the roped q and k: 2 bytes x
  // 512 tokens x (2,048 + 512) more per block than separate projections keep.
  const model_spec phi3 = small_model("phi3");
  model_spec separate = phi3;
  separate.values_view_fused_qkv = false;
  CHECK(saved_bytes(phi3, c) - saved_bytes(separate, c) == 4ULL * 2 * 512 * (2048 + 512));
  // Eager attention repeats K/V into copies (repeat_kv): the fused output is not kept.
  c.attention = attention_kernel::eager;
  CHECK(saved_bytes(phi3, c) == saved_bytes(separate, c));
  c.attention = attention_kernel::sdpa;
  // litgpt fuses every model's q/k/v (CausalSelfAttention.qkv). Multi-head, it keeps the fused
  // output (3 x 2,048 a token) and the roped q and k (2 x 2,048); grouped K/V are repeated
  // (repeat_interleave) into copies, so the fused output goes: q and the two copies (3 x 2,048).
  c.framework = framework_profile::litgpt;
  model_spec mha = small_model("llama");
  mha.num_kv_heads = mha.num_heads;
  CHECK(saved_bytes(mha, c) - saved_bytes(small_model("llama"), c) == 4ULL * 2 * 512 * 2 * 2048);
}

TEST_CASE("GPT-NeoX's MLP norm: its own statistics; under autocast each norm's fp32 copy") {
  const model_spec neox = small_neox();
  CHECK(neox.parallel_block);
  CHECK(neox.parallel_mlp_norm);
  model_spec shared = neox;  // as if the MLP read the attention's norm output (GPT-J)
  shared.parallel_mlp_norm = false;
  training_config c;
  c.finetune = finetune_kind::lora;
  c.lora_targets = {"q_proj", "k_proj", "v_proj"};
  c.compute = compute_precision::pure_bf16;
  c.seq_len = 512;
  c.optimizer_step = false;
  // bf16: both norms keep the same block input; the second adds its mean and rstd (fp32, 8 bytes
  // a token); the frozen MLP keeps nothing of its own input.
  CHECK(saved_bytes(neox, c) - saved_bytes(shared, c) == 4ULL * 8 * 512);
  // AMP over a bf16 model: autocast runs layer_norm in fp32, so each norm keeps its own fp32 copy
  // of the bf16 input (4 x 1,024 bytes a token) and its statistics.
  c.compute = compute_precision::amp_bf16;
  c.base_weight_bytes = 2;
  CHECK(saved_bytes(neox, c) - saved_bytes(shared, c) == 4ULL * (4 * 1024 + 8) * 512);
}

TEST_CASE("ReLU keeps its output, which is what the down projection reads: one tensor, not two") {
  // OPT's fc1 -> activation -> fc2 in fp32, full fine-tuning, no dropout: GELU keeps its input and
  // fc2 the GELU's output (two [T, ffn] tensors a block), ReLU only its output, which fc2 reads.
  const auto opt = [](const char* activation) {
    auto spec = parse_model_config({{"model_type", "opt"},
                                    {"hidden_size", 256},
                                    {"ffn_dim", 1024},
                                    {"num_hidden_layers", 3},
                                    {"num_attention_heads", 4},
                                    {"vocab_size", 1000},
                                    {"dropout", 0.0},
                                    {"activation_function", activation}},
                                   {}, "c");
    REQUIRE(spec.ok());
    return spec.value();
  };
  training_config c;
  c.compute = compute_precision::fp32;
  c.micro_batch = 2;
  c.seq_len = 64;
  CHECK(saved_bytes(opt("gelu"), c) - saved_bytes(opt("relu"), c) == 3ULL * 4 * 2 * 64 * 1024);
}

TEST_CASE("litgpt's LoRA reads its dropped-out input: the mask and the copy, not the input") {
  const auto spec = tiny_llama();
  REQUIRE(spec.ok());
  training_config c;
  c.finetune = finetune_kind::lora;
  c.framework = framework_profile::litgpt;
  c.compute = compute_precision::pure_bf16;
  c.micro_batch = 2;
  c.seq_len = 128;
  c.lora_targets = {"q_proj"};
  training_config with_o = c;
  with_o.lora_targets = {"q_proj", "o_proj"};
  // An adapter on o_proj (input 256 wide) adds per block and token its dropout's mask (1 byte an
  // element), the dropped-out copy lora_A reads (2 bytes) and lora_A's output that lora_B reads
  // (rank 8, 2 bytes); the frozen o_proj keeps nothing of its input.
  CHECK(saved_bytes(spec.value(), with_o) - saved_bytes(spec.value(), c) ==
        2ULL * 2 * 128 * (256 * 1 + 256 * 2 + 8 * 2));
}

TEST_CASE("PEFT's LoRA dropout: each adapter keeps its mask and hands lora_A its own copy") {
  const auto spec = tiny_llama();
  REQUIRE(spec.ok());
  training_config c;
  c.finetune = finetune_kind::lora;
  c.lora_targets = {"q_proj", "v_proj"};
  c.compute = compute_precision::pure_bf16;
  c.micro_batch = 2;
  c.seq_len = 128;
  training_config dropped = c;
  dropped.lora_dropout = 0.05;
  // Pure bf16: without dropout both adapters read the block's normed input (256 wide, 2 bytes),
  // kept once; with it q's and v's dropouts each keep a mask (1 byte) and a copy (2 bytes).
  CHECK(saved_bytes(spec.value(), dropped) - saved_bytes(spec.value(), c) ==
        2ULL * 2 * 128 * (2 * (256 + 256 * 2) - 256 * 2));
  // AMP (fp32 adapters): lora_A keeps autocast's 16-bit cast either way; the masks are added.
  c.compute = dropped.compute = compute_precision::amp_bf16;
  c.base_weight_bytes = dropped.base_weight_bytes = 2;
  CHECK(saved_bytes(spec.value(), dropped) - saved_bytes(spec.value(), c) ==
        2ULL * 2 * 128 * 2 * 256);
  // litgpt drops out by default (0.05); 0 stated, its adapters read the input itself.
  c.framework = framework_profile::litgpt;
  c.compute = compute_precision::pure_bf16;
  c.base_weight_bytes = 0;
  CHECK(lora_dropout_of(c) == 0.05);
  training_config none = c;
  none.lora_dropout = 0.0;
  CHECK(saved_bytes(spec.value(), c) - saved_bytes(spec.value(), none) ==
        2ULL * 2 * 128 * (256 + 256 * 2 - 256 * 2));  // one shared dropout for q/k/v: its mask
}

TEST_CASE("library releases: PEP 440 versions read as major.minor") {
  const auto release = [](const char* text) {
    const auto r = parse_library_release(text);
    return r ? release_name(*r) : std::string("none");
  };
  CHECK(release("2.4.1+cu121") == "2.4");
  CHECK(release("1.13") == "1.13");
  CHECK(release("2") == "2.0");
  CHECK(release("v0.44.1") == "0.44");
  CHECK(release("0.45.0.dev0") == "0.45");
  CHECK(release("2.4.0a0+git1234") == "2.4");
  CHECK(release("0.12.0rc1") == "0.12");
  for (const char* bad : {"", "latest", "2.", "2.x", "1.13 ", ".5", "1234567.0"})
    CHECK(release(bad) == "none");
  software_stack s;
  CHECK(s.bnb_4bit_keeps_input());  // unstated: the releases before 0.45
  CHECK(s.has_sdpa());
  CHECK_FALSE(s.zero_grad_keeps_gradients());
  CHECK_FALSE(s.peft_adapters_in_base_dtype());
  s.bitsandbytes = parse_library_release("0.45.0");
  s.torch = parse_library_release("1.13.1");
  s.peft = parse_library_release("0.11.1");
  CHECK_FALSE(s.bnb_4bit_keeps_input());
  CHECK(s.zero_grad_keeps_gradients());
  CHECK(s.adamw_loops_by_default());
  CHECK_FALSE(s.has_sdpa());
  CHECK(s.peft_adapters_in_base_dtype());
}

TEST_CASE("torch 1.x: zero_grad keeps every gradient, fp32 and zeroed, into the next forward") {
  const auto spec = tiny_llama();
  REQUIRE(spec.ok());
  training_config c;  // full fine-tuning, fp32, eager attention, SGD without momentum
  c.compute = compute_precision::fp32;
  c.optimizer = optimizer_kind::sgd;
  c.attention = attention_kernel::eager;
  c.micro_batch = 4;
  c.seq_len = 256;
  c.software.torch = parse_library_release("1.13.1");
  auto e = estimate_training_step(spec.value(), c, gpu_spec{});
  REQUIRE(e.ok());
  // The second step's forward runs beside the first step's gradients: every parameter's, 4
  // bytes an element, each tensor rounded to 512 bytes.
  std::uint64_t gradients = 0;
  for (const auto& t : spec.value().tensors) gradients += allocator_round(4 * t.numel());
  CHECK(at_peak(e.value(), memory_category::gradients) == static_cast<double>(gradients));
  REQUIRE(e.value().notes.size() == 1);
  CHECK(e.value().notes[0].find("zero_grad keeps the gradients") != std::string::npos);
  // torch 2 frees them (set_to_none=True): its backward makes them afresh.
  c.software.torch = parse_library_release("2.0");
  auto torch2 = estimate_training_step(spec.value(), c, gpu_spec{});
  REQUIRE(torch2.ok());
  CHECK(at_peak(torch2.value(), memory_category::gradients) < static_cast<double>(gradients));
  CHECK(torch2.value().peak.allocated < e.value().peak.allocated);
  CHECK(torch2.value().notes.empty());
  // DeepSpeed's engines set their gradients to None whatever the release.
  c.software.torch = parse_library_release("1.13.1");
  c.sharding = data_parallel::zero2;
  c.dp_degree = 2;
  auto engine = estimate_training_step(spec.value(), c, gpu_spec{});
  REQUIRE(engine.ok());
  CHECK(engine.value().notes.empty());
}

TEST_CASE("torch 1.x: AdamW's default is its loop over the parameters") {
  const auto spec = llama_1b();
  REQUIRE(spec.ok());
  training_config c;
  c.seq_len = 512;
  c.attention = attention_kernel::eager;
  c.software.torch = parse_library_release("1.12");
  const auto peak = [&](std::optional<adamw_implementation> impl) {
    c.adamw_impl = impl;
    auto e = estimate_training_step(spec.value(), c, gpu_spec{});
    REQUIRE(e.ok());
    return e.value().peak.allocated;
  };
  CHECK(peak(std::nullopt) == peak(adamw_implementation::for_loop));
  CHECK(peak(std::nullopt) < peak(adamw_implementation::foreach));
}

TEST_CASE("bitsandbytes 0.45: the 4-bit linears keep none of their inputs, by hand") {
  const auto spec = llama_1b();
  REQUIRE(spec.ok());
  training_config c = lora_qv();
  c.compute = compute_precision::pure_bf16;
  c.quantization = base_quantization::nf4;
  c.micro_batch = 2;
  c.seq_len = 256;
  training_config later = c;
  later.software.bitsandbytes = parse_library_release("0.45.0");
  // Before 0.45 each block's o_proj input (2,048), gate/up input (2,048) and down_proj input
  // (8,192) are kept in ctx.tensors, 2 bytes each per token; q/k/v's input stays, which the q and
  // v adapters' lora_A keep anyway.
  CHECK(saved_bytes(spec.value(), c) - saved_bytes(spec.value(), later) ==
        16ULL * 2 * 256 * (2048 + 2048 + 8192) * 2);
  auto e = estimate_training_step(spec.value(), later, gpu_spec{});
  REQUIRE(e.ok());
  REQUIRE(e.value().notes.size() == 1);
  CHECK(e.value().notes[0] ==
        "bitsandbytes 0.45: the 4-bit linears keep no input (0.45 and later)");
  // torchtune's QLoRA runs torchao's NF4 linear, which saves the weight alone.
  c.framework = framework_profile::torchtune;
  training_config bf16 = c;
  bf16.quantization = base_quantization::none;
  CHECK(saved_bytes(spec.value(), c) == saved_bytes(spec.value(), bf16));
}

TEST_CASE("PEFT before 0.12: bf16 adapters over a bf16 base under autocast, by hand") {
  const auto spec = llama_1b();
  REQUIRE(spec.ok());
  training_config c = lora_qv();  // AMP bf16 over a bf16 base
  c.base_weight_bytes = 2;
  c.micro_batch = 2;
  c.seq_len = 256;
  training_config old = c;
  old.software.peft = parse_library_release("0.11.1");
  auto fp32 = estimate_training_step(spec.value(), c, gpu_spec{});
  auto bf16 = estimate_training_step(spec.value(), old, gpu_spec{});
  REQUIRE(fp32.ok());
  REQUIRE(bf16.ok());
  // q: A [8, 2048], B [2048, 8]; v: A [8, 2048], B [512, 8]; 16 blocks; 4 bytes, then 2.
  const double adapters = 16.0 * (8 * 2048 + 2048 * 8 + 8 * 2048 + 512 * 8);
  CHECK(at_peak(fp32.value(), memory_category::adapters) == 4 * adapters);
  CHECK(at_peak(bf16.value(), memory_category::adapters) == 2 * adapters);
  CHECK(bf16.value().trainable_params == fp32.value().trainable_params);
  // lora_A reads the bf16 input itself instead of autocast's copy of its fp32 cast: per block
  // one [T, 2048] tensor instead of one per adapter.
  CHECK(saved_bytes(spec.value(), c) - saved_bytes(spec.value(), old) == 16ULL * 512 * 2048 * 2);
}

TEST_CASE("library releases the request cannot run with are refused, naming the field") {
  const auto spec = llama_1b();
  REQUIRE(spec.ok());
  const auto refused = [&](const training_config& c) {
    auto e = estimate_training_step(spec.value(), c, gpu_spec{});
    REQUIRE_FALSE(e.ok());
    return e.failure().field;
  };
  training_config c;
  c.software.torch = parse_library_release("1.13");
  CHECK(refused(c) == "workload.attention");  // SDPA is torch 2's
  c.attention = attention_kernel::eager;
  c.framework = framework_profile::litgpt;
  CHECK(refused(c) == "workload.software.torch");
  training_config lora = lora_qv();
  lora.software.peft = parse_library_release("0.10");
  lora.framework = framework_profile::torchtune;
  CHECK(refused(lora) == "workload.software.peft");
  // fp16 adapters' gradients, which AMP's GradScaler refuses to unscale.
  lora.framework = framework_profile::transformers;
  lora.compute = compute_precision::amp_fp16;
  CHECK(refused(lora) == "workload.software.peft");
  lora.base_weight_bytes = 4;  // an fp32 base gives fp32 adapters
  CHECK(estimate_training_step(spec.value(), lora, gpu_spec{}).ok());
}

TEST_CASE("transformers before 4.54 (or torch before 2.5): SDPA keeps K/V copied to every head") {
  const auto spec = llama_1b();  // 16 layers, 32 query heads and 8 K/V heads of 64
  REQUIRE(spec.ok());
  CHECK(spec.value().transformers_repeat_kv);
  training_config c = lora_qv();  // AMP bf16, SDPA, no checkpointing
  c.compute = compute_precision::pure_bf16;
  c.micro_batch = 2;
  c.seq_len = 256;
  training_config v453 = c;
  v453.software.transformers = parse_library_release("4.53.3");
  training_config v454 = c;
  v454.software.transformers = parse_library_release("4.54.0");
  // SDPA's backward keeps the repeated keys and values: 2 x (2,048 - 512) features more per
  // token and layer, in bf16.
  const std::uint64_t repeated = 16ULL * 2 * 256 * 2 * (2048 - 512) * 2;
  CHECK(saved_bytes(spec.value(), v453) - saved_bytes(spec.value(), c) == repeated);
  CHECK(saved_bytes(spec.value(), v454) == saved_bytes(spec.value(), c));  // today's
  training_config old_torch = v454;
  old_torch.software.torch = parse_library_release("2.4.1");  // no enable_gqa before 2.5
  CHECK(saved_bytes(spec.value(), old_torch) == saved_bytes(spec.value(), v453));
  // flash-attn's kernels take grouped-query K/V as they are, whatever the release.
  training_config flash = v453;
  flash.attention = attention_kernel::flash;
  training_config flash_today = c;
  flash_today.attention = attention_kernel::flash;
  CHECK(saved_bytes(spec.value(), flash) == saved_bytes(spec.value(), flash_today));
  // The release of transformers' modelling code means nothing to litgpt's own.
  training_config litgpt = v453;
  litgpt.framework = framework_profile::litgpt;
  auto refused = estimate_training_step(spec.value(), litgpt, gpu_spec{});
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.failure().field == "workload.software.transformers");
  software_stack s;
  CHECK_FALSE(s.sdpa_repeats_kv());
  s.transformers = parse_library_release("4.48.0");
  CHECK(s.sdpa_repeats_kv());
}

TEST_CASE("transformers before 4.49 copies the logits shifted; before 4.46 Llama's are fp32") {
  const auto spec = llama_1b();  // vocabulary 128,256
  REQUIRE(spec.ok());
  training_config c = lora_qv();
  c.compute = compute_precision::pure_bf16;
  c.micro_batch = 1;
  c.seq_len = 2048;
  c.grad_ckpt = true;  // the logits outweigh everything else
  const double tv = 2048.0 * 128256;
  const auto logits_at_peak = [&](const char* release, bool keep_outputs) {
    training_config r = c;
    if (*release) r.software.transformers = parse_library_release(release);
    r.keep_outputs = keep_outputs;
    const auto e = estimate_training_step(spec.value(), r, gpu_spec{});
    REQUIRE(e.ok());
    return at_peak(e.value(), memory_category::logits_and_loss);
  };
  // Today: the backward's start holds log-softmax's fp32 output and nll's and log-softmax's
  // fp32 gradients, 12 bytes a logit; a loop keeping its outputs adds the bf16 logits.
  CHECK(logits_at_peak("", false) == 12 * tv);
  CHECK(logits_at_peak("4.57.1", false) == 12 * tv);
  CHECK(logits_at_peak("", true) == 14 * tv);
  // 4.46-4.48: ForCausalLMLoss holds the bf16 logits, their fp32 upcast, its copy without the
  // last position and log-softmax's output, 14 bytes a logit as the allocator hands them out:
  // the copy's segment is rounded up to 2 MiB (4 x 2,048 x 128,256 bytes exactly), and the
  // bf16 logits' 250.5 x 2 MiB keep the segment's last 1 MiB (only more is split off).
  CHECK(logits_at_peak("4.47.1", false) == 14 * tv + 1024 * 1024);
  // 4.31-4.45: the model returns the fp32 upcast, which a kept output holds through backward.
  CHECK(logits_at_peak("4.40.2", true) == 16 * tv);
  CHECK(logits_at_peak("4.40.2", false) == 12 * tv);
}

}  // namespace
}  // namespace gpumem

namespace gpumem {
namespace {

TEST_CASE("training_refusal answers as the estimate does, without replaying the step") {
  const auto spec = llama_1b();  // tied embeddings: litgpt unties them before its checks
  REQUIRE(spec.ok());
  gpu_spec h100;
  h100.architecture = "hopper";
  std::vector<training_config> runs;
  training_config base;
  base.seq_len = 256;
  runs.push_back(base);
  training_config litgpt = base;
  litgpt.framework = framework_profile::litgpt;
  runs.push_back(litgpt);
  litgpt.sharding = data_parallel::zero3;
  litgpt.offload.optimizer = offload_target::cpu;  // litgpt offloads nothing
  runs.push_back(litgpt);
  training_config torchtune = base;
  torchtune.framework = framework_profile::torchtune;
  torchtune.sharding = data_parallel::fsdp_full_shard;
  torchtune.dp_degree = 2;
  torchtune.offload = {offload_target::cpu, offload_target::cpu, offload_target::cpu,
                       offload_target::cpu};
  runs.push_back(torchtune);
  torchtune.offload.activations = offload_target::nvme;  // never to NVMe
  runs.push_back(torchtune);
  training_config prompt = base;
  prompt.finetune = finetune_kind::prompt_tuning;
  prompt.virtual_tokens = 20;
  runs.push_back(prompt);
  prompt.virtual_tokens = 0;
  runs.push_back(prompt);
  prompt.virtual_tokens = 20;
  prompt.framework = framework_profile::litgpt;  // prompt tuning is PEFT's
  runs.push_back(prompt);
  training_config split = base;
  split.tp_degree = 3;  // divides neither the heads nor the MLP
  runs.push_back(split);
  int refused = 0;
  for (const training_config& run : runs) {
    const auto estimate = estimate_training_step(spec.value(), run, h100);
    const auto refusal = training_refusal(spec.value(), run);
    REQUIRE(refusal.has_value() == !estimate.ok());
    if (!refusal) continue;
    ++refused;
    CHECK(refusal->code == estimate.failure().code);
    CHECK(refusal->field == estimate.failure().field);
    CHECK(refusal->message == estimate.failure().message);
  }
  CHECK(refused == 5);
}

}  // namespace
}  // namespace gpumem

namespace gpumem {
namespace {

bool described_alike(const block_memory& a, const block_memory& b) {
  return a.graph == b.graph && a.saved == b.saved && a.weight_copies == b.weight_copies &&
         a.transient == b.transient && a.backward_transient == b.backward_transient &&
         a.adapter_backward == b.adapter_backward && a.retained == b.retained &&
         a.residual == b.residual && a.keeps_memory == b.keeps_memory &&
         a.masked_attention == b.masked_attention && a.op_cache == b.op_cache;
}

TEST_CASE("blocks called alike are described alike, over every preset") {
  // The replay describes a block like the one before it once (describe_blocks): every pair
  // same_block_description calls alike must come out the same from block_memory_of.
  std::vector<training_config> runs(3);
  runs[1].finetune = finetune_kind::lora;
  runs[1].lora_targets = {"all-linear"};
  runs[1].quantization = base_quantization::nf4;
  runs[2].finetune = finetune_kind::llama_adapter_v2;
  runs[2].framework = framework_profile::litgpt;
  int alike = 0;
  int unlike = 0;
  const auto presets = test::read_presets();
  for (const auto& item : presets.items()) {
    const std::string id = item.key();  // (a plain name: INFO's lambda cannot capture a binding)
    const auto spec = parse_model_config(item.value().at("config"), {}, "c");
    if (!spec.ok()) continue;
    for (const training_config& run : runs) {
      step_context ctx{spec.value(), run};
      // (Longer than the presets' sliding windows, so that windowed layers differ.)
      ctx.seq = ctx.tokens = ctx.h_tokens = 8192;
      ctx.memory_seq = ctx.memory_tokens = 8192;
      ctx.quantized = run.quantization != base_quantization::none;
      ctx.full = run.finetune == finetune_kind::full;
      for (std::size_t l = 1; l < spec.value().layers.size(); ++l) {
        const int b = static_cast<int>(l);
        if (!same_block_description(ctx, b - 1, b)) {
          ++unlike;
          continue;
        }
        ++alike;
        INFO(id << " block " << l);
        CHECK(described_alike(block_memory_of(ctx, b - 1), block_memory_of(ctx, b)));
      }
    }
  }
  CHECK(alike > 1000);  // (the presets' layers are mostly alike)
  CHECK(unlike > 50);   // (alternating windows, MoE and dense blocks, encoder and decoder)
}

}  // namespace
}  // namespace gpumem
