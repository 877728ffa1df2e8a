// Google Benchmark: the core's JSON API natively, for the same requests as bench/wasm_bench.mjs
// (LLMem mode, OPT-6.7b, 4 GPUs, sequence 512), plus the pieces they are made of.

#include <benchmark/benchmark.h>

#include <nlohmann/json.hpp>
#include <string>

#include "gpumem/api/json_api.hpp"
#include "gpumem/model/config_parser.hpp"
#include "gpumem/model/preset_catalog.hpp"
#include "gpumem/plan/llmem.hpp"

namespace {

const std::string estimate_request =
    R"({"api_version":1,"command":"estimate","mode":"llmem","model":"facebook/opt-6.7b",)"
    R"("cluster":{"gpu":"v100-sxm2-16gb","gpus":4},"parallel":{"method":"adp"},)"
    R"("workload":{"micro_batch":4,"seq_len":512}})";
const std::string plan_request =
    R"({"api_version":1,"command":"plan","mode":"llmem","model":"facebook/opt-6.7b",)"
    R"("cluster":{"gpu":"v100-sxm2-16gb","gpus":4},"workload":{"seq_len":512}})";
const std::string params_request =
    R"({"api_version":1,"command":"params","model":"meta-llama/Llama-3.1-8B"})";

const std::string detailed_request =
    R"({"api_version":1,"command":"estimate","model":"meta-llama/Llama-3.1-8B",)"
    R"("cluster":{"gpu":"h100-sxm"},"workload":{"micro_batch":4,"seq_len":1024,"finetune":"lora"}})";
const std::string detailed_plan_request =
    R"({"api_version":1,"command":"plan","model":"meta-llama/Llama-3.1-8B",)"
    R"("cluster":{"gpu":"a100-sxm4-80gb","gpus":8},"workload":{"seq_len":2048,"grad_ckpt":true}})";

const std::string inference_request =
    R"({"api_version":1,"command":"estimate","model":"meta-llama/Llama-3.1-8B",)"
    R"("cluster":{"gpu":"rtx-4090"},"workload":{"phase":"inference","weights":"nf4",)"
    R"("micro_batch":4,"seq_len":4096,"new_tokens":256}})";
const std::string inference_solve_request =
    R"({"api_version":1,"command":"estimate","model":"meta-llama/Llama-3.1-8B",)"
    R"("cluster":{"gpu":"rtx-4090"},"workload":{"phase":"inference","weights":"nf4",)"
    R"("micro_batch":4,"new_tokens":256},"solve":"max_context"})";

void run(benchmark::State& state, const std::string& request) {
  for (auto _ : state) benchmark::DoNotOptimize(gpumem::handle_request(request));
}

void estimate(benchmark::State& state) { run(state, estimate_request); }
void plan(benchmark::State& state) { run(state, plan_request); }
void params(benchmark::State& state) { run(state, params_request); }
void detailed_estimate(benchmark::State& state) { run(state, detailed_request); }
void detailed_plan(benchmark::State& state) { run(state, detailed_plan_request); }
void inference_estimate(benchmark::State& state) { run(state, inference_request); }
void inference_max_context(benchmark::State& state) { run(state, inference_solve_request); }

// The estimate itself once the model is read and prepared (what the planner's batch search
// repeats): OPT-6.7b, ADP on 4 V100-16GB, micro-batch 4, sequence 512.
void core_estimate(benchmark::State& state) {
  const auto preset =
      gpumem::find_model_preset("facebook/opt-6.7b", "model", nlohmann::ordered_json());
  const auto spec = gpumem::parse_model_config(preset.value().at("config"), {}, "model.config");
  const auto model = gpumem::prepare_llmem(spec.value());
  gpumem::cluster_spec cluster;
  cluster.gpu.memory_bytes = 17179869184ULL;
  cluster.gpus = 4;
  const gpumem::parallel_config adp{gpumem::parallel_method::adp, 1, false};
  const auto fixed = gpumem::llmem_fixed_terms(spec.value(), model.value(), cluster, adp, 512);
  for (auto _ : state) {
    benchmark::DoNotOptimize(gpumem::llmem_estimate(model.value(), fixed.value(), cluster, 4, 512));
  }
}

BENCHMARK(estimate)->Unit(benchmark::kMicrosecond);
BENCHMARK(core_estimate)->Unit(benchmark::kMicrosecond);
BENCHMARK(plan)->Unit(benchmark::kMicrosecond);
BENCHMARK(params)->Unit(benchmark::kMicrosecond);
BENCHMARK(detailed_estimate)->Unit(benchmark::kMicrosecond);
BENCHMARK(detailed_plan)->Unit(benchmark::kMillisecond);
BENCHMARK(inference_estimate)->Unit(benchmark::kMicrosecond);
BENCHMARK(inference_max_context)->Unit(benchmark::kMillisecond);

}  // namespace

BENCHMARK_MAIN();
