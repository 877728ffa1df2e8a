// The inference estimator: every weight format's bytes by hand, llama.cpp's tensor types, the KV
// cache, the replay's parts, and the limit solver against brute force.

#include <doctest/doctest.h>

#include "gpumem/inference/inference_solver.hpp"
#include "gpumem/inference/inference_step.hpp"
#include "gpumem/model/config_parser.hpp"
#include "gpumem/model/weight_format.hpp"
#include "test_files.hpp"

namespace gpumem {
namespace {

result<model_spec> preset(const char* id) {
  const auto presets = test::read_presets();
  return parse_model_config(presets.at(id).at("config"), {}, "c");
}

const tensor_spec& tensor_named(const model_spec& spec, const std::string& name) {
  for (const auto& t : spec.tensors) {
    if (t.name == name) return t;
  }
  FAIL("no tensor " << name);
  return spec.tensors.front();
}

weight_storage storage(weight_format format) {
  weight_storage s;
  s.format = format;
  return s;
}

gpu_spec gpu_with(std::uint64_t memory_bytes) {
  gpu_spec gpu;
  gpu.architecture = "ampere";
  gpu.memory_bytes = memory_bytes;
  return gpu;
}

TEST_CASE("bytes of a 4096 x 4096 matrix in every non-GGUF format, by hand") {
  const std::uint64_t n = 4096ULL * 4096;  // 16,777,216 weights
  // LLM.int8: int8 codes + fp32 absmax per output row.
  CHECK(quantized_matrix_bytes(4096, 4096, storage(weight_format::int8)) == n + 4 * 4096);
  // bitsandbytes 4-bit: half a byte per weight + fp32 absmax per 64 weights = 0.5625 B/weight.
  CHECK(quantized_matrix_bytes(4096, 4096, storage(weight_format::nf4)) == n / 2 + 4 * (n / 64));
  CHECK(quantized_matrix_bytes(4096, 4096, storage(weight_format::fp4)) == 9437184);
  // Double quantisation: uint8 absmax per 64 weights, fp32 absmax per 256 blocks, fp32 offset.
  CHECK(quantized_matrix_bytes(4096, 4096, storage(weight_format::nf4_double_quant)) ==
        n / 2 + n / 64 + 4 * (n / 64 / 256) + 4);
  CHECK(quantized_matrix_bytes(4096, 4096, storage(weight_format::fp4_double_quant)) == 8654852);
  // fp8: one byte per weight + fp32 scales.
  weight_storage fp8 = storage(weight_format::fp8);
  CHECK(quantized_matrix_bytes(4096, 4096, fp8) == n + 4 * 4096);
  fp8.fp8 = fp8_scaling::per_tensor;
  CHECK(quantized_matrix_bytes(4096, 4096, fp8) == n + 4);
  // GPTQ, group 128: packed codes, packed zeros (32 groups x 512 int32), fp16 scales, g_idx.
  CHECK(quantized_matrix_bytes(4096, 4096, storage(weight_format::gptq_4bit)) ==
        n / 2 + 32 * 512 * 4 + 32 * 4096 * 2 + 4096 * 4);
  // AWQ: the same without g_idx.
  CHECK(quantized_matrix_bytes(4096, 4096, storage(weight_format::awq_4bit)) ==
        n / 2 + 32 * 512 * 4 + 32 * 4096 * 2);
  // A group size that does not divide the input features rounds the groups up.
  weight_storage gptq = storage(weight_format::gptq_4bit);
  gptq.group_size = 1000;
  CHECK(quantized_matrix_bytes(8, 4096, gptq) == 8 * 4096 / 2 + 5 * 1 * 4 + 5 * 8 * 2 + 4096 * 4);
  // MXFP4: half a byte per weight + one scale byte per 32 inputs = 0.53125 B/weight.
  CHECK(quantized_matrix_bytes(4096, 4096, storage(weight_format::mxfp4)) == n / 2 + n / 32);
  // Dense storage: the compute dtype's bytes.
  CHECK(quantized_matrix_bytes(4096, 4096, storage(weight_format::bf16)) == 2 * n);
}

TEST_CASE("GGUF block layouts (ggml-common.h): bytes per block of 32 or 256 weights") {
  const std::uint64_t n = 4096ULL * 4096;
  CHECK(gguf_tensor_bytes(n, gguf_type::q8_0) == n / 32 * 34);    // 8.5 bits per weight
  CHECK(gguf_tensor_bytes(n, gguf_type::q6_k) == n / 256 * 210);  // 6.5625
  CHECK(gguf_tensor_bytes(n, gguf_type::q5_k) == n / 256 * 176);  // 5.5
  CHECK(gguf_tensor_bytes(n, gguf_type::q4_k) == n / 256 * 144);  // 4.5
  CHECK(gguf_tensor_bytes(n, gguf_type::q3_k) == n / 256 * 110);  // 3.4375
  CHECK(gguf_tensor_bytes(n, gguf_type::q2_k) == n / 256 * 84);   // 2.625
  CHECK(gguf_tensor_bytes(n, gguf_type::q5_0) == n / 32 * 22);
  CHECK(gguf_tensor_bytes(4096, gguf_type::f32) == 4096 * 4);
}

TEST_CASE("llama.cpp's tensor types for the K-quant mixes (llama-quant.cpp)") {
  const auto spec = preset("meta-llama/Llama-2-7b-hf");  // 32 layers, 32 KV heads
  REQUIRE(spec.ok());
  const model_spec& s = spec.value();
  auto type = [&](weight_format f, const std::string& name) {
    return gguf_tensor_type(f, tensor_named(s, name), s);
  };
  const auto q4 = weight_format::gguf_q4_k_m;
  // use_more_bits for 32 layers: 0-3, every third from 6 to 27, 28-31.
  CHECK(type(q4, "model.layers.0.self_attn.v_proj.weight") == gguf_type::q6_k);
  CHECK(type(q4, "model.layers.4.self_attn.v_proj.weight") == gguf_type::q4_k);
  CHECK(type(q4, "model.layers.6.self_attn.v_proj.weight") == gguf_type::q6_k);
  CHECK(type(q4, "model.layers.7.mlp.down_proj.weight") == gguf_type::q4_k);
  CHECK(type(q4, "model.layers.30.mlp.down_proj.weight") == gguf_type::q6_k);
  CHECK(type(q4, "model.layers.6.self_attn.q_proj.weight") == gguf_type::q4_k);
  CHECK(type(q4, "lm_head.weight") == gguf_type::q6_k);
  CHECK(type(q4, "model.embed_tokens.weight") == gguf_type::q4_k);
  CHECK(type(q4, "model.norm.weight") == gguf_type::f32);
  const auto q3 = weight_format::gguf_q3_k_m;
  CHECK(type(q3, "model.layers.1.self_attn.v_proj.weight") == gguf_type::q5_k);
  CHECK(type(q3, "model.layers.2.self_attn.v_proj.weight") == gguf_type::q4_k);
  CHECK(type(q3, "model.layers.1.mlp.down_proj.weight") == gguf_type::q5_k);  // below 32/16
  CHECK(type(q3, "model.layers.2.mlp.down_proj.weight") == gguf_type::q4_k);
  CHECK(type(q3, "model.layers.2.self_attn.o_proj.weight") == gguf_type::q4_k);
  CHECK(type(q3, "model.layers.2.mlp.up_proj.weight") == gguf_type::q3_k);
  // Q2_K: attn_v at Q3_K without grouped-query attention, Q4_K with 4+ query heads per KV head.
  CHECK(type(weight_format::gguf_q2_k, "model.layers.5.self_attn.v_proj.weight") ==
        gguf_type::q3_k);
  const auto llama3 = preset("meta-llama/Llama-3.1-8B");
  REQUIRE(llama3.ok());
  CHECK(gguf_tensor_type(weight_format::gguf_q2_k,
                         tensor_named(llama3.value(), "model.layers.5.self_attn.v_proj.weight"),
                         llama3.value()) == gguf_type::q4_k);
  // Q8_0 and Q6_K files keep one type; rows that are not a multiple of 256 fall back.
  CHECK(type(weight_format::gguf_q8_0, "lm_head.weight") == gguf_type::q8_0);
  tensor_spec odd = tensor_named(s, "model.layers.5.mlp.up_proj.weight");
  odd.shape = {18176, 4544};  // Falcon-7B's rows: 4544 = 17.75 x 256
  CHECK(gguf_tensor_type(q4, odd, s) == gguf_type::q5_0);
}

TEST_CASE("GGUF tensor bytes match published Llama-2-7B files up to one constant header") {
  const auto spec = preset("meta-llama/Llama-2-7b-hf");
  REQUIRE(spec.ok());
  const auto golden = test::read_json("tests/golden/gguf_file_sizes.json");
  std::int64_t header = -1;
  for (const auto& item : golden.at("files").items()) {
    const std::string name = item.key();
    const auto& file_bytes = item.value();
    CAPTURE(name);
    inference_config c;
    c.weights.format = *weight_format_named(name);
    c.framework = serving_framework::llama_cpp;
    c.kv = kv_cache_kind::static_cache;
    auto e = estimate_inference(spec.value(), c, gpu_with(80 * gib));
    REQUIRE(e.ok());
    const std::int64_t rest =
        file_bytes.get<std::int64_t>() - static_cast<std::int64_t>(e.value().weight_bytes);
    CHECK(rest > 0);
    CHECK(rest < 2000000);
    if (header >= 0) CHECK(rest == header);
    header = rest;
  }
}

TEST_CASE("KV cache bytes: GQA, tensor-parallel shares, pipeline stages, dtype, sliding window") {
  const auto spec = preset("meta-llama/Llama-3.1-8B");  // 32 layers, 8 KV heads of 128
  REQUIRE(spec.ok());
  inference_config c;
  // 2 (K and V) x 32 layers x 8 heads x 128 x 2 bytes = 131,072 bytes per token.
  CHECK(kv_cache_bytes(spec.value(), c, 1) == 131072);
  CHECK(kv_cache_bytes(spec.value(), c, 1000) == 131072000);
  c.kv_bytes = 1;  // fp8
  CHECK(kv_cache_bytes(spec.value(), c, 1) == 65536);
  c.kv_bytes = 2;
  c.tp_degree = 4;  // two KV heads per rank
  CHECK(kv_cache_bytes(spec.value(), c, 1) == 32768);
  c.tp_degree = 1;
  c.pp_degree = 4;  // 8 layers per stage
  CHECK(kv_cache_bytes(spec.value(), c, 1) == 32768);

  const auto mistral = preset("mistralai/Mistral-7B-v0.1");  // sliding window 4096
  REQUIRE(mistral.ok());
  inference_config m;
  CHECK(kv_cache_bytes(mistral.value(), m, 8192) == kv_cache_bytes(mistral.value(), m, 4096));
  m.framework = serving_framework::litgpt;  // litgpt allocates the full length
  CHECK(kv_cache_bytes(mistral.value(), m, 8192) == 2 * kv_cache_bytes(mistral.value(), m, 4096));
}

TEST_CASE("MLA: vLLM caches the latent and the rope key, transformers the decompressed heads") {
  const auto spec = preset("deepseek-ai/DeepSeek-V3");
  REQUIRE(spec.ok());
  const auto& s = spec.value();
  inference_config c;
  c.framework = serving_framework::vllm;
  // (kv_lora_rank 512 + rope 64) x 2 bytes x 61 layers.
  CHECK(kv_cache_bytes(s, c, 1) == (512 + 64) * 2 * s.layers.size());
  c.framework = serving_framework::transformers;
  // 128 heads x (192 key + 128 value) x 2 bytes x 61 layers.
  CHECK(kv_cache_bytes(s, c, 1) == 128 * (192 + 128) * 2 * s.layers.size());
}

TEST_CASE("a preallocated cache and 16-bit weights: the peak holds the weights and the cache") {
  const auto spec = preset("meta-llama/Llama-2-7b-hf");
  REQUIRE(spec.ok());
  inference_config c;
  c.framework = serving_framework::litgpt;
  c.kv = kv_cache_kind::static_cache;
  c.prompt_tokens = 6;
  c.new_tokens = 50;
  auto e = estimate_inference(spec.value(), c, gpu_with(40 * gib));
  REQUIRE(e.ok());
  CHECK(e.value().weight_bytes == 6738415616ULL * 2);
  // 56 tokens x 2 x 32 layers x 4096 x 2 bytes.
  CHECK(e.value().kv_cache_bytes == 56ULL * 2 * 32 * 4096 * 2);
  const auto& at_peak = e.value().peak.by_category;
  CHECK(at_peak[static_cast<std::size_t>(memory_category::weights)] == 6738415616ULL * 2);
  CHECK(e.value().peak.allocated > 6738415616ULL * 2 + 56ULL * 2 * 32 * 4096 * 2);
}

TEST_CASE("a pipeline holds Gemma 3's vision tower on its first stage, beside the embedding") {
  const auto spec = parse_model_config(test::read_json("tests/configs/gemma-3-4b.json"), {}, "c");
  REQUIRE(spec.ok());
  std::uint64_t tower = 0;
  for (const auto& t : spec.value().tensors)
    if (t.role == tensor_role::vision) tower += t.numel() * 2;
  inference_config c;
  c.pp_degree = 2;
  std::uint64_t stage_weights[2] = {0, 0};
  for (std::uint64_t stage = 0; stage < 2; ++stage) {
    c.pp_stage = stage;
    auto e = estimate_inference(spec.value(), c, gpu_with(80 * gib));
    REQUIRE(e.ok());
    stage_weights[stage] = e.value().weight_bytes;
  }
  // 17 blocks each; the first stage has the embedding (tied: the last holds it again as the LM
  // head) and the tower, the last the final norm (2560 bf16 weights).
  CHECK(stage_weights[0] - stage_weights[1] == tower - 2560 * 2);
}

TEST_CASE("a static cache's default length: transformers max_length - 1, litgpt prompt + new") {
  const auto spec = preset("meta-llama/Llama-2-7b-hf");
  REQUIRE(spec.ok());
  inference_config c;
  c.kv = kv_cache_kind::static_cache;
  c.prompt_tokens = 1024;
  c.new_tokens = 128;
  auto transformers = estimate_inference(spec.value(), c, gpu_with(40 * gib));
  c.framework = serving_framework::litgpt;
  auto litgpt = estimate_inference(spec.value(), c, gpu_with(40 * gib));
  REQUIRE(transformers.ok());
  REQUIRE(litgpt.ok());
  // 2 x 32 layers x 4096 x 2 bytes a token.
  CHECK(transformers.value().kv_cache_bytes == 1151ULL * 2 * 32 * 4096 * 2);
  CHECK(litgpt.value().kv_cache_bytes == 1152ULL * 2 * 32 * 4096 * 2);
}

TEST_CASE("bitsandbytes 4-bit prefill dequantises one weight at a time; litgpt twice for bf16") {
  const auto spec = preset("meta-llama/Llama-2-7b-hf");
  REQUIRE(spec.ok());
  inference_config c;
  c.weights.format = weight_format::nf4;
  c.prompt_tokens = 64;
  c.new_tokens = 1;
  auto plain = estimate_inference(spec.value(), c, gpu_with(40 * gib));
  c.framework = serving_framework::litgpt;  // also quantises and projects lm_head
  auto litgpt = estimate_inference(spec.value(), c, gpu_with(40 * gib));
  REQUIRE(plain.ok());
  REQUIRE(litgpt.ok());
  // transformers keeps lm_head (32000 x 4096) in bf16; litgpt stores it in 4 bits.
  const std::uint64_t head = 32000ULL * 4096;
  CHECK(plain.value().weight_bytes - litgpt.value().weight_bytes ==
        2 * head - head / 2 - head / 16);
  // litgpt's peak: lm_head dequantised to fp16 and converted to bf16 (2 x 2 bytes per weight).
  const auto& a = litgpt.value().peak.by_category;
  CHECK(a[static_cast<std::size_t>(memory_category::activations)] >= 4 * head);
}

TEST_CASE("MoE experts: bitsandbytes in transformers leaves the fused experts in 16 bits") {
  const auto spec = preset("mistralai/Mixtral-8x7B-v0.1");
  REQUIRE(spec.ok());
  std::uint64_t experts = 0;
  for (const auto& t : spec.value().tensors) {
    if (t.role == tensor_role::routed_experts) experts += t.numel();
  }
  inference_config c;
  c.weights.format = weight_format::nf4;
  c.prompt_tokens = 8;
  auto transformers = estimate_inference(spec.value(), c, gpu_with(192 * gib));
  c.framework = serving_framework::vllm;
  c.kv = kv_cache_kind::paged;
  c.weights.format = weight_format::awq_4bit;
  auto vllm = estimate_inference(spec.value(), c, gpu_with(192 * gib));
  REQUIRE(transformers.ok());
  REQUIRE(vllm.ok());
  CHECK(transformers.value().weight_bytes > 2 * experts);  // experts at 2 bytes each
  CHECK(vllm.value().weight_bytes < experts);              // about half a byte each
  // Tensor parallelism splits every expert's width.
  c.tp_degree = 8;
  auto split = estimate_inference(spec.value(), c, gpu_with(192 * gib));
  REQUIRE(split.ok());
  CHECK(split.value().weight_bytes < vllm.value().weight_bytes / 6);
}

TEST_CASE("gpt-oss-20b in MXFP4: its experts in 4.25 bits, the rest in bf16, by hand") {
  const auto spec = parse_model_config(test::read_json("tests/configs/gpt-oss-20b.json"), {}, "c");
  REQUIRE(spec.ok());
  inference_config c;
  c.weights.format = weight_format::mxfp4;
  c.prompt_tokens = 8;
  auto e = estimate_inference(spec.value(), c, gpu_with(80 * gib));
  REQUIRE(e.ok());
  // 24 blocks of 32 experts: gate_up [2880, 5760] and down [2880, 2880] in codes and scales
  // (13,219,200 bytes an expert); the other 1,804,459,584 parameters (expert biases included)
  // at 2 bytes: 13.8 GB, OpenAI's "within 16GB of memory".
  const std::uint64_t expert = 2880ULL * 5760 / 2 + 2880 * 180 + 2880ULL * 2880 / 2 + 2880 * 90;
  CHECK(expert == 13219200);
  const std::uint64_t dense = 20914757184ULL - 24ULL * 32 * (2880ULL * 5760 + 2880ULL * 2880);
  CHECK(e.value().weight_bytes == 24ULL * 32 * expert + 2 * dense);
  // Without routed experts there is nothing for MXFP4 to hold.
  const auto dense_model = preset("gpt2");
  REQUIRE(dense_model.ok());
  auto refused = estimate_inference(dense_model.value(), c, gpu_with(80 * gib));
  REQUIRE_FALSE(refused.ok());
  CHECK(refused.failure().field == "workload.weights");
}

TEST_CASE("Llama 4 in transformers runs every token through every expert; vLLM its top-k") {
  auto spec = parse_model_config({{"model_type", "llama4_text"},
                                  {"hidden_size", 64},
                                  {"intermediate_size", 32},
                                  {"num_hidden_layers", 1},
                                  {"num_attention_heads", 4},
                                  {"num_key_value_heads", 2},
                                  {"head_dim", 16},
                                  {"num_local_experts", 4},
                                  {"vocab_size", 100}},
                                 {}, "c");
  REQUIRE(spec.ok());
  inference_config c;
  c.prompt_tokens = 64;
  const auto activations = [&] {
    auto e = estimate_inference(spec.value(), c, gpu_with(80 * gib));
    REQUIRE(e.ok());
    return e.value().peak.by_category[static_cast<std::size_t>(memory_category::activations)];
  };
  const std::uint64_t dense = activations();
  spec.value().moe.dense_dispatch = false;
  const std::uint64_t top_1 = activations();
  // The 64 prompt tokens repeated for 4 experts (bf16, 32 KiB) at least; the gate, SiLU and up
  // over 3 more experts' 32 features on top.
  CHECK(dense >= top_1 + 64 * 4 * 64 * 2);
  c.framework = serving_framework::vllm;
  const std::uint64_t vllm_top_1 = activations();
  spec.value().moe.dense_dispatch = true;
  CHECK(activations() == vllm_top_1);
}

TEST_CASE("A windowed layer's prefill at its window: SDPA's mask and repeated K/V, not flash's") {
  const auto spec = parse_model_config({{"model_type", "mistral"},
                                        {"hidden_size", 256},
                                        {"intermediate_size", 512},
                                        {"num_hidden_layers", 2},
                                        {"num_attention_heads", 4},
                                        {"num_key_value_heads", 1},
                                        {"head_dim", 64},
                                        {"vocab_size", 100},
                                        {"sliding_window", 64}},
                                       {}, "c");
  REQUIRE(spec.ok());
  inference_config c;
  const auto peak = [&](attention_kernel kernel, std::uint64_t prompt) {
    c.attention = kernel;
    c.prompt_tokens = prompt;
    auto e = estimate_inference(spec.value(), c, gpu_with(80 * gib));
    REQUIRE(e.ok());
    return e.value().peak.allocated;
  };
  // Under the window transformers passes no mask; from it on, a 1024 x 1024 bf16 mask (2 MiB)
  // and K/V repeated from 1 to 4 heads (1 MiB) live while the kernel runs, which makes the
  // attention the prefill's busiest moment.
  CHECK(peak(attention_kernel::sdpa, 63) == peak(attention_kernel::flash, 63));
  CHECK(peak(attention_kernel::sdpa, 1024) > peak(attention_kernel::flash, 1024));
}

TEST_CASE("SDPA's math kernel: Falcon-7B's single K/V head in transformers, fp32 GQA") {
  const auto falcon = preset("tiiuae/falcon-7b");     // 71 query heads, 1 K/V head
  const auto falcon40 = preset("tiiuae/falcon-40b");  // 128 query heads, 8 K/V heads (broadcast)
  const auto llama = preset("meta-llama/Llama-3.1-8B");
  REQUIRE(falcon.ok());
  REQUIRE(falcon40.ok());
  REQUIRE(llama.ok());
  CHECK(sdpa_math_kernel(falcon.value(), 2, true));
  CHECK_FALSE(sdpa_math_kernel(falcon.value(), 2, false));  // litgpt repeats K/V
  CHECK_FALSE(sdpa_math_kernel(falcon40.value(), 2, true));
  CHECK_FALSE(sdpa_math_kernel(llama.value(), 2, true));
  CHECK(sdpa_math_kernel(llama.value(), 4, true));  // fp32 GQA: no fused kernel takes it
  // A 2,048-token prefill holds two fp32 score tensors of 71 x 2048 x 2048 at once.
  inference_config c;
  c.prompt_tokens = 2048;
  auto e = estimate_inference(falcon.value(), c, gpu_with(80 * gib));
  REQUIRE(e.ok());
  const std::uint64_t scores = 71ULL * 2048 * 2048 * 4;
  CHECK(e.value().peak.by_category[static_cast<std::size_t>(memory_category::activations)] >=
        2 * scores);
}

TEST_CASE("vLLM: the KV cache takes what gpu_memory_utilization leaves, in whole blocks") {
  const auto spec = preset("meta-llama/Llama-3.1-8B");
  REQUIRE(spec.ok());
  inference_config c;
  c.framework = serving_framework::vllm;
  c.kv = kv_cache_kind::paged;
  c.prompt_tokens = 1000;
  c.new_tokens = 24;
  auto e = estimate_inference(spec.value(), c, gpu_with(80 * gib));
  REQUIRE(e.ok());
  const auto& v = e.value();
  CHECK(v.kv_capacity_tokens % 16 == 0);
  CHECK(v.kv_cache_bytes == v.kv_capacity_tokens * 131072);
  CHECK(v.concurrent_sequences == v.kv_capacity_tokens / 1024);
  // Everything vLLM counts stays within 90 % of the card, less than one block short of it.
  const double budget = 0.9 * static_cast<double>(80 * gib);
  const double counted = static_cast<double>(v.peak.allocated + cuda_libraries_bytes());
  CHECK(counted <= budget);
  CHECK(counted > budget - 16.0 * 131072);
  // A card too small for the weights has no cache at all.
  auto small = estimate_inference(spec.value(), c, gpu_with(16 * gib));
  REQUIRE(small.ok());
  CHECK(small.value().kv_capacity_tokens == 0);
  CHECK_FALSE(small.value().fits_request);
}

TEST_CASE("the max-context and max-batch solvers agree with brute force") {
  const auto spec = preset("meta-llama/Llama-3.2-1B");
  REQUIRE(spec.ok());
  for (const auto kind : {kv_cache_kind::dynamic, kv_cache_kind::static_cache}) {
    CAPTURE(static_cast<int>(kind));
    inference_config c;
    c.kv = kind;
    c.new_tokens = 16;
    c.batch = 64;
    const std::uint64_t usable = 4 * gib;
    const std::uint64_t context_bytes = 0;
    auto solved = solve_inference_limit(spec.value(), c, gpu_with(usable), usable, context_bytes,
                                        inference_limit::max_context, 131072);
    REQUIRE(solved.ok());
    const std::uint64_t best = solved.value().value;
    REQUIRE(best > 65);
    REQUIRE(best < 4000);
    // Brute force around the answer: it fits and one token more does not. A static cache that
    // transformers allocates layer by layer inside the prefill (4.56+) interleaves with the
    // activations, so the allocator's segments, and the fit, swing by a few tokens around the
    // boundary; beyond 32 tokens either side every context fits below and none above.
    for (std::uint64_t tokens = best - 64; tokens <= best + 64; ++tokens) {
      inference_config t = c;
      t.prompt_tokens = tokens - c.new_tokens;
      auto ranks = estimate_inference_ranks(spec.value(), t, gpu_with(usable), usable, 0);
      REQUIRE(ranks.ok());
      CAPTURE(tokens);
      if (tokens == best || tokens + 32 < best) CHECK(ranks.value().fits);
      if (tokens == best + 1 || tokens > best + 32) CHECK_FALSE(ranks.value().fits);
      if (kind == kv_cache_kind::dynamic) CHECK(ranks.value().fits == (tokens <= best));
    }
  }
  inference_config c;
  c.prompt_tokens = 2048;
  c.new_tokens = 128;
  const std::uint64_t usable = 6 * gib;
  auto solved = solve_inference_limit(spec.value(), c, gpu_with(usable), usable, 0,
                                      inference_limit::max_batch, 1 << 20);
  REQUIRE(solved.ok());
  const std::uint64_t best = solved.value().value;
  REQUIRE(best > 1);
  for (std::uint64_t batch = 1; batch <= best + 8; ++batch) {
    inference_config t = c;
    t.batch = batch;
    auto ranks = estimate_inference_ranks(spec.value(), t, gpu_with(usable), usable, 0);
    REQUIRE(ranks.ok());
    CHECK(ranks.value().fits == (batch <= best));
  }
}

TEST_CASE("inference refuses what it does not model, naming the field") {
  const auto spec = preset("meta-llama/Llama-3.1-8B");
  REQUIRE(spec.ok());
  inference_config c;
  c.weights.format = weight_format::gguf_q4_k_m;  // GGUF outside llama.cpp
  auto e = estimate_inference(spec.value(), c, gpu_with(80 * gib));
  REQUIRE_FALSE(e.ok());
  CHECK(e.failure().field == "workload.weights");
  c.weights.format = weight_format::bf16;
  c.tp_degree = 3;
  e = estimate_inference(spec.value(), c, gpu_with(80 * gib));
  REQUIRE_FALSE(e.ok());
  CHECK(e.failure().code == "parallel.invalid_degree");
}

}  // namespace
}  // namespace gpumem

namespace gpumem {
namespace {

// Llama 2 7B, fp16, 16 sequences of a 1,024-token prompt and 128 new tokens, through a stated
// transformers release (generate_release.cpp).
result<inference_estimate> generated(const model_spec& spec, const char* release,
                                     std::uint64_t new_tokens = 128) {
  inference_config c;
  c.weights.format = weight_format::fp16;
  c.activation_bf16 = false;
  c.batch = 16;
  c.prompt_tokens = 1024;
  c.new_tokens = new_tokens;
  if (release) c.transformers = parse_library_release(release);
  return estimate_inference(spec, c, gpu_with(80ULL << 30));
}

// The activations alive at an estimate's peak.
std::uint64_t peak_activations(const inference_estimate& e) {
  return e.peak.by_category[static_cast<std::size_t>(memory_category::activations)];
}

TEST_CASE(
    "a prefill holds each block's input until the block returns, transformers its embedding") {
  // Llama-3.2-1B (h 2,048, i 8,192), 16 x 4,096 tokens: the last block's MLP is the peak, with
  // its product made while act(gate) and up live. Counted by hand per token, bf16: transformers
  // holds inputs_embeds, the block's input, the attention's residual sum and the normalised
  // input (4 x 2h) beside the three MLP tensors (3 x 2i).
  const auto spec = preset("meta-llama/Llama-3.2-1B");
  REQUIRE(spec.ok());
  const std::uint64_t tokens = 16ULL * 4096, h = 2048, i = 8192;
  inference_config c;
  c.batch = 16;
  c.prompt_tokens = 4096;
  c.new_tokens = 128;
  const auto generate = estimate_inference(spec.value(), c, gpu_with(80 * gib));
  REQUIRE(generate.ok());
  CHECK(generate.value().peak.phase == "prefill");
  CHECK(peak_activations(generate.value()) == tokens * (4 * 2 * h + 3 * 2 * i));
  // A plain forward (one new token) projects every position: by the LM head the final norm has
  // returned, the last block's output and the embedding are dropped, the normalised states alone
  // live beside the logits.
  c.framework = serving_framework::transformers;
  c.new_tokens = 1;
  c.batch = 4;
  const auto forward = estimate_inference(spec.value(), c, gpu_with(80 * gib));
  REQUIRE(forward.ok());
  CHECK(peak_activations(forward.value()) == 4ULL * 4096 * (128256 * 2 + 2 * h));
}

TEST_CASE("eager attention's softmax copies a bf16 input to fp32 first, not an fp16 one") {
  // Llama-3.2-1B, one 4,096-token prompt under eager attention: the last block's scores (32
  // heads x 4,096 x 4,096) set the peak. softmax(x, dtype=float32) in bf16 holds the scores, an
  // fp32 copy and the fp32 output (10 bytes a score); in fp16 the fused half_to_float kernel
  // writes the fp32 output straight from the scores (6), its cast back then adding 2 (8).
  const auto spec = preset("meta-llama/Llama-3.2-1B");
  REQUIRE(spec.ok());
  inference_config c;
  c.prompt_tokens = 4096;
  c.new_tokens = 2;
  c.attention = attention_kernel::eager;
  const auto bf16 = estimate_inference(spec.value(), c, gpu_with(80 * gib));
  c.activation_bf16 = false;
  c.weights.format = weight_format::fp16;
  const auto fp16 = estimate_inference(spec.value(), c, gpu_with(80 * gib));
  REQUIRE(bf16.ok());
  REQUIRE(fp16.ok());
  const std::uint64_t scores = 32ULL * 4096 * 4096;
  CHECK(peak_activations(bf16.value()) - peak_activations(fp16.value()) == 2 * scores);
  CHECK(peak_activations(fp16.value()) >= 8 * scores);
}

TEST_CASE("transformers 4.56+ allocates a static cache layer by layer inside the prefill") {
  const auto spec = preset("meta-llama/Llama-3.1-8B");
  REQUIRE(spec.ok());
  inference_config c;
  c.batch = 16;
  c.prompt_tokens = 4096;
  c.new_tokens = 128;
  c.kv = kv_cache_kind::static_cache;
  c.timeline_samples = 4096;
  const auto today = estimate_inference(spec.value(), c, gpu_with(140 * gib));
  c.transformers = parse_library_release("4.55.4");
  const auto before = estimate_inference(spec.value(), c, gpu_with(140 * gib));
  REQUIRE(today.ok());
  REQUIRE(before.ok());
  // The same tensors at the peak (the last block holds every layer's cache either way), less
  // a segment's tail the allocator hands out unsplit (under 1 MiB a block, counted allocated)...
  const auto gap = static_cast<std::int64_t>(today.value().peak.allocated) -
                   static_cast<std::int64_t>(before.value().peak.allocated);
  CHECK(std::abs(gap) <= (4LL << 20));
  const std::uint64_t cache = 32ULL * 2 * 16 * (4096 + 127) * 8 * 128 * 2;
  CHECK(today.value().kv_cache_bytes == cache);
  // ...but 4.55 has it all before the prefill starts, today only once the last layer updates.
  const auto cache_at_prefill = [](const inference_estimate& e) {
    const auto& t = e.timeline;
    const auto phase = std::find(t.phases.begin(), t.phases.end(), "prefill") - t.phases.begin();
    for (const auto& s : t.samples) {
      if (s.phase == static_cast<std::size_t>(phase))
        return s.by_category[static_cast<std::size_t>(memory_category::kv_cache)];
    }
    return std::uint64_t{0};
  };
  CHECK(cache_at_prefill(before.value()) >= cache);
  CHECK(cache_at_prefill(today.value()) < cache / 8);
  // Interleaved with the activations, the cache's blocks cut the allocator's segments: more
  // reserved (measured on an H200, validation/measured_h200_generate.json: 37.3 GiB today).
  CHECK(today.value().peak_reserved > before.value().peak_reserved);
}

TEST_CASE("transformers' generate by release: the prefill's logits, their upcast, what outlives") {
  const auto spec = preset("meta-llama/Llama-2-7b-hf");
  REQUIRE(spec.ok());
  const std::uint64_t all_logits = 16ULL * 1024 * 32000;  // B x S x V
  const std::uint64_t kv_per_token = 32ULL * 2 * 4096 * 2;
  const auto today = generated(spec.value(), nullptr);
  const auto v47 = generated(spec.value(), "4.47.0");
  const auto v44 = generated(spec.value(), "4.44.2");
  const auto v40 = generated(spec.value(), "4.40.1");
  REQUIRE(today.ok());
  REQUIRE(v47.ok());
  REQUIRE(v44.ok());
  REQUIRE(v40.ok());
  // From 4.45 the prefill projects the last position only: 4.47 is today's.
  CHECK(v47.value().peak.allocated == today.value().peak.allocated);
  CHECK(v47.value().notes == today.value().notes);
  // 4.44: every position through the LM head in fp16, then its fp32 copy (both alive at once).
  CHECK(v44.value().peak.phase == "prefill");
  CHECK(v44.value().peak.by_category[static_cast<std::size_t>(memory_category::logits_and_loss)] >=
        all_logits * 4);
  CHECK(v44.value().peak.allocated >=
        v44.value().weight_bytes + 16 * 1024 * kv_per_token + all_logits * 6);
  // (Today's prefill peaks in the last block's MLP, about 3 bytes a logit's worth here.)
  CHECK(today.value().peak.allocated < v44.value().peak.allocated - all_logits * 2);
  // 4.40: the fp32 logits live through the first decode step, beside the prompt's cache and its
  // grown copy (the previous KV tuple kept until the forward returns).
  CHECK(v40.value().peak.phase == "decode");
  CHECK(v40.value().peak.allocated >=
        v40.value().weight_bytes + all_logits * 4 + 2 * 16 * 1024 * kv_per_token);
  bool said = false;
  for (const auto& n : v40.value().notes) said = said || n.find("transformers 4.40") == 0;
  CHECK(said);
  // One new token: no decode step, the prefill alone.
  const auto one = generated(spec.value(), "4.40.1", 1);
  REQUIRE(one.ok());
  CHECK(one.value().peak.phase == "prefill");
}

// `c` through transformers' generate() of a stated release, on an 80 GiB GPU.
inference_estimate generated_by(const model_spec& spec, inference_config c, const char* release) {
  c.transformers = parse_library_release(release);
  auto e = estimate_inference(spec, c, gpu_with(80ULL << 30));
  REQUIRE(e.ok());
  return e.value();
}

TEST_CASE("GPT-2 has no logits_to_keep through 4.47: 4.45 and 4.46 clone all its logits") {
  const auto spec = preset("gpt2");
  REQUIRE(spec.ok());
  inference_config c;
  c.weights.format = weight_format::fp16;
  c.activation_bf16 = false;
  c.batch = 8;
  c.prompt_tokens = 512;
  c.new_tokens = 16;
  const auto at = [&](const char* release) {
    return generated_by(spec.value(), c, release).peak.allocated;
  };
  const std::uint64_t logits = 8ULL * 512 * 50257 * 2;
  CHECK(at("4.46.3") >= at("4.47.1") + logits);  // the whole clone
  CHECK(at("4.47.1") > at("4.48.0"));            // every position, as until 4.48
}

TEST_CASE("transformers before 4.54 copies grouped-query K/V to every head before SDPA") {
  const auto spec = preset("meta-llama/Llama-3.1-8B");  // 32 query heads, 8 K/V heads of 128
  REQUIRE(spec.ok());
  inference_config c;
  c.batch = 4;
  c.prompt_tokens = 256;
  c.new_tokens = 2048;
  const auto v453 = generated_by(spec.value(), c, "4.53.2");
  const auto v454 = generated_by(spec.value(), c, "4.54.0");
  // The last decode step attends over 2,303 positions: one layer's keys and values repeated to
  // 32 heads (4,096 features each) in bf16 are alive while its kernel runs.
  const std::uint64_t repeated = 4ULL * 2303 * (4096 + 4096) * 2;
  CHECK(v453.peak.phase == "decode");
  CHECK(v453.peak.allocated > v454.peak.allocated + repeated * 9 / 10);
  CHECK(v453.peak.allocated <= v454.peak.allocated + repeated);
  bool said = false;
  for (const auto& n : v453.notes) said = said || n.find("copied to every query head") != n.npos;
  CHECK(said);
  CHECK(v454.notes.empty());
}

TEST_CASE("GPTQ under transformers 4.32-4.48: AutoGPTQ's exllama buffers, act-order's too") {
  // Llama-2-7B's largest quantised matrix is an MLP projection of 4,096 x 11,008.
  const auto spec = preset("TheBloke/Llama-2-7B-GPTQ");
  REQUIRE(spec.ok());
  inference_config c;
  c.weights.format = weight_format::gptq_4bit;
  c.weights.dense_bytes = 2;
  c.batch = 1;
  c.prompt_tokens = 512;
  c.new_tokens = 16;
  const auto loaded = [&](const char* release) {
    const auto e = generated_by(spec.value(), c, release);
    return e.peak.by_category[static_cast<std::size_t>(memory_category::other)];
  };
  const std::uint64_t dequantised = 4096ULL * 11008 * 2;
  CHECK(loaded("4.40.0") == dequantised + 512);  // temp_state [1, 1] takes a 512-byte block
  CHECK(loaded("4.31.0") == 0);                  // before transformers read GPTQ checkpoints
  CHECK(loaded("4.49.0") == 0);                  // GPTQModel's kernels since
  c.weights.act_order = true;                    // desc_act: 2,048 rows of the widest side
  // (its segment, rounded to 2 MiB, leaves 1 MiB unsplit: the allocator's block keeps it)
  const std::uint64_t reordered = 2048ULL * 11008 * 2;
  CHECK(loaded("4.40.0") >= dequantised + reordered);
  CHECK(loaded("4.40.0") <= dequantised + reordered + (2ULL << 20));
  const auto e = generated_by(spec.value(), c, "4.40.0");
  bool said = false;
  for (const auto& note : e.notes) said = said || note.find("exllama") != std::string::npos;
  CHECK(said);
}

}  // namespace
}  // namespace gpumem
