#include "model/gpu_preset.hpp"

#include <nlohmann/json.hpp>
#include <vector>

#include "gpumem/model/preset_catalog.hpp"

namespace gpumem {

using json = nlohmann::ordered_json;

void read_gpu_fields(config_reader& in, gpu_spec& gpu) {
  gpu.memory_bytes =
      in.optional({"memory_bytes"}, gpu.memory_bytes, 1ULL << 44, 1ULL << 28);  // 256 MiB..16 TiB
  gpu.fp16_dense_flops = in.number("fp16_dense_flops", gpu.fp16_dense_flops, 1e9, 1e17);
  // 0: no bf16 tensor cores (Volta, Turing), where the fp16 figure is used.
  if (in.has("bf16_dense_flops") && in.number("bf16_dense_flops", 1, 0, 1e17) == 0) {
    gpu.bf16_dense_flops = 0;
  } else {
    gpu.bf16_dense_flops = in.number("bf16_dense_flops", gpu.bf16_dense_flops, 1e9, 1e17);
  }
  gpu.fp32_flops = in.number("fp32_flops", gpu.fp32_flops, 1e9, 1e17);
  gpu.memory_bandwidth_bytes_per_s =
      in.number("memory_bandwidth_bytes_per_s", gpu.memory_bandwidth_bytes_per_s, 1e9, 1e15);
  gpu.link_bandwidth_bytes_per_s =
      in.number("link_bandwidth_bytes_per_s", gpu.link_bandwidth_bytes_per_s, 1e8, 1e14);
  gpu.host_link_bandwidth_bytes_per_s =
      in.number("host_link_bandwidth_bytes_per_s", gpu.host_link_bandwidth_bytes_per_s, 1e8, 1e14);
  // The generations whose CUDA context and cuBLAS workspace are known (hardware.cpp).
  if (in.has("architecture")) {
    gpu.architecture = choose(in, "architecture", "",
                              {"volta", "turing", "ampere", "ada", "hopper", "blackwell", "cdna2",
                               "cdna3", "unknown"})
                           .value_or(gpu.architecture);
  }
  gpu.name = in.text("name", gpu.name);
}

namespace {

result<gpu_spec> read_gpu_preset(const std::string& id, const std::string& field) {
  const json preset = find_gpu_preset(id);
  if (preset.is_discarded()) {
    std::string ids;
    for (const auto& file : embedded_gpu_presets())
      ids += (ids.empty() ? "" : ", ") + std::string(file.name);
    return error{"cluster.unknown_gpu", field,
                 "[" + field + "] '" + id + "' is not a GPU preset; one of " + ids};
  }
  gpu_spec gpu;
  gpu.id = id;
  config_reader in(preset, "preset " + id, "preset");
  read_gpu_fields(in, gpu);
  if (auto problem = in.problem("in presets/gpus.json")) return *problem;
  return gpu;
}

}  // namespace

// Kept per thread once read, so that a request does not parse the preset's JSON again.
result<gpu_spec> gpu_from_preset(const std::string& id, const std::string& field) {
  static thread_local std::vector<gpu_spec> read;
  for (const auto& gpu : read) {
    if (gpu.id == id) return gpu;
  }
  auto gpu = read_gpu_preset(id, field);
  if (gpu.ok()) read.push_back(gpu.value());
  return gpu;
}

}  // namespace gpumem
