// The estimators' accuracy on measured points may only get better: the summaries of
// `gpumem validate`, per workload phase, against the recorded figures
// (tests/golden/validation_summary.json).

#include "gpumem/validation/validation.hpp"

#include <doctest/doctest.h>

#include <fstream>

#include "gpumem/model/config_parser.hpp"
#include "gpumem/training/training_step.hpp"
#include "test_files.hpp"

namespace gpumem {
namespace {

using nlohmann::json;

TEST_CASE("validation summaries are no worse than recorded") {
  const json recorded = test::read_json("tests/golden/validation_summary.json");
  REQUIRE(recorded.is_object());
  int checked = 0;
  for (const auto& item : recorded.items()) {
    if (item.key() == "about") continue;
    if (!std::ifstream(test::source_path(item.key()))) {
      MESSAGE("skipped, not present beside this checkout: " << item.key());
      continue;
    }
    const json points = test::read_json(item.key());
    REQUIRE(points.is_array());
    const memory_report report = validate_memory(points);
    const json& figures = item.value();
    CAPTURE(item.key());
    for (const auto& entry : report.by_phase) {
      const std::string& phase = entry.first;
      const error_summary& summary = entry.second;
      CAPTURE(phase);
      REQUIRE(figures.contains(phase));  // a phase newly scored gets its figures recorded
      const json& f = figures.at(phase);
      CHECK(summary.n >= f.at("n").get<std::size_t>());
      CHECK(summary.median_abs_rel_error <= f.at("median_abs_rel_error").get<double>());
      CHECK(summary.p90_abs_rel_error <= f.at("p90_abs_rel_error").get<double>());
      CHECK(summary.within_10pct >= f.at("within_10pct").get<double>());
    }
    CHECK(report.bounds_correct >= figures.at("bounds_correct").get<std::size_t>());
    ++checked;
  }
  CHECK(checked >= 1);
}

TEST_CASE("summary statistics follow the validation README (nearest-rank p90)") {
  const error_summary s = summarize({0.01, 0.02, 0.03, 0.04, 0.05, 0.06, 0.07, 0.08, 0.09, 0.5});
  CHECK(s.n == 10);
  CHECK(s.median_abs_rel_error == doctest::Approx(0.055));
  CHECK(s.p90_abs_rel_error == doctest::Approx(0.09));  // the 9th smallest of 10
  CHECK(s.within_10pct == doctest::Approx(0.9));
}

}  // namespace
}  // namespace gpumem

namespace gpumem {
namespace {

// A measured point on a small Llama-like model (h 256, 2 blocks, vocab 1000) on an H100.
nlohmann::json small_point(const nlohmann::json& workload, const nlohmann::json& parallel) {
  return {{"id", "p"},
          {"kind", "peak"},
          {"metric", "allocated"},
          {"measured_gib", 10.0},
          {"model",
           {{"config",
             {{"model_type", "llama"},
              {"hidden_size", 256},
              {"intermediate_size", 512},
              {"num_hidden_layers", 2},
              {"num_attention_heads", 4},
              {"vocab_size", 1000}}}}},
          {"workload", workload},
          {"parallel", parallel},
          {"gpu", {{"name", "NVIDIA H100 80GB HBM3"}, {"memory_gib", 80}}}};
}

// The one point of a one-point validation run, which must have been read.
memory_point scored(const nlohmann::json& point) {
  const auto read = validate_memory(nlohmann::json::array({point})).points.at(0);
  REQUIRE(read.scored);
  return read;
}

TEST_CASE("points with impossible sizes are skipped with a reason, never scored or crashed on") {
  // A litgpt training point whose unstated gradient accumulation divides by the micro-batch.
  const nlohmann::json base = small_point({{"phase", "train"},
                                           {"finetune", "full"},
                                           {"weights", "bf16"},
                                           {"compute", "pure_bf16"},
                                           {"optimizer", "adamw"},
                                           {"micro_batch", 1},
                                           {"seq_len", 64},
                                           {"framework", "litgpt"}},
                                          {{"method", "single"}, {"gpus", 1}});
  CHECK(validate_memory(nlohmann::json::array({base})).points.at(0).scored);
  for (const nlohmann::json& micro :
       {nlohmann::json(0), nlohmann::json(-1), nlohmann::json(1.5), nlohmann::json(1ULL << 63)}) {
    nlohmann::json p = base;
    p["workload"]["micro_batch"] = micro;
    const auto report = validate_memory(nlohmann::json::array({p}));
    REQUIRE(report.points.size() == 1);
    CHECK_FALSE(report.points.at(0).scored);
    CHECK(report.points.at(0).note.find("micro_batch") != std::string::npos);
  }
  nlohmann::json negative = base;
  negative["parallel"]["dp"] = -2;
  CHECK(validate_memory(nlohmann::json::array({negative})).points.at(0).note ==
        "parallel.dp must be an integer in 1..65536");
  // A measured figure outside a memory's physical range cannot be an error's denominator (1e-300
  // made the median 9.5e300; 1e-308 an infinite error).
  for (const double measured : {0.0, -1.0, 1e-308, 1e-300, 1e-4, 1e300}) {
    nlohmann::json p = base;
    p["measured_gib"] = measured;
    const auto report = validate_memory(nlohmann::json::array({p}));
    REQUIRE(report.points.size() == 1);
    CHECK_FALSE(report.points.at(0).scored);
    CHECK(report.points.at(0).note == "measured_gib must be in 0.001..100000 GiB");
    CHECK(report.summary.n == 0);
  }
  // Every point appears, scored or with why not: a measured figure that is not a number or is
  // missing, a point that is not an object, a kind that is not a peak or a bound.
  nlohmann::json text = base;
  text["measured_gib"] = "x";
  nlohmann::json missing = base;
  missing.erase("measured_gib");
  nlohmann::json calibration = base;
  calibration["kind"] = "calibration";
  const auto report = validate_memory(nlohmann::json::array({text, missing, 7, calibration, base}));
  REQUIRE(report.points.size() == 5);
  CHECK(report.points.at(0).note == "measured_gib is missing or not a number");
  CHECK(report.points.at(1).note == "measured_gib is missing or not a number");
  CHECK(report.points.at(2).id == "#2");
  CHECK(report.points.at(2).note == "not a point: a point is a JSON object");
  CHECK(report.points.at(3).note == "not scored: kind 'calibration' is not a peak or a bound");
  CHECK(report.points.at(4).scored);
}

TEST_CASE("malformed fields are skipped or defaulted, never thrown on") {
  // Every field of a LoRA, a timed full fine-tuning and an inference point, in turn null, a
  // string, a negative number, a fraction, an array and an object (the wasm module aborts on a
  // C++ exception).
  nlohmann::json train = small_point({{"phase", "train"},
                                      {"finetune", "lora"},
                                      {"lora", {{"r", 8}, {"targets", {"q_proj", "v_proj"}}}},
                                      {"weights", "nf4"},
                                      {"compute", "amp_bf16"},
                                      {"optimizer", "adamw"},
                                      {"micro_batch", 2},
                                      {"seq_len", 64},
                                      {"grad_ckpt", true},
                                      {"attention", "sdpa"},
                                      {"framework", "transformers"}},
                                     {{"method", "ddp"},
                                      {"gpus", 2},
                                      {"cpu_offload", false},
                                      {"offload", nullptr},
                                      {"dp", 2},
                                      {"tp", 1},
                                      {"pp", 1},
                                      {"cp", 1},
                                      {"sequence_parallel", nullptr}});
  train["measured_host_gib"] = 1.0;
  // A fully fine-tuned point with a speed: the step-time model reads it too.
  nlohmann::json timed = train;
  timed["workload"]["finetune"] = "full";
  timed["workload"]["weights"] = "bf16";
  timed["workload"].erase("lora");
  timed["throughput"] = {{"tokens_per_s_per_gpu", 100.0}, {"step_time_s", 1.0}};
  nlohmann::json infer = small_point({{"phase", "inference"},
                                      {"weights", "bf16"},
                                      {"compute", "pure_bf16"},
                                      {"micro_batch", 1},
                                      {"seq_len", 16},
                                      {"new_tokens", 4},
                                      {"kv_cache_tokens", 32},
                                      {"framework", "transformers"}},
                                     {{"method", "single"}, {"gpus", 1}});
  // (The multi-byte string is cut in error messages: never inside a character.)
  const nlohmann::json odd[] = {nullptr,
                                "x",
                                -3,
                                2.5,
                                nlohmann::json::array(),
                                {{"k", 1}},
                                "a\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9"
                                "\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9\u00e9"};
  for (const nlohmann::json& base : {train, timed, infer}) {
    std::vector<std::vector<std::string>> paths;
    for (const auto& [key, value] : base.items()) {
      paths.push_back({key});
      if (value.is_object()) {
        for (const auto& [inner, unused] : value.items()) paths.push_back({key, inner});
      }
    }
    for (const auto& path : paths) {
      for (const auto& replacement : odd) {
        nlohmann::json p = base;
        if (path.size() == 1) {
          p[path[0]] = replacement;
        } else {
          p[path[0]][path[1]] = replacement;
        }
        const std::string where = path.size() == 1 ? path[0] : path[0] + "." + path[1];
        CAPTURE(where);
        CAPTURE(replacement.dump());
        const nlohmann::json points = nlohmann::json::array({p});
        CHECK_NOTHROW(validate_memory(points));
        CHECK_NOTHROW(validate_step_time(points));
      }
    }
  }
  CHECK_NOTHROW(validate_memory(nlohmann::json::array({nullptr, 3, "p"})));
  CHECK_NOTHROW(validate_step_time(nlohmann::json::array({nullptr, 3, "p"})));
}

TEST_CASE("a measured throughput beyond the GPU's dense peak is said in the point's note") {
  nlohmann::json point = small_point({{"phase", "train"},
                                      {"finetune", "full"},
                                      {"weights", "bf16"},
                                      {"compute", "pure_bf16"},
                                      {"micro_batch", 1},
                                      {"seq_len", 128}},
                                     {{"method", "single"}, {"gpus", 1}});
  const auto read = [&](double tokens_per_s) {
    point["throughput"] = {{"tokens_per_s_per_gpu", tokens_per_s}};
    const auto report = validate_step_time(nlohmann::json::array({point}));
    REQUIRE(report.points.size() == 1);
    REQUIRE(report.points[0].scored);
    return report.points[0].note;
  };
  // About 12 M FLOPs a token: 100,000 tokens/s is far below an H100's 989 TFLOP/s, 1e9 above.
  CHECK(read(1e5).find("dense peak") == std::string::npos);
  CHECK(read(1e9).find("above the GPU's dense peak of 989") != std::string::npos);
}

TEST_CASE("a LoRA point is timed as its training request, and accumulation runs every batch") {
  const nlohmann::json workload = {{"phase", "train"},     {"finetune", "full"},
                                   {"weights", "bf16"},    {"compute", "pure_bf16"},
                                   {"optimizer", "adamw"}, {"micro_batch", 4},
                                   {"seq_len", 512},       {"framework", "transformers"}};
  nlohmann::json full = small_point(workload, {{"method", "single"}, {"gpus", 1}});
  // Wide enough blocks for the GPU's work, not the host's launches, to set the step.
  full["model"]["config"]["hidden_size"] = 4096;
  full["model"]["config"]["intermediate_size"] = 11008;
  full["model"]["config"]["num_attention_heads"] = 32;
  nlohmann::json lora = full;
  lora["workload"]["finetune"] = "lora";
  lora["workload"]["lora"] = {{"r", 8}, {"alpha", 16}, {"targets", {"q_proj", "v_proj"}}};
  nlohmann::json accumulated = full;
  accumulated["workload"]["grad_accumulation"] = 4;
  for (auto* p : {&full, &lora, &accumulated}) (*p)["throughput"] = {{"step_time_s", 1.0}};
  const auto report = validate_step_time(nlohmann::json::array({full, lora, accumulated}));
  REQUIRE(report.points.size() == 3);
  for (const auto& point : report.points) REQUIRE(point.scored);
  // Frozen weights: no weight gradients, no optimizer over the base.
  CHECK(report.points[1].estimated < report.points[0].estimated);
  // Four micro-batches' forward and backward, one optimizer step: more than three times one
  // step, less than four.
  CHECK(report.points[2].estimated > 3 * report.points[0].estimated);
  CHECK(report.points[2].estimated < 4 * report.points[0].estimated);
}

TEST_CASE("an offloaded point is timed with its host traffic and CPU optimizer step") {
  const nlohmann::json workload = {
      {"phase", "train"},     {"finetune", "full"}, {"weights", "fp32"}, {"compute", "amp_bf16"},
      {"optimizer", "adamw"}, {"micro_batch", 1},   {"seq_len", 128}};
  nlohmann::json plain = small_point(workload, {{"method", "zero3"}, {"gpus", 1}});
  nlohmann::json offloaded = small_point(
      workload, {{"method", "zero3_cpu_offload"},
                 {"gpus", 1},
                 {"cpu_offload", true},
                 {"offload", {{"optimizer", "cpu"}, {"params", "cpu"}, {"gradients", "cpu"}}}});
  for (auto* p : {&plain, &offloaded}) (*p)["throughput"] = {{"step_time_s", 1.0}};
  const auto report = validate_step_time(nlohmann::json::array({plain, offloaded}));
  REQUIRE(report.points.size() == 2);
  REQUIRE(report.points[0].scored);
  REQUIRE(report.points[1].scored);
  CHECK(report.points[1].note.find("the offload adds") != std::string::npos);
  // The CPU steps every parameter at the default 1e9 a second: slower than the GPU's own step.
  CHECK(report.points[1].estimated > report.points[0].estimated);
}

TEST_CASE("a pipeline-parallel training point is estimated at its busiest stage") {
  // A wide vocabulary makes the last stage (LM head and loss) the busiest; a narrow one with
  // long sequences the first (two micro-batches in flight under 1F1B).
  struct layout {
    int vocab;
    int seq_len;
    std::uint64_t busiest;
  };
  for (const layout& c : {layout{32000, 512, 1}, layout{100, 4096, 0}}) {
    const int vocab = c.vocab;
    const int seq_len = c.seq_len;
    const std::uint64_t busiest = c.busiest;
    CAPTURE(vocab);
    const nlohmann::json config = {{"model_type", "llama"},       {"hidden_size", 256},
                                   {"intermediate_size", 512},    {"num_hidden_layers", 4},
                                   {"num_attention_heads", 4},    {"vocab_size", vocab},
                                   {"tie_word_embeddings", false}};
    const nlohmann::json p = {{"id", "p"},
                              {"kind", "peak"},
                              {"metric", "allocated"},
                              {"measured_gib", 1.0},
                              {"model", {{"config", config}}},
                              {"workload",
                               {{"phase", "train"},
                                {"finetune", "full"},
                                {"weights", "bf16"},
                                {"compute", "pure_bf16"},
                                {"optimizer", "adamw"},
                                {"micro_batch", 4},
                                {"seq_len", seq_len}}},
                              {"parallel", {{"method", "single"}, {"gpus", 2}, {"pp", 2}}},
                              {"gpu", {{"name", "NVIDIA H100 80GB HBM3"}, {"memory_gib", 80}}}};
    const auto point = validate_memory(nlohmann::json::array({p})).points.at(0);
    REQUIRE(point.scored);
    const auto spec = parse_model_config(config, {}, "model.config");
    REQUIRE(spec.ok());
    training_config staged;
    staged.compute = compute_precision::pure_bf16;
    staged.micro_batch = 4;
    staged.seq_len = static_cast<std::uint64_t>(seq_len);
    staged.pp_degree = 2;
    gpu_spec gpu;
    gpu.architecture = "hopper";  // the H100's cuBLAS workspace
    double stage_gib[2] = {};
    for (std::uint64_t stage = 0; stage < 2; ++stage) {
      staged.pp_stage = stage;
      auto e = estimate_training_step(spec.value(), staged, gpu);
      REQUIRE(e.ok());
      stage_gib[stage] = static_cast<double>(e.value().peak.allocated) / (1ULL << 30);
    }
    CHECK(stage_gib[busiest] > stage_gib[1 - busiest]);
    CHECK(point.estimated_gib == doctest::Approx(stage_gib[busiest]));
    CHECK(point.note.find("busiest stage") != std::string::npos);
  }
}

TEST_CASE("context-parallel and selective points: how an unstated kind is read") {
  nlohmann::json p = small_point({{"phase", "train"},
                                  {"finetune", "full"},
                                  {"weights", "bf16"},
                                  {"compute", "amp_bf16"},
                                  {"optimizer", "adamw"},
                                  {"micro_batch", 1},
                                  {"seq_len", 1024},
                                  {"framework", "megatron"}},
                                 {{"method", "zero2"}, {"gpus", 8}, {"dp", 2}, {"cp", 4}});
  const auto note = [](const nlohmann::json& point) {
    const auto read = validate_memory(nlohmann::json::array({point})).points.at(0);
    REQUIRE(read.scored);
    return read.note;
  };
  // Megatron under ZeRO-2/3 is Megatron-DeepSpeed, whose sequence parallelism is Ulysses.
  CHECK(note(p).find("Ulysses") != std::string::npos);
  p["parallel"]["method"] = "zero1";
  CHECK(note(p).find("ring attention") != std::string::npos);
  // A stated "selective" under torchtune is not also read as the recipe's full checkpointing.
  p["parallel"] = {{"method", "single"}, {"gpus", 1}};
  p["workload"]["framework"] = "torchtune";
  p["workload"]["grad_ckpt"] = "selective";
  const auto selective = validate_memory(nlohmann::json::array({p})).points.at(0);
  p["workload"]["grad_ckpt"] = false;
  const auto none = validate_memory(nlohmann::json::array({p})).points.at(0);
  REQUIRE(selective.scored);
  REQUIRE(none.scored);
  CHECK(selective.estimated_gib == none.estimated_gib);  // sdpa: nothing to recompute
  CHECK(selective.note.find("selective") != std::string::npos);
}

TEST_CASE("gradient accumulation: a measure option, or transformers' argument in the notes") {
  nlohmann::json p = small_point({{"phase", "train"},
                                  {"finetune", "full"},
                                  {"weights", "fp32"},
                                  {"compute", "fp32"},
                                  {"optimizer", "sgd"},
                                  {"micro_batch", 1},
                                  {"seq_len", 512},
                                  {"framework", "hf_trainer"}},
                                 {{"method", "single"}, {"gpus", 1}});
  const double once = scored(p).estimated_gib;
  // Plain SGD frees its gradients after the step; accumulated ones live through the next
  // micro-batch's forward, beside its activations.
  p["assumptions"] = {"measure option: grad_accumulation=4"};
  const double stated = scored(p).estimated_gib;
  CHECK(stated > once);
  p["assumptions"] = nlohmann::json::array();
  p["original_notes"] =
      "Trainer run, per_device_train_batch_size=1, gradient_accumulation_steps=4.";
  const auto noted = scored(p);
  CHECK(noted.estimated_gib == stated);
  CHECK(noted.note.find("gradient_accumulation_steps") != std::string::npos);
  p["original_notes"] = "gradient_accumulation_steps 1 (the default)";
  CHECK(scored(p).estimated_gib == once);
}

TEST_CASE("gpumem's own points set every dropout of the model through a measure option") {
  nlohmann::json p = small_point({{"phase", "train"},
                                  {"finetune", "full"},
                                  {"weights", "fp32"},
                                  {"compute", "amp_bf16"},
                                  {"optimizer", "adamw"},
                                  {"micro_batch", 2},
                                  {"seq_len", 256},
                                  {"attention", "eager"},
                                  {"framework", "transformers"}},
                                 {{"method", "single"}, {"gpus", 1}});
  p["assumptions"] = {
      "measure option: dropout=0.1 (every dropout probability of the model config)"};
  const double with_dropout = scored(p).estimated_gib;
  p["assumptions"] = {
      "measure option: dropout=0.0 (every dropout probability of the model config)"};
  const double without = scored(p).estimated_gib;
  CHECK(without < with_dropout);  // no masks
  // Not a probability: ignored, the config's own (Llama: no attention dropout) stands.
  p["assumptions"] = {"measure option: dropout=1.5"};
  CHECK(scored(p).estimated_gib == without);
}

TEST_CASE("a T5 point, named as the format names it: one length for both stacks unless stated") {
  nlohmann::json p = small_point({{"phase", "train"},
                                  {"finetune", "full"},
                                  {"weights", "fp32"},
                                  {"compute", "fp32"},
                                  {"optimizer", "adamw"},
                                  {"micro_batch", 2},
                                  {"seq_len", 256},
                                  {"framework", "transformers"}},
                                 {{"method", "single"}, {"gpus", 1}});
  // The format's names for T5's dimensions (validation README), as T5Config reads them.
  p["model"]["config"] = {{"model_type", "t5"},
                          {"hidden_size", 256},
                          {"num_hidden_layers", 2},
                          {"num_attention_heads", 4},
                          {"head_dim", 64},
                          {"d_ff", 512},
                          {"num_decoder_layers", 2},
                          {"vocab_size", 1000},
                          {"is_encoder_decoder", true},
                          {"feed_forward_proj", "gated-gelu"}};
  const auto same = scored(p);
  CHECK(same.note.find("the decoder's length taken as seq_len") != std::string::npos);
  p["assumptions"] = {"measure option: target_len=64"};
  const auto stated = scored(p);
  CHECK(stated.note.find("the decoder's length") == std::string::npos);
  CHECK(stated.estimated_gib < same.estimated_gib);
}

TEST_CASE("a point's framework says how its loop takes the loss and what it holds") {
  // Pure bf16 with a vocabulary-sized loss: the loss's dtype and the held logits show.
  nlohmann::json p = small_point({{"phase", "train"},
                                  {"finetune", "full"},
                                  {"weights", "bf16"},
                                  {"compute", "pure_bf16"},
                                  {"optimizer", "adamw"},
                                  {"micro_batch", 8},
                                  {"seq_len", 1024},
                                  {"framework", "transformers"}},
                                 {{"method", "single"}, {"gpus", 1}});
  const double trainer = scored(p).estimated_gib;
  // Lightning: the LightningModule's own cross-entropy, in bf16.
  p["workload"]["framework"] = "lightning";
  const auto lightning = scored(p);
  CHECK(lightning.estimated_gib < trainer);
  CHECK(lightning.note.find("plain cross-entropy") != std::string::npos);
  // accelerate's loop binds `outputs` and holds the logits through the backward.
  p["workload"]["framework"] = "accelerate";
  const auto accelerate = scored(p);
  CHECK(accelerate.estimated_gib > trainer);
  CHECK(accelerate.note.find("holding each forward's outputs") != std::string::npos);
}

TEST_CASE("SGD with a stated optimizer_state is SGD with momentum: the state is its buffer") {
  nlohmann::json p = small_point({{"phase", "train"},
                                  {"finetune", "full"},
                                  {"weights", "fp32"},
                                  {"compute", "fp32"},
                                  {"optimizer", "sgd"},
                                  {"optimizer_state", nullptr},
                                  {"micro_batch", 1},
                                  {"seq_len", 16},
                                  {"framework", "transformers"}},
                                 {{"method", "single"}, {"gpus", 1}});
  const double plain = scored(p).estimated_gib;
  p["workload"]["optimizer_state"] = "fp32";
  CHECK(scored(p).estimated_gib > plain);  // an fp32 momentum buffer per parameter
}

TEST_CASE("prompt tuning is read with the num_virtual_tokens its source names, else skipped") {
  nlohmann::json p = small_point({{"phase", "train"},
                                  {"finetune", "prompt_tuning"},
                                  {"weights", "bf16"},
                                  {"compute", "amp_bf16"},
                                  {"optimizer", "adamw"},
                                  {"micro_batch", 1},
                                  {"seq_len", 256},
                                  {"framework", "peft_examples"}},
                                 {{"method", "single"}, {"gpus", 1}});
  const auto read = [](const nlohmann::json& point) {
    return validate_memory(nlohmann::json::array({point})).points.at(0);
  };
  CHECK_FALSE(read(p).scored);
  CHECK(read(p).note.find("num_virtual_tokens") != std::string::npos);
  p["original_notes"] = "PromptTuningConfig(task_type=CAUSAL_LM, num_virtual_tokens=20)";
  const auto twenty = read(p);
  REQUIRE(twenty.scored);
  p["original_notes"] = "PromptTuningConfig(task_type=CAUSAL_LM, num_virtual_tokens=8)";
  CHECK(read(p).estimated_gib < twenty.estimated_gib);
}

TEST_CASE("inference under scripts that run transformers' generate is read as transformers") {
  nlohmann::json p = small_point({{"phase", "inference"},
                                  {"weights", "bf16"},
                                  {"compute", "pure_bf16"},
                                  {"micro_batch", 1},
                                  {"seq_len", 64},
                                  {"new_tokens", 16},
                                  {"framework", "transformers"}},
                                 {{"method", "single"}, {"gpus", 1}});
  const auto reference = validate_memory(nlohmann::json::array({p})).points.at(0);
  REQUIRE(reference.scored);
  for (const char* framework : {"optimum", "peft_examples", "hf_trainer", "accelerate"}) {
    p["workload"]["framework"] = framework;
    const auto point = validate_memory(nlohmann::json::array({p})).points.at(0);
    CAPTURE(framework);
    REQUIRE(point.scored);
    CHECK(point.estimated_gib == reference.estimated_gib);
  }
  // AutoAWQ's fused modules and unsloth keep caches of their own.
  p["workload"]["framework"] = "autoawq";
  CHECK_FALSE(validate_memory(nlohmann::json::array({p})).points.at(0).scored);
}

TEST_CASE("a dated point reads the releases current at its date where it states none") {
  // generate() under transformers 4.31 (2023-08): every prompt position's logits, upcast, and
  // eager attention (SDPA became the default in 4.36).
  nlohmann::json p = small_point({{"phase", "inference"},
                                  {"weights", "bf16"},
                                  {"compute", "pure_bf16"},
                                  {"micro_batch", 4},
                                  {"seq_len", 256},
                                  {"new_tokens", 16},
                                  {"framework", "transformers"},
                                  {"software", {{"date", "2023-08"}}}},
                                 {{"method", "single"}, {"gpus", 1}});
  const auto dated = scored(p);
  CHECK(dated.note.find("transformers release not stated: read as 4.31, current at 2023-08") !=
        std::string::npos);
  CHECK(dated.note.find("attention not stated: eager") != std::string::npos);
  p["workload"]["software"]["date"] = "2025-02";
  const auto recent = scored(p);
  CHECK(recent.note.find("read as 4.48") != std::string::npos);
  CHECK(dated.estimated_gib > recent.estimated_gib);
  // A stated release stands whatever the date.
  p["workload"]["software"]["transformers"] = "4.31.0";
  CHECK(scored(p).estimated_gib == dated.estimated_gib);
  CHECK(scored(p).note.find("current at") == std::string::npos);

  // Training under the HF Trainer in 2022-10: torch 1.12, whose zero_grad keeps the gradients and
  // which has no SDPA.
  nlohmann::json t = small_point({{"phase", "train"},
                                  {"finetune", "full"},
                                  {"weights", "fp32"},
                                  {"compute", "fp32"},
                                  {"optimizer", "adamw"},
                                  {"micro_batch", 1},
                                  {"seq_len", 64},
                                  {"framework", "hf_trainer"},
                                  {"software", {{"date", "2022-10"}}}},
                                 {{"method", "single"}, {"gpus", 1}});
  const auto torch1 = scored(t);
  CHECK(torch1.note.find("torch release not stated: read as 1.12, current at 2022-10") !=
        std::string::npos);
  CHECK(torch1.note.find("eager (torch 1.x has no SDPA)") != std::string::npos);
  // With the attention and an optimizer whose step makes no temporaries fixed, what is left is
  // that the gradients outlive the step.
  t["workload"]["attention"] = "eager";
  t["workload"]["optimizer"] = "sgd";
  const double kept = scored(t).estimated_gib;
  t["workload"]["software"]["date"] = nullptr;
  CHECK(kept > scored(t).estimated_gib);
  // What the point states rules a release out: litgpt needs torch 2, SDPA is torch 2's.
  t["workload"]["software"]["date"] = "2022-10";
  t["workload"]["framework"] = "litgpt";
  CHECK(scored(t).note.find("torch release") == std::string::npos);
  t["workload"]["framework"] = "hf_trainer";
  t["workload"]["attention"] = "sdpa";
  CHECK(scored(t).note.find("torch release") == std::string::npos);
}

}  // namespace
}  // namespace gpumem
