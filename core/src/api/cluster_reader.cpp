// The `cluster` of a request: its GPU (a preset from presets/gpus.json, a preset with
// overrides, or a custom GPU's figures), how many there are, the node and host around them and
// the memory a plan leaves free.
#include <nlohmann/json.hpp>

#include "api/request_fields.hpp"
#include "api/request_reader.hpp"
#include "model/config_reader.hpp"
#include "model/gpu_preset.hpp"

namespace gpumem {

using json = nlohmann::ordered_json;

namespace {

result<gpu_spec> read_gpu(const json& cluster) {
  if (!cluster.contains("gpu")) {
    return error{
        "request.missing_field", "cluster.gpu",
        "[cluster.gpu] is required: a GPU preset id such as \"a100-sxm4-80gb\" (`gpumem gpus`), "
        "or {\"memory_bytes\": ..., \"fp16_dense_flops\": ..., \"link_bandwidth_bytes_per_s\": "
        "...}"};
  }
  const json& gpu = cluster.at("gpu");
  if (gpu.is_string()) return gpu_from_preset(gpu.get<std::string>(), "cluster.gpu");
  if (!gpu.is_object()) {
    return error{"request.invalid_type", "cluster.gpu",
                 "[cluster.gpu] must be a preset id or an object"};
  }
  if (auto e = unknown_keys(gpu, "cluster.gpu",
                            {"preset", "name", "architecture", "memory_bytes", "fp16_dense_flops",
                             "bf16_dense_flops", "fp32_flops", "memory_bandwidth_bytes_per_s",
                             "link_bandwidth_bytes_per_s", "host_link_bandwidth_bytes_per_s"})) {
    return *e;
  }
  gpu_spec spec;
  spec.id = "custom";
  spec.name = "custom GPU";
  if (gpu.contains("preset")) {
    if (!gpu.at("preset").is_string()) {
      return error{"request.invalid_type", "cluster.gpu.preset",
                   "[cluster.gpu.preset] must be a GPU preset id"};
    }
    auto base = gpu_from_preset(gpu.at("preset").get<std::string>(), "cluster.gpu.preset");
    if (!base.ok()) return base.failure();
    spec = base.value();
  }
  config_reader in(gpu, "cluster.gpu", "request");
  read_gpu_fields(in, spec);
  if (auto problem = in.problem("")) return *problem;
  // Without a preset, the figures the estimate and the speed model need.
  for (const auto& [key, missing] :
       {std::pair<const char*, bool>{"memory_bytes", spec.memory_bytes == 0},
        {"fp16_dense_flops", spec.fp16_dense_flops <= 0},
        {"link_bandwidth_bytes_per_s", spec.link_bandwidth_bytes_per_s <= 0}}) {
    if (missing) {
      return error{
          "request.missing_field", std::string("cluster.gpu.") + key,
          "[cluster.gpu." + std::string(key) + "] is required for a custom GPU without a preset"};
    }
  }
  if (spec.architecture.empty()) spec.architecture = "unknown";
  return spec;
}

}  // namespace

result<cluster_spec> read_cluster(const json& request, double default_headroom) {
  if (auto e = check_object(request, "cluster")) return *e;
  const json& cluster = member(request, "cluster");
  if (auto e = unknown_keys(
          cluster, "cluster",
          {"gpu", "gpus", "gpus_per_node", "inter_node_bandwidth_bytes_per_s", "cuda_context_bytes",
           "headroom", "headroom_bytes", "host_ram_bytes", "nvme_bytes", "nvme_read_bytes_per_s",
           "nvme_write_bytes_per_s", "cpu_optimizer_params_per_s", "price_per_gpu_hour"})) {
    return *e;
  }
  auto gpu = read_gpu(cluster);
  if (!gpu.ok()) return gpu.failure();
  config_reader in(cluster, "cluster", "request");
  cluster_spec spec = cluster_of(gpu.value(), in.optional({"gpus"}, 1, 65536));
  spec.gpus_per_node = in.optional({"gpus_per_node"}, spec.gpus, 65536);
  spec.inter_node_bandwidth_bytes_per_s = in.number(
      "inter_node_bandwidth_bytes_per_s", spec.inter_node_bandwidth_bytes_per_s, 1e8, 1e13);
  spec.cuda_context_bytes =
      in.optional({"cuda_context_bytes"}, spec.cuda_context_bytes, 1ULL << 34, 0);
  // The memory a plan leaves free: stated in bytes or as a fraction of the GPU's memory, not both.
  if (in.has("headroom") && in.has("headroom_bytes")) {
    return error{
        "request.invalid_value", "cluster.headroom",
        "[cluster.headroom] and [cluster.headroom_bytes] both state the headroom: give one"};
  }
  const double fraction = in.number("headroom", default_headroom, 0.0, max_headroom_fraction);
  spec.headroom_bytes =
      in.optional({"headroom_bytes"},
                  static_cast<std::uint64_t>(fraction * static_cast<double>(spec.gpu.memory_bytes)),
                  spec.gpu.memory_bytes, 0);
  spec.host_ram_bytes = in.optional({"host_ram_bytes"}, 0, 1ULL << 50, 0);  // up to 1 PiB
  spec.nvme_bytes = in.optional({"nvme_bytes"}, 0, 1ULL << 53, 0);
  spec.host.nvme_read_bytes_per_s =
      in.number("nvme_read_bytes_per_s", spec.host.nvme_read_bytes_per_s, 1e7, 1e12);
  spec.host.nvme_write_bytes_per_s =
      in.number("nvme_write_bytes_per_s", spec.host.nvme_write_bytes_per_s, 1e7, 1e12);
  spec.host.cpu_optimizer_params_per_s =
      in.number("cpu_optimizer_params_per_s", spec.host.cpu_optimizer_params_per_s, 1e6, 1e13);
  spec.price_per_gpu_hour = in.number("price_per_gpu_hour", 0.0, 0.0, 10000.0);
  if (auto problem = in.problem("")) return *problem;
  return spec;
}

}  // namespace gpumem
