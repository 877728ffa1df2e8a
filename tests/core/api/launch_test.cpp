// From an estimate to its launch files and back: every exported DeepSpeed config and `vllm
// serve` line, imported under the fields a launch file does not hold, estimates the same peak
// as the setup it came from; formats refuse what they cannot run, naming the field.

#include "api/launch/launch.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <string>
#include <vector>

#include "gpumem/api/json_api.hpp"
#include "test_files.hpp"

namespace gpumem {
namespace {

using nlohmann::json;
using test::call;

json training(const json& parallel, const json& workload, std::uint64_t gpus = 8) {
  json w = {{"micro_batch", 2}, {"seq_len", 1024}};
  w.update(workload);
  return {{"command", "estimate"},
          {"model", "meta-llama/Llama-3.2-1B"},
          {"cluster", {{"gpu", "a100-sxm4-80gb"}, {"gpus", gpus}}},
          {"parallel", parallel},
          {"workload", w}};
}

json exported(json request, const std::string& format) {
  request["command"] = "export";
  request["format"] = format;
  return call(request);
}

// What a DeepSpeed config does not hold: the model, the GPUs, the sequence and the model's side.
json not_in_deepspeed(const json& request) {
  json own = {{"model", request.at("model")}, {"cluster", request.at("cluster")}};
  json workload = {{"seq_len", request.at("workload").at("seq_len")}};
  for (const char* key : {"finetune", "grad_ckpt", "optimizer"}) {
    if (request.at("workload").contains(key)) workload[key] = request.at("workload").at(key);
  }
  own["workload"] = workload;
  return own;
}

TEST_CASE("a DeepSpeed config round-trips: the same request fields and the same peak") {
  int checked = 0;
  for (const char* method : {"zero1", "zero2", "zero3"}) {
    for (const json& offload : {json::object(), json{{"optimizer", "cpu"}},
                                json{{"optimizer", "nvme"}, {"params", "nvme"}}}) {
      if (offload.contains("params") && std::string(method) != "zero3") continue;
      for (const char* compute : {"amp_bf16", "amp_fp16", "fp32"}) {
        for (const json& kind :
             {json{{"finetune", "full"}}, json{{"finetune", "lora"}, {"grad_ckpt", true}}}) {
          json parallel = {{"method", method}};
          if (!offload.empty()) parallel["offload"] = offload;
          json workload = kind;
          workload["compute"] = compute;
          workload["grad_accumulation"] = 4;
          const json request = training(parallel, workload);
          const json original = call(request);
          REQUIRE(original.value("ok", false));
          const json out = exported(request, "deepspeed");
          CAPTURE(request.dump());
          REQUIRE(out.value("ok", false));
          const json& file = out.at("result").at("files").at(0);
          CHECK(file.at("name") == "ds_config.json");
          CHECK(json::parse(file.at("text").get<std::string>()) == file.at("content"));
          const json back = call({{"command", "import"},
                                  {"format", "deepspeed"},
                                  {"file", file.at("content")},
                                  {"request", not_in_deepspeed(request)}});
          REQUIRE(back.value("ok", false));
          CHECK(back.at("result").at("conflicts").empty());
          CHECK(back.at("result").at("ignored").empty());
          json again = back.at("result").at("request");
          CHECK(again.at("parallel").at("method") == method);
          CHECK(again.at("workload").at("micro_batch") == 2);
          CHECK(again.at("workload").at("grad_accumulation") == 4);
          CHECK(again.at("workload").at("compute") == compute);
          again["command"] = "estimate";
          const json estimate = call(again);
          REQUIRE(estimate.value("ok", false));
          CHECK(estimate.at("result").at("peak_bytes") == original.at("result").at("peak_bytes"));
          CHECK(out.at("result").at("estimate").at("peak_bytes") ==
                original.at("result").at("peak_bytes"));
          ++checked;
        }
      }
    }
  }
  CHECK(checked == 42);
}

TEST_CASE("a vllm serve line round-trips under the requests' own lengths") {
  int checked = 0;
  for (const json& layout : {json{{"gpus", 1}}, json{{"gpus", 2}, {"method", "tensor_parallel"}},
                             json{{"gpus", 2}, {"method", "pipeline"}}}) {
    for (const char* weights : {"bf16", "fp8", "nf4"}) {
      for (const char* kv : {"bf16", "fp8"}) {
        json request = {{"command", "estimate"},
                        {"model", "meta-llama/Llama-3.1-8B"},
                        {"cluster", {{"gpu", "h100-sxm"}, {"gpus", layout.at("gpus")}}},
                        {"workload",
                         {{"phase", "inference"},
                          {"framework", "vllm"},
                          {"weights", weights},
                          {"micro_batch", 8},
                          {"seq_len", 3000},
                          {"new_tokens", 200},
                          {"kv_cache", {{"dtype", kv}, {"gpu_memory_utilization", 0.85}}}}}};
        if (layout.contains("method")) request["parallel"] = {{"method", layout.at("method")}};
        const json original = call(request);
        CAPTURE(request.dump());
        REQUIRE(original.value("ok", false));
        const json out = exported(request, "vllm");
        REQUIRE(out.value("ok", false));
        const std::string line = out.at("result").at("command");
        CHECK(line.find("--max-model-len 3200") != std::string::npos);
        const json back =
            call({{"command", "import"},
                  {"format", "vllm"},
                  {"file", line},
                  {"request",
                   {{"cluster", {{"gpu", "h100-sxm"}}},
                    {"workload", {{"micro_batch", 8}, {"seq_len", 3000}, {"new_tokens", 200}}}}}});
        REQUIRE(back.value("ok", false));
        CHECK(back.at("result").at("conflicts").empty());
        json again = back.at("result").at("request");
        CHECK(again.at("model") == "meta-llama/Llama-3.1-8B");
        again["command"] = "estimate";
        const json estimate = call(again);
        REQUIRE(estimate.value("ok", false));
        CHECK(estimate.at("result").at("peak_bytes") == original.at("result").at("peak_bytes"));
        ++checked;
      }
    }
  }
  CHECK(checked == 18);
}

// A YAML file's tree back through import: axolotl's (it holds the model, the lengths and the
// run; not the GPUs, nor the ZeRO stage, which its DeepSpeed file holds) and accelerate's (the
// GPUs and the method; not the model or the lengths).
TEST_CASE("axolotl and accelerate configs round-trip: the same peak") {
  int checked = 0;
  const json layouts[] = {
      json{{"method", "single"}},
      json{{"method", "ddp"}},
      json{{"method", "fsdp_full_shard"}},
      json{{"method", "fsdp_full_shard"},
           {"offload", {{"optimizer", "cpu"}, {"params", "cpu"}, {"gradients", "cpu"}}}},
      json{{"method", "zero2"}},
      json{{"method", "zero3"}, {"offload", {{"optimizer", "cpu"}}}}};
  const json runs[] = {
      json{{"finetune", "full"}, {"compute", "pure_bf16"}},
      json{{"finetune", "lora"},
           {"compute", "amp_bf16"},
           {"grad_ckpt", true},
           {"lora", {{"r", 16}, {"targets", "all-linear"}}}},
      json{{"finetune", "lora"}, {"weights", "nf4_double_quant"}, {"compute", "amp_bf16"}}};
  for (const json& parallel : layouts) {
    const bool zero = parallel.at("method").get<std::string>().rfind("zero", 0) == 0;
    const std::uint64_t gpus = parallel.at("method") == "single" ? 1 : 4;
    for (const json& run : runs) {
      if (zero && run.at("compute") == "pure_bf16") continue;  // DeepSpeed keeps fp32 masters
      if (run.contains("weights") && parallel.value("offload", json::object()).contains("params"))
        continue;
      json workload = run;
      workload["grad_accumulation"] = 2;
      const json request = training(parallel, workload, gpus);
      const json original = call(request);
      CAPTURE(request.dump());
      REQUIRE(original.value("ok", false));
      for (const char* format : {"axolotl", "accelerate"}) {
        if (std::string(format) == "accelerate" && run.at("compute") == "pure_bf16") continue;
        const json out = exported(request, format);
        CAPTURE(format);
        REQUIRE(out.value("ok", false));
        const json& file = out.at("result").at("files").at(0);
        CHECK(file.at("syntax") == "yaml");
        json own = {{"cluster", request.at("cluster")}};
        if (std::string(format) == "axolotl") {
          if (zero) own["parallel"] = parallel;  // in the DeepSpeed file the config names
        } else {
          own["model"] = request.at("model");
          own["workload"] = request.at("workload");
          own["workload"].erase("grad_accumulation");
          if (parallel.at("method").get<std::string>().rfind("fsdp", 0) == 0)
            own["workload"].erase("grad_ckpt");
          if (!zero) own["workload"]["grad_accumulation"] = 2;
          own["workload"].erase("compute");
        }
        const json back = call({{"command", "import"},
                                {"format", format},
                                {"file", file.at("content")},
                                {"request", own}});
        REQUIRE(back.value("ok", false));
        CHECK(back.at("result").at("conflicts").empty());
        // Every key the export writes is one the import reads (the data and output placeholders
        // of axolotl's aside).
        for (const auto& gap : back.at("result").at("ignored")) {
          CHECK(((gap.at("field") == "datasets" || gap.at("field") == "output_dir") ||
                 std::string(format) == "accelerate"));
        }
        json again = back.at("result").at("request");
        again["command"] = "estimate";
        const json estimate = call(again);
        CAPTURE(again.dump());
        REQUIRE(estimate.value("ok", false));
        CHECK(estimate.at("result").at("peak_bytes") == original.at("result").at("peak_bytes"));
        ++checked;
      }
    }
  }
  CHECK(checked > 20);
}

TEST_CASE("a tune run line round-trips: the same request and the same peak") {
  int checked = 0;
  const json layouts[] = {
      json{{"method", "single"}}, json{{"method", "single"}, {"offload", {{"activations", "cpu"}}}},
      json{{"method", "fsdp_full_shard"}}, json{{"method", "fsdp_shard_grad_op"}},
      json{{"method", "fsdp_full_shard"},
           {"offload", {{"optimizer", "cpu"}, {"params", "cpu"}, {"gradients", "cpu"}}}}};
  const json runs[] = {
      json{{"finetune", "full"}, {"compute", "pure_bf16"}},
      json{{"finetune", "full"}, {"compute", "fp32"}, {"optimizer", "adamw_8bit"}},
      json{{"finetune", "lora"},
           {"compute", "pure_bf16"},
           {"grad_ckpt", true},
           {"optimizer_impl", "foreach"},
           {"lora", {{"r", 16}, {"dropout", 0.05}, {"targets", {"q_proj", "o_proj", "lm_head"}}}}},
      json{{"finetune", "dora"},
           {"compute", "pure_bf16"},
           {"weights", "nf4_double_quant"},
           {"grad_ckpt", true},
           {"lora", {{"targets", {"q_proj", "v_proj", "gate_proj", "up_proj", "down_proj"}}}}}};
  for (const char* model : {"meta-llama/Llama-3.1-8B-Instruct", "meta-llama/Meta-Llama-3-8B"}) {
    for (const json& parallel : layouts) {
      const std::uint64_t gpus = parallel.at("method") == "single" ? 1 : 4;
      for (const json& run : runs) {
        if (run.contains("weights") && parallel.value("offload", json::object()).contains("params"))
          continue;
        json workload = run;
        workload["framework"] = "torchtune";
        workload["seq_len"] = 2048;
        // One device's full fine-tuning steps inside backward, without accumulation.
        workload["grad_accumulation"] = gpus == 1 && run.at("finetune") == "full" ? 1 : 2;
        json request = training(parallel, workload, gpus);
        request["model"] = model;
        request["cluster"]["gpu"] = "h100-sxm";
        const json original = call(request);
        CAPTURE(request.dump());
        REQUIRE(original.value("ok", false));
        const json out = exported(request, "torchtune");
        REQUIRE(out.value("ok", false));
        CHECK(out.at("result").at("files").empty());
        const std::string line = out.at("result").at("command").get<std::string>();
        CHECK(line.rfind("tune run ", 0) == 0);
        const json back = call({{"command", "import"},
                                {"format", "torchtune"},
                                {"file", line},
                                {"request", {{"cluster", {{"gpu", "h100-sxm"}}}}}});
        CAPTURE(line);
        REQUIRE(back.value("ok", false));
        CHECK(back.at("result").at("conflicts").empty());
        CHECK(back.at("result").at("ignored").empty());
        CHECK(back.at("result").at("assumed").empty());
        json again = back.at("result").at("request");
        again["command"] = "estimate";
        const json estimate = call(again);
        CAPTURE(again.dump());
        REQUIRE(estimate.value("ok", false));
        CHECK(estimate.at("result").at("peak_bytes") == original.at("result").at("peak_bytes"));
        ++checked;
      }
    }
  }
  CHECK(checked >= 30);
}

TEST_CASE("torchtune: the shipped config, the builder, and what it refuses") {
  json request = training({{"method", "single"}},
                          {{"framework", "torchtune"},
                           {"finetune", "lora"},
                           {"compute", "pure_bf16"},
                           {"weights", "nf4"}},
                          1);
  request["model"] = "Qwen/Qwen2.5-7B-Instruct";
  const json out = exported(request, "torchtune");
  REQUIRE(out.value("ok", false));
  const std::string line = out.at("result").at("command").get<std::string>();
  // Qwen2.5 7B ships no QLoRA config: its LoRA one, with the instruct builder quantised.
  CHECK(line.find("lora_finetune_single_device --config qwen2_5/7B_lora_single_device") !=
        std::string::npos);
  CHECK(line.find("model._component_=torchtune.models.qwen2_5.lora_qwen2_5_7b_instruct") !=
        std::string::npos);
  CHECK(line.find("model.quantize_base=True") != std::string::npos);
  // torchao's NF4 is nf4_double_quant's layout: said where the request asked for plain nf4.
  bool weights_said = false;
  for (const auto& gap : out.at("result").at("not_expressed"))
    weights_said = weights_said || gap.at("field") == "workload.weights";
  CHECK(weights_said);

  const auto refusal_field = [](json r) {
    const json answer = exported(r, "torchtune");
    REQUIRE_FALSE(answer.value("ok", true));
    return answer.at("error").at("field").get<std::string>();
  };
  json base =
      training({{"method", "single"}},
               {{"framework", "torchtune"}, {"finetune", "full"}, {"compute", "pure_bf16"}}, 1);
  json amp = base;
  amp["workload"]["compute"] = "amp_bf16";
  CHECK(refusal_field(amp) == "workload.compute");
  json accumulating = base;
  accumulating["workload"]["grad_accumulation"] = 4;  // optimizer_in_bwd takes none
  CHECK(refusal_field(accumulating) == "workload.grad_accumulation");
  json phi = base;
  phi["model"] = "microsoft/phi-2";
  CHECK(refusal_field(phi) == "model");
  json half_mlp = base;
  half_mlp["workload"]["finetune"] = "lora";
  half_mlp["workload"]["lora"] = {{"targets", {"q_proj", "up_proj"}}};
  CHECK(refusal_field(half_mlp) == "workload.lora.targets");
  json tied_head = half_mlp;  // Llama 3.2 1B's head is its tied embedding
  tied_head["workload"]["lora"] = {{"targets", {"q_proj", "lm_head"}}};
  CHECK(refusal_field(tied_head) == "workload.lora.targets");
  json hybrid = training({{"method", "ddp"}},
                         {{"framework", "torchtune"}, {"finetune", "lora"}, {"compute", "fp32"}});
  CHECK(refusal_field(hybrid) == "parallel.method");
  json no_config = base;  // Llama 2 70B ships LoRA configs only
  no_config["model"] = "meta-llama/Llama-2-70b-hf";
  no_config["cluster"]["gpus"] = 1;
  no_config["workload"]["micro_batch"] = 1;
  CHECK(refusal_field(no_config) != "");
}

TEST_CASE("torchtune's line overrides only keys its 0.6.1 recipes and builders read") {
  // recipes/{full,lora}_finetune_{single_device,distributed}.py (cfg.<key>), the builders'
  // arguments (torchtune/models/*/_model_builders.py) and the configs' optimizer/loss sections.
  const std::vector<std::string> documented = {"model._component_",
                                               "model.lora_attn_modules",
                                               "model.apply_lora_to_mlp",
                                               "model.apply_lora_to_output",
                                               "model.lora_rank",
                                               "model.lora_alpha",
                                               "model.lora_dropout",
                                               "model.use_dora",
                                               "model.quantize_base",
                                               "batch_size",
                                               "gradient_accumulation_steps",
                                               "tokenizer.max_seq_len",
                                               "dtype",
                                               "optimizer._component_",
                                               "optimizer.fused",
                                               "optimizer.foreach",
                                               "optimizer.momentum",
                                               "optimizer_in_bwd",
                                               "loss._component_",
                                               "compile",
                                               "enable_activation_checkpointing",
                                               "enable_activation_offloading",
                                               "fsdp_cpu_offload",
                                               "fsdp_reshard_after_forward"};
  int lines = 0;
  for (const char* method : {"single", "fsdp_full_shard"}) {
    for (const json& run :
         {json{{"finetune", "full"}}, json{{"finetune", "lora"}, {"optimizer", "sgd_momentum"}},
          json{{"finetune", "dora"}, {"weights", "nf4_double_quant"}}}) {
      json workload = run;
      workload["framework"] = "torchtune";
      workload["compute"] = "pure_bf16";
      json request =
          training({{"method", method}}, workload, std::string(method) == "single" ? 1 : 4);
      request["model"] = "meta-llama/Meta-Llama-3-8B";
      request["cluster"]["gpu"] = "h100-sxm";
      const json out = exported(request, "torchtune");
      CAPTURE(request.dump());
      REQUIRE(out.value("ok", false));
      auto words = shell_words(out.at("result").at("command").get<std::string>(), "command");
      REQUIRE(words.ok());
      for (const auto& word : words.value()) {
        const auto eq = word.find('=');
        if (eq == std::string::npos) continue;
        CAPTURE(word);
        CHECK(std::find(documented.begin(), documented.end(), word.substr(0, eq)) !=
              documented.end());
      }
      ++lines;
    }
  }
  CHECK(lines == 6);
}

TEST_CASE("a torchtune config read as a tree: its keys, what it ignores, what it assumes") {
  const json config = {
      {"model",
       {{"_component_", "torchtune.models.llama3_2.qlora_llama3_2_1b"},
        {"lora_attn_modules", {"q_proj", "v_proj", "output_proj"}},
        {"apply_lora_to_mlp", true},
        {"lora_rank", 8},
        {"lora_dropout", 0.0}}},
      {"tokenizer", {{"path", "/tmp/x/tokenizer.model"}, {"max_seq_len", 4096}}},
      {"batch_size", 4},
      {"gradient_accumulation_steps", 8},
      {"optimizer", {{"_component_", "torch.optim.AdamW"}, {"fused", true}, {"lr", 3e-4}}},
      {"loss", {{"_component_", "torchtune.modules.loss.LinearCrossEntropyLoss"}}},
      {"dtype", "bf16"},
      {"compile", true},
      {"enable_activation_checkpointing", true},
      {"custom_sharded_layers", {"tok_embeddings", "output"}},
      {"epochs", 1}};
  const json back =
      call({{"command", "import"}, {"format", "torchtune"}, {"file", config}, {"request", {}}});
  REQUIRE(back.value("ok", false));
  const json& r = back.at("result").at("request");
  CHECK(r.at("model") == "meta-llama/Llama-3.2-1B");
  CHECK(r.at("workload").at("finetune") == "lora");
  CHECK(r.at("workload").at("weights") == "nf4_double_quant");
  CHECK(r.at("workload").at("micro_batch") == 4);
  CHECK(r.at("workload").at("grad_accumulation") == 8);
  CHECK(r.at("workload").at("seq_len") == 4096);
  CHECK(r.at("workload").at("compute") == "pure_bf16");
  CHECK(r.at("workload").at("optimizer_impl") == "fused");
  CHECK(r.at("workload").at("lora").at("targets") ==
        json{"q_proj", "v_proj", "o_proj", "gate_proj", "up_proj", "down_proj"});
  std::vector<std::string> ignored;
  for (const auto& gap : back.at("result").at("ignored"))
    ignored.push_back(gap.at("field").get<std::string>());
  CHECK(ignored ==
        std::vector<std::string>{"loss._component_", "compile", "custom_sharded_layers"});
  // A config names no recipe: how several GPUs would run it is said, not guessed silently.
  CHECK(back.at("result").at("assumed").at(0).at("field") == "parallel.method");
}

TEST_CASE("the training formats write what their projects read") {
  // accelerate's FSDP plugin: the sharding strategy, the offload and checkpointing in its section.
  const json fsdp = exported(
      training({{"method", "fsdp_full_shard"},
                {"offload", {{"params", "cpu"}, {"optimizer", "cpu"}, {"gradients", "cpu"}}}},
               {{"grad_ckpt", true}}, 16),
      "accelerate");
  REQUIRE(fsdp.value("ok", false));
  const json& yaml = fsdp.at("result").at("files").at(0);
  CHECK(yaml.at("syntax") == "yaml");
  const json& config = yaml.at("content");
  CHECK(config.at("distributed_type") == "FSDP");
  CHECK(config.at("num_processes") == 16);
  CHECK(config.at("fsdp_config").at("fsdp_sharding_strategy") == "FULL_SHARD");
  CHECK(config.at("fsdp_config").at("fsdp_offload_params") == true);
  CHECK(config.at("fsdp_config").at("fsdp_activation_checkpointing") == true);
  // QLoRA's arguments: bitsandbytes' 4-bit config, PEFT's LoRA, the Trainer's optimizer.
  const json qlora = exported(training({{"method", "single"}},
                                       {{"finetune", "lora"},
                                        {"weights", "nf4_double_quant"},
                                        {"optimizer", "adamw_8bit"},
                                        {"lora", {{"r", 16}, {"targets", "all-linear"}}}},
                                       1),
                              "transformers");
  REQUIRE(qlora.value("ok", false));
  const json& py = qlora.at("result").at("files").at(0);
  CHECK(py.at("content").at("BitsAndBytesConfig").at("bnb_4bit_use_double_quant") == true);
  CHECK(py.at("content").at("LoraConfig").at("target_modules") == "all-linear");
  CHECK(py.at("content").at("TrainingArguments").at("optim") == "adamw_bnb_8bit");
  const std::string text = py.at("text");
  CHECK(text.find("BitsAndBytesConfig(\n    load_in_4bit=True,") != std::string::npos);
  CHECK(text.find("torch_dtype=torch.bfloat16") != std::string::npos);
}

TEST_CASE("litgpt's command line: its subcommand, precision, quantisation and LoRA switches") {
  const json qlora =
      exported(training({{"method", "single"}},
                        {{"framework", "litgpt"},
                         {"finetune", "lora"},
                         {"weights", "nf4_double_quant"},
                         {"compute", "pure_bf16"},
                         {"grad_accumulation", 8},
                         {"lora", {{"r", 16}, {"targets", {"q_proj", "k_proj", "v_proj"}}}}},
                        1),
               "litgpt");
  REQUIRE(qlora.value("ok", false));
  CHECK(
      qlora.at("result").at("command") ==
      "litgpt finetune lora checkpoints/meta-llama/Llama-3.2-1B --devices 1 --precision bf16-true "
      "--quantize bnb.nf4-dq --lora_r 16 --lora_dropout 0.05 --lora_query true --lora_key true "
      "--lora_value true --lora_projection false --lora_mlp false --lora_head false "
      "--train.micro_batch_size 2 --train.global_batch_size 16 --train.max_seq_length 1024");
  // FSDP over several devices checkpoints every block: a setup without it is not litgpt's.
  const json fsdp = exported(
      training({{"method", "fsdp_full_shard"}}, {{"framework", "litgpt"}, {"finetune", "full"}}, 4),
      "litgpt");
  REQUIRE_FALSE(fsdp.value("ok", true));
  CHECK(fsdp.at("error").at("field") == "workload.grad_ckpt");
  const json full =
      exported(training({{"method", "fsdp_full_shard"}},
                        {{"framework", "litgpt"}, {"finetune", "full"}, {"grad_ckpt", true}}, 4),
               "litgpt");
  REQUIRE(full.value("ok", false));
  CHECK(full.at("result").at("command").get<std::string>().rfind("litgpt finetune full ", 0) == 0);
}

TEST_CASE("a format refuses what it cannot run, naming the field") {
  const auto refused = [](const json& answer) {
    REQUIRE_FALSE(answer.value("ok", true));
    return answer.at("error");
  };
  CHECK(refused(exported(training({{"method", "ddp"}}, json::object()), "deepspeed")).at("field") ==
        "parallel.method");
  CHECK(refused(exported(training({{"method", "zero2"}}, {{"compute", "pure_bf16"}}), "deepspeed"))
            .at("field") == "workload.compute");
  CHECK(refused(exported(training({{"method", "ddp"}}, json::object()), "vllm")).at("field") ==
        "format");
  CHECK(refused(exported(training({{"method", "ddp"}}, json::object()), "torchtune")).at("field") ==
        "workload.framework");
  const json transformers_serving = {{"command", "estimate"},
                                     {"model", "meta-llama/Llama-3.1-8B"},
                                     {"cluster", {{"gpu", "h100-sxm"}}},
                                     {"workload", {{"phase", "inference"}, {"micro_batch", 1}}}};
  CHECK(refused(exported(transformers_serving, "vllm")).at("field") == "workload.framework");
  // A request the estimate refuses is refused as the estimate refuses it.
  CHECK(refused(exported(training({{"method", "zero2"}}, {{"micro_batch", 0}}), "deepspeed"))
            .at("field") == "workload.micro_batch");
}

TEST_CASE("a llama-server line round-trips under the requests' own lengths") {
  for (const char* weights : {"gguf_q4_k_m", "gguf_q8_0"}) {
    const json request = {{"command", "estimate"},
                          {"model", "meta-llama/Llama-3.1-8B"},
                          {"cluster", {{"gpu", "rtx-4090"}}},
                          {"workload",
                           {{"phase", "inference"},
                            {"framework", "llama_cpp"},
                            {"weights", weights},
                            {"micro_batch", 4},
                            {"seq_len", 3000},
                            {"new_tokens", 200}}}};
    const json original = call(request);
    REQUIRE(original.value("ok", false));
    const json out = exported(request, "llama_cpp");
    REQUIRE(out.value("ok", false));
    const json back = call({{"command", "import"},
                            {"format", "llama_cpp"},
                            {"file", out.at("result").at("command")},
                            {"request",
                             {{"model", "meta-llama/Llama-3.1-8B"},
                              {"cluster", {{"gpu", "rtx-4090"}}},
                              {"workload", {{"seq_len", 3000}, {"new_tokens", 200}}}}}});
    REQUIRE(back.value("ok", false));
    CHECK(back.at("result").at("ignored").empty());
    json again = back.at("result").at("request");
    CHECK(again.at("workload").at("micro_batch") == 4);
    CHECK(again.at("workload").at("weights") == weights);
    again["command"] = "estimate";
    const json estimate = call(again);
    REQUIRE(estimate.value("ok", false));
    CHECK(estimate.at("result").at("peak_bytes") == original.at("result").at("peak_bytes"));
  }
}

TEST_CASE("a malformed launch file is an answer, never an exception") {
  for (const json& file :
       {json("text"), json::array(), json{{"zero_optimization", "x"}},
        json{{"zero_optimization", {{"stage", "3"}}}},
        json{{"zero_optimization", {{"stage", 3}, {"offload_optimizer", {{"device", 5}}}}}},
        json{{"zero_optimization", {{"stage", 2}, {"reduce_bucket_size", "auto"}}}},
        json{{"optimizer", {{"type", 5}}}}, json{{"bf16", true}, {"fp16", {{"enabled", "yes"}}}},
        json{{"train_micro_batch_size_per_gpu", -1}, {"zero_optimization", {{"stage", 1}}}},
        json{{"train_batch_size", "x"}, {"zero_optimization", {{"stage", 1}}}}}) {
    for (const json& own : {json::object(), json("x"), json{{"workload", {{"micro_batch", "2"}}}},
                            json{{"model", 7}}}) {
      CAPTURE(file.dump());
      CAPTURE(own.dump());
      const json answer =
          call({{"command", "import"}, {"format", "deepspeed"}, {"file", file}, {"request", own}});
      CHECK(answer.is_object());
      CHECK(answer.contains("ok"));
    }
  }
  for (const char* format : {"axolotl", "accelerate"}) {
    for (const json& file :
         {json("text"), json::array(), json{{"adapter", 5}, {"lora_target_modules", "q"}},
          json{{"fsdp", "full_shard"}, {"fsdp_config", 3}, {"micro_batch_size", -2}},
          json{{"distributed_type", "DEEPSPEED"}, {"deepspeed_config", "x"}},
          json{{"distributed_type", "FSDP"}, {"fsdp_config", {{"fsdp_sharding_strategy", 9}}}},
          json{{"distributed_type", 7}, {"num_processes", "8"}, {"num_machines", 0}}}) {
      for (const json& own : {json::object(), json{{"parallel", 5}, {"cluster", {{"gpus", 4}}}}}) {
        CAPTURE(file.dump());
        const json answer =
            call({{"command", "import"}, {"format", format}, {"file", file}, {"request", own}});
        CHECK(answer.is_object());
        CHECK(answer.contains("ok"));
      }
    }
  }
  for (const json& file : {json("llama-server"), json("llama-server -c x -np 0 -m"),
                           json("llama-server -np 99999999999 -c 1e30 -ctk q4_0 --foo")}) {
    const json answer = call({{"command", "import"}, {"format", "llama_cpp"}, {"file", file}});
    CHECK(answer.is_object());
    CHECK(answer.contains("ok"));
  }
  for (const json& file : {json(5), json(""), json("vllm serve"), json("vllm serve 'm"),
                           json("vllm serve m --tensor-parallel-size -3 --max-model-len x"),
                           json("vllm serve m --max-model-len 99999999999999999999")}) {
    CAPTURE(file.dump());
    const json answer = call({{"command", "import"}, {"format", "vllm"}, {"file", file}});
    CHECK(answer.is_object());
    CHECK(answer.contains("ok"));
  }
  for (const json& file :
       {json(5), json(""), json("tune"), json("tune run"), json("tune run 'x"),
        json("tune run --nproc_per_node x full_finetune_distributed"),
        json("tune run --nproc_per_node 99999999999 --nnodes 0 lora_finetune_distributed"),
        json("tune run eleuther_eval --config llama3_1/8B_lora batch_size=-1 =x a.=1 .b=2"),
        json("tune run lora_finetune_single_device --config x/y model.lora_rank=[1,2] "
             "tokenizer.max_seq_len=1e30 batch_size=99999999999999999999999"),
        json{{"model", 5}, {"optimizer", "x"}, {"tokenizer", {{"max_seq_len", -1}}}},
        json{{"model", {{"_component_", 5}, {"lora_attn_modules", {1, 2}}}}, {"dtype", 16}}}) {
    CAPTURE(file.dump());
    const json answer = call({{"command", "import"}, {"format", "torchtune"}, {"file", file}});
    CHECK(answer.is_object());
    CHECK(answer.contains("ok"));
  }
}

TEST_CASE("command lines split as a shell splits them, and join back") {
  const auto words = shell_words(R"(vllm serve 'my org/model' --x "a \"b\"" c\ d)", "file");
  REQUIRE(words.ok());
  CHECK(words.value() ==
        std::vector<std::string>{"vllm", "serve", "my org/model", "--x", "a \"b\"", "c d"});
  const auto again = shell_words(shell_line(words.value()), "file");
  REQUIRE(again.ok());
  CHECK(again.value() == words.value());
  CHECK_FALSE(shell_words("vllm serve 'open", "file").ok());
  const auto imported = import_vllm("vllm serve org/m --tensor-parallel-size 2 --unknown-flag 3");
  REQUIRE(imported.ok());
  CHECK(imported.value().fields.at("cluster").at("gpus") == 2);
  CHECK(imported.value().ignored.size() == 1);
}

}  // namespace
}  // namespace gpumem
