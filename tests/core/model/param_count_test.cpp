// Parameter tensors and counts against ground truth: every tensor's name, shape and order as
// transformers 5.17 builds the model on the meta device (tests/golden/hf_param_counts.json, made
// by tools/measure/param_counts.py), and the published counts the presets carry (from
// ../shared/reference/models.json).

#include "gpumem/model/param_count.hpp"

#include <doctest/doctest.h>

#include <string>

#include "gpumem/model/config_parser.hpp"
#include "test_files.hpp"

namespace gpumem {
namespace {

using nlohmann::json;

json config_for(const std::string& id, const json& reference) {
  if (id.rfind("tests/configs/", 0) == 0) return test::read_json(id);
  return reference.at(id).at("config");
}

std::string shape_text(const json& shape) { return shape.dump(); }

std::string shape_text(const tensor_shape& shape) {
  return json(std::vector<std::uint64_t>(shape.begin(), shape.end())).dump();
}

TEST_CASE("every tensor matches transformers, name by name, in registration order") {
  const json golden = test::read_json("tests/golden/hf_param_counts.json");
  const json corrections = test::read_json("tests/golden/param_count_corrections.json");
  const json reference = test::read_presets();
  REQUIRE(golden.is_object());
  REQUIRE(reference.is_object());
  int compared = 0;
  for (const auto& model : golden.at("models").items()) {
    const std::string id = model.key();
    for (const auto& variant : model.value().items()) {
      const std::string head = variant.key();
      const json& expected = variant.value();
      CAPTURE(id);
      CAPTURE(head);
      model_options options;
      if (head != "causal_lm") options.task_head = head;
      auto spec = parse_model_config(config_for(id, reference), options, "model.config");
      REQUIRE_MESSAGE(spec.ok(), (spec.ok() ? "" : spec.failure().message));
      json tensors = expected.at("tensors");
      if (corrections.at("append").contains(id)) {
        for (const auto& extra : corrections.at("append").at(id)) tensors.push_back(extra);
      }
      if (expected.contains("class")) CHECK(spec.value().architecture == expected.at("class"));
      const auto& ours = spec.value().tensors;
      CHECK(ours.size() == tensors.size());
      for (std::size_t i = 0; i < ours.size() && i < tensors.size(); ++i) {
        CAPTURE(i);
        CHECK(ours[i].name == tensors[i][0].get<std::string>());
        CHECK(shape_text(ours[i].shape) == shape_text(tensors[i][1]));
      }
      std::uint64_t expected_total = 0;
      for (const auto& t : tensors) {
        std::uint64_t n = 1;
        for (const auto& d : t[1]) n *= d.get<std::uint64_t>();
        expected_total += n;
      }
      auto counts = count_params(spec.value());
      REQUIRE(counts.ok());
      CHECK(counts.value().total == expected_total);
      ++compared;
    }
  }
  CHECK(compared == 52);  // 41 presets, BERT under 6 heads, 5 extra architectures
}

TEST_CASE("published parameter counts are reproduced exactly") {
  const json reference = test::read_presets();
  REQUIRE(reference.is_object());
  int checked = 0;
  for (const auto& item : reference.items()) {
    const std::string id = item.key();
    const json& entry = item.value();
    if (entry.at("published_params").is_null()) continue;
    CAPTURE(id);
    auto spec = parse_model_config(entry.at("config"), {}, "model.config");
    REQUIRE(spec.ok());
    auto counts = count_params(spec.value());
    REQUIRE(counts.ok());
    CHECK(counts.value().total == entry.at("published_params").get<std::uint64_t>());
    ++checked;
  }
  CHECK(checked >= 1);
}

// Families checked by hand rather than against transformers' own build: the config.json values of
// Qwen/Qwen3-0.6B, Qwen/Qwen3-8B, Qwen/Qwen3-30B-A3B and google/gemma-3-1b-it (tests/configs/),
// totals that equal keras-hub's qwen3_presets.py / gemma3_presets.py counts and round to the
// model cards' (0.6B, 8.2B with 6.95B non-embedding, 30.5B with 3.3B active; Gemma 3 report:
// 302M embedding + 698M non-embedding).
TEST_CASE("Qwen3, Qwen3-MoE and Gemma 3 text totals, by hand and by their model cards") {
  const auto count = [](const char* file) {
    auto spec = parse_model_config(test::read_json(file), {}, "c");
    REQUIRE(spec.ok());
    auto c = count_params(spec.value());
    REQUIRE(c.ok());
    return c.value();
  };
  // Qwen3-0.6B, tied: 151936 x 1024 embedding; per block q 1024x2048, k and v 1024x1024 each,
  // o 2048x1024, q_norm and k_norm 128 each, gate/up/down 3 x 1024 x 3072, two norms of 1024.
  const std::uint64_t block_06 =
      1024ULL * 2048 * 2 + 1024ULL * 1024 * 2 + 2 * 128 + 3ULL * 1024 * 3072 + 2 * 1024;
  CHECK(count("tests/configs/qwen3-0.6b.json").total == 151936ULL * 1024 + 28 * block_06 + 1024);
  CHECK(count("tests/configs/qwen3-0.6b.json").total == 596049920ULL);
  CHECK(count("tests/configs/qwen3-8b.json").total == 8190735360ULL);
  // 48 MoE blocks: a router of 128 x 2048 and 128 experts of 3 x 2048 x 768, 8 of them active.
  const auto moe = count("tests/configs/qwen3-30b-a3b.json");
  CHECK(moe.total == 30532122624ULL);
  CHECK(moe.active == moe.total - 48ULL * 120 * 3 * 2048 * 768);
  CHECK(moe.active == 3353032704ULL);
  // Gemma 3 1B: tied 262144 x 1152 embedding, four norms a block and q/k norms of 256.
  CHECK(count("tests/configs/gemma-3-1b.json").total == 999885952ULL);
  // Gemma 3 4B (google/gemma-3-4b-it, model_type gemma3): the language model from text_config
  // over Gemma3TextConfig's defaults (vocab 262208, 8 heads, 4 KV heads, head_dim 256), SigLIP
  // (per layer 4 x (1152^2 + 1152) + 2 x 1152 x 4304 + 4304 + 1152 + 2 x 2 x 1152; 64^2 patch
  // positions; a 3 x 14 x 14 patch Conv2d) and the projector (1152 x 2560 + 1152): the technical
  // report's 417M vision and 3,209M + 675M language parameters.
  const auto gemma3 = count("tests/configs/gemma-3-4b.json");
  const std::uint64_t siglip_layer =
      4 * (1152ULL * 1152 + 1152) + 2 * 1152ULL * 4304 + 4304 + 1152 + 4 * 1152;
  const std::uint64_t siglip = 1152ULL * 588 + 1152 + 4096ULL * 1152 + 27 * siglip_layer + 2 * 1152;
  CHECK(siglip == 416866032ULL);
  CHECK(gemma3.groups.vision == siglip + 1152ULL * 2560 + 1152);
  CHECK(gemma3.total == 4300079472ULL);
  CHECK(gemma3.active == gemma3.total - gemma3.groups.vision);
}

TEST_CASE("CodeGen without tie_word_embeddings keeps its own LM head (CodeGenConfig's default)") {
  // codegen-350M's dimensions: 20 layers of 1024, vocabulary 51200, MLP 4096.
  json config = {{"model_type", "codegen"}, {"n_embd", 1024},  {"n_layer", 20}, {"n_head", 16},
                 {"vocab_size", 51200},     {"rotary_dim", 32}};
  auto untied = parse_model_config(config, {}, "c");
  REQUIRE(untied.ok());
  config["tie_word_embeddings"] = true;
  auto tied = parse_model_config(config, {}, "c");
  REQUIRE(tied.ok());
  CHECK_FALSE(untied.value().tied_embeddings);
  // The separate head's 51200 x 1024 weights (its bias of 51200 is its own either way).
  CHECK(count_params(untied.value()).value().total ==
        count_params(tied.value()).value().total + 51200ULL * 1024);
  CHECK(count_params(untied.value()).value().total == 356712448ULL);  // the preset's count
}

TEST_CASE("StarCoder2 by hand: biased grouped-query projections, an ungated MLP, LayerNorms") {
  // bigcode/starcoder2-3b's dimensions (3.03B parameters on its Hub page): 30 layers of
  // 3072, 24 query heads and 2 K/V heads of 128, MLP 12288, vocabulary 49152, head tied.
  json config = {
      {"model_type", "starcoder2"}, {"hidden_size", 3072},      {"num_hidden_layers", 30},
      {"num_attention_heads", 24},  {"num_key_value_heads", 2}, {"intermediate_size", 12288},
      {"vocab_size", 49152},        {"sliding_window", 4096},   {"max_position_embeddings", 16384}};
  auto spec = parse_model_config(config, {}, "c");
  REQUIRE(spec.ok());
  CHECK(spec.value().tied_embeddings);  // Starcoder2Config's default
  CHECK(spec.value().layers[7].attention == attention_pattern::sliding);
  CHECK(spec.value().layers[7].sliding_window_tokens == 4096);
  const std::uint64_t h = 3072, kv = 2 * 128, mlp = 12288;
  const std::uint64_t attention = 2 * (h * h + h) + 2 * (h * kv + kv);
  const std::uint64_t feed_forward = (h * mlp + mlp) + (mlp * h + h);
  const std::uint64_t layer = attention + feed_forward + 2 * 2 * h;
  const auto c = count_params(spec.value());
  REQUIRE(c.ok());
  CHECK(c.value().total == 49152 * h + 30 * layer + 2 * h);
  CHECK(c.value().total == 3030371328ULL);
  // use_bias false drops every linear's bias.
  config["use_bias"] = false;
  auto unbiased = parse_model_config(config, {}, "c");
  REQUIRE(unbiased.ok());
  CHECK(count_params(unbiased.value()).value().total ==
        3030371328ULL - 30 * (2 * h + 2 * kv + mlp + h));
}

TEST_CASE("gpt-oss-20b, by hand and by its model card: sinks, biased experts, sliding layers") {
  auto spec = parse_model_config(test::read_json("tests/configs/gpt-oss-20b.json"), {}, "c");
  REQUIRE(spec.ok());
  CHECK(spec.value().architecture == "GptOssForCausalLM");
  CHECK(spec.value().warnings.empty());  // read as gpt-oss, not as a Llama-like fallback
  auto c = count_params(spec.value());
  REQUIRE(c.ok());
  // Per block (GptOssDecoderLayer): biased q (64 x 64), k and v (8 x 64) and o over 2880, 64
  // sinks, a biased router of 32, 32 experts of gate_up [2880, 5760] and down [2880, 2880] with
  // their biases, two norms.
  const std::uint64_t attention =
      2880ULL * 4096 + 4096 + 2 * (2880ULL * 512 + 512) + 4096ULL * 2880 + 2880 + 64;
  const std::uint64_t experts = 32 * (2880ULL * 5760 + 5760 + 2880ULL * 2880 + 2880);
  const std::uint64_t block = attention + 32 * 2880 + 32 + experts + 2 * 2880;
  const std::uint64_t embedding = 201088ULL * 2880;
  CHECK(c.value().total == 2 * embedding + 24 * block + 2880);
  CHECK(c.value().total == 20914757184ULL);
  // The model card (OpenAI, gpt-oss-20b): MLP 19.12B, attention 0.64B, embedding and
  // unembedding 1.16B, 20.91B in all, 3.61B active (4 of 32 experts, the embedding left out).
  CHECK(c.value().groups.routed_experts == 24 * experts);
  CHECK(c.value().active - embedding == 3608307264ULL);
  for (const auto& layer : spec.value().layers) {
    CHECK(layer.moe);
    CHECK((layer.attention == attention_pattern::sliding) == (layer.index % 2 == 0));
  }
  CHECK(spec.value().attention_sinks);
}

TEST_CASE("Llama 4 Scout and Maverick, by hand and by their model cards") {
  auto config = test::read_json("tests/configs/llama-4-scout-17b-16e.json");
  auto spec = parse_model_config(config, {}, "c");
  REQUIRE(spec.ok());
  CHECK(spec.value().architecture == "Llama4ForConditionalGeneration");
  CHECK(spec.value().loss == model_loss::plain);  // its own shifted CrossEntropyLoss
  auto scout = count_params(spec.value());
  REQUIRE(scout.ok());
  // Llama4VisionModel: class embedding, 24^2 + 1 positions, the 3 x 14 x 14 unfold linear, two
  // LayerNorms; 34 layers of biased q/k/v/o over 1408, fc1/fc2 to 5632 and two LayerNorms; the
  // adapter's 5632 -> 4096 and 4096 -> 4096; the projector's 4096 -> 5120.
  const std::uint64_t vision_layer =
      4 * (1408ULL * 1408 + 1408) + 2 * 1408ULL * 5632 + 5632 + 1408 + 4 * 1408;
  const std::uint64_t vision = 1408 + 577ULL * 1408 + 588ULL * 1408 + 4 * 1408 + 34 * vision_layer +
                               5632ULL * 4096 + 4096ULL * 4096 + 4096ULL * 5120;
  CHECK(scout.value().groups.vision == vision);
  CHECK(vision == 871932416ULL);
  // Text (Llama4TextModel): q and o of 40 x 128 over 5120, k and v of 8 x 128; 16 experts of
  // gate_up [5120, 16384] and down [8192, 5120]; a router of 16; a shared expert 8192 wide; two
  // norms; untied 202048 x 5120 embedding and head.
  const std::uint64_t attention = 2 * 5120ULL * 5120 + 2 * 5120ULL * 1024;
  const std::uint64_t expert = 5120ULL * 16384 + 8192ULL * 5120;
  const std::uint64_t block = attention + 16 * expert + 16 * 5120 + expert + 2 * 5120;
  const std::uint64_t embedding = 202048ULL * 5120;
  CHECK(scout.value().total == vision + 2 * embedding + 48 * block + 5120);
  // Meta's model card: 109B total, 17B active (one routed and the shared expert a token).
  CHECK(scout.value().total == 108641793536ULL);
  CHECK(scout.value().active == 17172894720ULL);
  for (const auto& layer : spec.value().layers) {
    CHECK(layer.moe);
    // Every fourth layer is NoPE: full attention, no L2 norm; the others chunk 8192 tokens.
    const bool nope = layer.index % 4 == 3;
    CHECK(layer.l2_qk_norm == !nope);
    CHECK(layer.sliding_window_tokens == (nope ? 0 : 8192));
  }
  // Maverick (Llama-4-Maverick-17B-128E): 128 experts on every second layer (1, 3, ..., 47),
  // dense MLPs of 16384 between, no q/k norm. Card: 400B total (402B on its files page).
  auto& text = config["text_config"];
  text["num_local_experts"] = 128;
  text["interleave_moe_layer_step"] = 2;
  text.erase("moe_layers");
  text["use_qk_norm"] = false;
  auto maverick_spec = parse_model_config(config, {}, "c");
  REQUIRE(maverick_spec.ok());
  auto maverick = count_params(maverick_spec.value());
  REQUIRE(maverick.ok());
  const std::uint64_t moe_block = attention + 128 * expert + 128 * 5120 + expert + 2 * 5120;
  const std::uint64_t dense_block = attention + 3 * 5120ULL * 16384 + 2 * 5120;
  CHECK(maverick.value().total == vision + 2 * embedding + 24 * (moe_block + dense_block) + 5120);
  CHECK(maverick.value().total == 401583781376ULL);
  CHECK(maverick_spec.value().layers[1].moe);
  CHECK_FALSE(maverick_spec.value().layers[0].moe);
  CHECK_FALSE(maverick_spec.value().layers[0].l2_qk_norm);
}

TEST_CASE("Mistral Small 3.1, by hand and by its model card: Pixtral, the projector, Mistral") {
  auto config = test::read_json("tests/configs/mistral-small-3.1-24b.json");
  auto spec = parse_model_config(config, {}, "c");
  REQUIRE(spec.ok());
  CHECK(spec.value().architecture == "Mistral3ForConditionalGeneration");
  CHECK(spec.value().loss == model_loss::causal_lm);  // self.loss_function
  auto c = count_params(spec.value());
  REQUIRE(c.ok());
  // PixtralVisionModel: the 3 x 14 x 14 patch conv, ln_pre, 24 layers of two RMSNorms, a gated
  // MLP of 4096 and k/v/q/o over 1024, all bias-free; the projector's RMSNorm, 2 x 2 patch merger,
  // 1024 -> 5120 and 5120 -> 5120.
  const std::uint64_t pixtral_layer = 2 * 1024 + 3 * 1024ULL * 4096 + 4 * 1024ULL * 1024;
  const std::uint64_t projector = 1024 + 4096ULL * 1024 + 1024ULL * 5120 + 5120ULL * 5120;
  const std::uint64_t vision = 1024ULL * 588 + 1024 + 24 * pixtral_layer + projector;
  CHECK(c.value().groups.vision == vision);
  // MistralModel: q and o of 32 x 128 over 5120, k and v of 8 x 128, an MLP of 32768, two norms;
  // untied 131072 x 5120 embedding and head. The card: 24B.
  const std::uint64_t block =
      2 * 5120ULL * 4096 + 2 * 5120ULL * 1024 + 3 * 5120ULL * 32768 + 2 * 5120;
  CHECK(c.value().total == vision + 2 * 131072ULL * 5120 + 40 * block + 5120);
  CHECK(c.value().total == 24011361280ULL);
  // Two vision feature layers concatenated double linear_1's input.
  config["vision_feature_layer"] = nlohmann::json::array({-1, -2});
  auto two = parse_model_config(config, {}, "c");
  REQUIRE(two.ok());
  CHECK(count_params(two.value()).value().groups.vision == vision + 1024ULL * 5120);
  // Other language models under mistral3 (Ministral 3, Mistral 4) are not read as Mistral.
  config["text_config"]["model_type"] = "ministral3";
  auto other = parse_model_config(config, {}, "c");
  REQUIRE_FALSE(other.ok());
  CHECK(other.failure().field == "c.text_config.model_type");
}

TEST_CASE("GLM-4.5-Air, by hand and by its model card: DeepSeek's experts, biased q/k/v") {
  auto spec = parse_model_config(test::read_json("tests/configs/glm-4.5-air.json"), {}, "c");
  REQUIRE(spec.ok());
  CHECK(spec.value().architecture == "Glm4MoeForCausalLM");
  CHECK(spec.value().warnings.empty());  // read as GLM-4.5, not as a Llama-like fallback
  CHECK(spec.value().moe.fp32_router);   // Glm4MoeTopkRouter: F.linear in fp32
  auto c = count_params(spec.value());
  REQUIRE(c.ok());
  // Glm4MoeAttention: q (96 x 128) and k, v (8 x 128) over 4096 with biases, o_proj without;
  // block 0's dense MLP of 10944; then 128 experts of 1408, the router, one shared expert of
  // 1408; two norms a block. transformers builds no next-token-prediction layer (layer 46).
  const std::uint64_t attention =
      4096ULL * 12288 + 12288 + 2 * (4096ULL * 1024 + 1024) + 12288ULL * 4096;
  const std::uint64_t expert = 3 * 4096ULL * 1408;
  const std::uint64_t moe_block = attention + 128 * expert + 128 * 4096 + expert + 2 * 4096;
  const std::uint64_t dense_block = attention + 3 * 4096ULL * 10944 + 2 * 4096;
  const std::uint64_t embedding = 151552ULL * 4096;
  CHECK(c.value().total == 2 * embedding + dense_block + 45 * moe_block + 4096);
  // The model card: 106B total, 12B active (8 of 128 experts; the embeddings left out).
  CHECK(c.value().total == 106852245504ULL);
  CHECK(c.value().active - 2 * embedding == 12182609920ULL);
  CHECK_FALSE(spec.value().layers[0].moe);
  CHECK(spec.value().layers[1].moe);
}

TEST_CASE("ALBERT: a factorised embedding and one block's parameters run by every block") {
  // albert-base-v2 (huggingface.co/albert/albert-base-v2 config.json). By hand: embeddings
  // 30000 x 128 + 512 x 128 + 2 x 128 and a LayerNorm of 128; the 128 -> 768 projection; one
  // shared block: two LayerNorms of 768, q/k/v/dense 4 x (768^2 + 768), ffn 768 x 3072 + 3072,
  // ffn_output 3072 x 768 + 768; the pooler 768^2 + 768.
  const std::uint64_t embeddings = 30000ULL * 128 + 512 * 128 + 2 * 128 + 2 * 128;
  const std::uint64_t projection = 128ULL * 768 + 768;
  const std::uint64_t block =
      2 * 2 * 768 + 4 * (768ULL * 768 + 768) + 768ULL * 3072 + 3072 + 3072ULL * 768 + 768;
  const std::uint64_t pooler = 768ULL * 768 + 768;
  const auto total = [](const char* head) {
    model_options options;
    options.task_head = head;
    auto spec =
        parse_model_config(test::read_json("tests/configs/albert-base-v2.json"), options, "c");
    REQUIRE(spec.ok());
    return count_params(spec.value()).value().total;
  };
  CHECK(total("base") == embeddings + projection + block + pooler);
  CHECK(total("base") == 11683584ULL);  // AlbertModel's published size
  // AlbertForMaskedLM: no pooler; its head adds a LayerNorm of 128, the decoder's bias and the
  // 768 -> 128 dense (the decoder is tied to the word embeddings).
  CHECK(total("masked_lm") == embeddings + projection + block + 2 * 128 + 30000 + 768 * 128 + 128);

  auto spec = parse_model_config(test::read_json("tests/configs/albert-base-v2.json"), {}, "c");
  REQUIRE(spec.ok());
  CHECK(spec.value().architecture == "AlbertForMaskedLM");
  CHECK(spec.value().embedding_dim == 128);
  REQUIRE(spec.value().layers.size() == 12);
  CHECK(spec.value().layers[0].shares_params_of == -1);
  for (std::size_t l = 1; l < 12; ++l)
    CHECK(parameter_block(spec.value(), static_cast<int>(l)) == 0);
  // Two groups: blocks 0-5 run group 0, blocks 6-11 group 1 (int(i / (12 / 2))).
  auto config = test::read_json("tests/configs/albert-base-v2.json");
  config["num_hidden_groups"] = 2;
  auto two = parse_model_config(config, {}, "c");
  REQUIRE(two.ok());
  CHECK(parameter_block(two.value(), 5) == 0);
  CHECK(parameter_block(two.value(), 6) == 6);
  CHECK(parameter_block(two.value(), 11) == 6);
  CHECK(count_params(two.value()).value().total == total("masked_lm") + block);
  // Several blocks inside a group are not modelled: refused, not guessed.
  config["inner_group_num"] = 2;
  auto inner = parse_model_config(config, {}, "c");
  REQUIRE_FALSE(inner.ok());
  CHECK(inner.failure().field == "c.inner_group_num");
}

TEST_CASE("Gemma 3 slides on all but every sixth layer; Qwen3 only with use_sliding_window") {
  auto gemma = parse_model_config(test::read_json("tests/configs/gemma-3-1b.json"), {}, "c");
  REQUIRE(gemma.ok());
  int global = 0;
  for (const auto& layer : gemma.value().layers) {
    const bool sliding = layer.attention == attention_pattern::sliding;
    CHECK(sliding == ((layer.index + 1) % 6 != 0));
    if (sliding) CHECK(layer.sliding_window_tokens == 512);
    global += sliding ? 0 : 1;
  }
  CHECK(global == 4);  // layers 5, 11, 17 and 23
  CHECK(gemma.value().tied_embeddings);
  CHECK(gemma.value().post_norms);
  CHECK(gemma.value().qk_norm);

  json qwen = test::read_json("tests/configs/qwen3-8b.json");
  qwen["sliding_window"] = 4096;
  auto off = parse_model_config(qwen, {}, "c");
  qwen["use_sliding_window"] = true;
  qwen["max_window_layers"] = 30;
  auto on = parse_model_config(qwen, {}, "c");
  REQUIRE(off.ok());
  REQUIRE(on.ok());
  for (std::size_t i = 0; i < 36; ++i) {
    CHECK(off.value().layers[i].attention != attention_pattern::sliding);
    CHECK((on.value().layers[i].attention == attention_pattern::sliding) == (i >= 30));
  }
  // A config's own layer_types decides, and must name every layer.
  qwen["layer_types"] = json::array();
  for (int i = 0; i < 36; ++i)
    qwen["layer_types"].push_back(i % 2 ? "sliding_attention" : "full_attention");
  auto listed = parse_model_config(qwen, {}, "c");
  REQUIRE(listed.ok());
  CHECK(listed.value().layers[1].attention == attention_pattern::sliding);
  CHECK(listed.value().layers[30].attention != attention_pattern::sliding);
  qwen["layer_types"].erase(0);
  auto short_list = parse_model_config(qwen, {}, "c");
  REQUIRE(!short_list.ok());
  CHECK(short_list.failure().field == "c.layer_types");
}

TEST_CASE("group sums add up to the total and blocks cover every block tensor") {
  const json reference = test::read_presets();
  for (const auto& item : reference.items()) {
    const std::string id = item.key();
    const json& entry = item.value();
    CAPTURE(id);
    auto spec = parse_model_config(entry.at("config"), {}, "model.config");
    REQUIRE(spec.ok());
    auto c = count_params(spec.value());
    REQUIRE(c.ok());
    const auto& g = c.value().groups;
    CHECK(g.token_embedding + g.position_embedding + g.attention + g.mlp + g.router +
              g.routed_experts + g.shared_experts + g.norm + g.projection + g.lm_head +
              g.task_head + g.vision ==
          c.value().total);
    std::uint64_t in_blocks = 0;
    std::uint64_t blocks = 0;
    for (const auto& b : c.value().blocks) {
      in_blocks += b.total * static_cast<std::uint64_t>(b.last - b.first + 1);
      blocks += static_cast<std::uint64_t>(b.last - b.first + 1);
    }
    std::uint64_t expected = 0;
    for (const auto& t : spec.value().tensors) expected += t.layer >= 0 ? t.numel() : 0;
    CHECK(in_blocks == expected);
    CHECK(blocks == spec.value().num_layers);
  }
}

TEST_CASE("active parameters of mixture-of-experts models, by hand") {
  const json reference = test::read_presets();
  SUBCASE("Mixtral-8x7B: 2 of 8 experts per token") {
    auto spec =
        parse_model_config(reference.at("mistralai/Mixtral-8x7B-v0.1").at("config"), {}, "c");
    REQUIRE(spec.ok());
    auto c = count_params(spec.value());
    REQUIRE(c.ok());
    // One expert: 3 x 4096 x 14336; 6 idle experts in each of 32 layers.
    const std::uint64_t idle = 32ULL * 6 * 3 * 4096 * 14336;
    CHECK(c.value().total == 46702792704ULL);
    CHECK(c.value().active == 46702792704ULL - idle);
    CHECK(c.value().active == 12879925248ULL);  // the "12.9B active" of Mistral's announcement
  }
  SUBCASE("DeepSeek-V3: 8 of 256 routed experts in 58 MoE layers") {
    auto spec = parse_model_config(reference.at("deepseek-ai/DeepSeek-V3").at("config"), {}, "c");
    REQUIRE(spec.ok());
    auto c = count_params(spec.value());
    REQUIRE(c.ok());
    const std::uint64_t idle = 58ULL * 248 * 3 * 7168 * 2048;
    CHECK(c.value().active == c.value().total - idle);
    // The model card's "37B activated" (main model, without the multi-token-prediction module).
    CHECK(c.value().active > 37000000000ULL);
    CHECK(c.value().active < 38000000000ULL);
  }
  SUBCASE("a dense model is fully active") {
    auto spec = parse_model_config(reference.at("meta-llama/Llama-3.1-8B").at("config"), {}, "c");
    REQUIRE(spec.ok());
    auto c = count_params(spec.value());
    REQUIRE(c.ok());
    CHECK(c.value().active == c.value().total);
  }
}

}  // namespace
}  // namespace gpumem
