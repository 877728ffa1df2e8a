// accelerate's config file read back (the keys `accelerate config` writes, accelerate 1.2
// commands/config/config_args.py; those the accelerate export writes, launch_training.cpp).
#include <string>

#include "api/launch/launch.hpp"

namespace gpumem {

using json = nlohmann::ordered_json;

namespace {

std::string text(const json& object, const char* key) {
  const auto it = object.find(key);
  return it != object.end() && it->is_string() ? it->get<std::string>() : std::string();
}

std::optional<std::uint64_t> count(const json& object, const char* key) {
  const auto it = object.find(key);
  if (it == object.end()) return std::nullopt;
  if (it->is_number_unsigned()) return it->get<std::uint64_t>();
  if (it->is_number_integer() && it->get<std::int64_t>() > 0)
    return static_cast<std::uint64_t>(it->get<std::int64_t>());
  return std::nullopt;
}

bool yes(const json& object, const char* key) {
  const auto it = object.find(key);
  return it != object.end() && ((it->is_boolean() && it->get<bool>()) || *it == "true");
}

std::optional<error> deepspeed_plugin(const json& ds, json& parallel, json& workload) {
  if (!ds.is_object()) return launch_refusal("deepspeed_config", "must be a mapping");
  const auto stage = count(ds, "zero_stage");
  if (!stage || *stage > 3)
    return launch_refusal("deepspeed_config.zero_stage", "must be 1, 2 or 3");
  parallel["method"] = "zero" + std::to_string(*stage);
  json offload = json::object();
  const std::string optimizer = text(ds, "offload_optimizer_device");
  const std::string params = text(ds, "offload_param_device");
  if (optimizer == "cpu" || optimizer == "nvme") offload["optimizer"] = optimizer;
  if (params == "cpu" || params == "nvme") offload["params"] = params;
  if (!offload.empty()) parallel["offload"] = std::move(offload);
  if (auto n = count(ds, "gradient_accumulation_steps")) workload["grad_accumulation"] = *n;
  return std::nullopt;
}

void fsdp_plugin(const json& f, json& parallel, json& workload) {
  const std::string strategy = text(f, "fsdp_sharding_strategy");
  // FULL_SHARD, SHARD_GRAD_OP, HYBRID_SHARD, or the numbers 1, 2, 4 older files write.
  const auto number = count(f, "fsdp_sharding_strategy");
  parallel["method"] =
      strategy == "SHARD_GRAD_OP" || (number && *number == 2)  ? "fsdp_shard_grad_op"
      : strategy == "HYBRID_SHARD" || (number && *number == 4) ? "fsdp_hybrid_shard"
                                                               : "fsdp_full_shard";
  if (yes(f, "fsdp_offload_params")) {
    parallel["offload"] = {{"optimizer", "cpu"}, {"params", "cpu"}, {"gradients", "cpu"}};
  }
  if (f.contains("fsdp_activation_checkpointing")) {
    workload["grad_ckpt"] = yes(f, "fsdp_activation_checkpointing");
  }
}

}  // namespace

result<launch_import> import_accelerate(const json& config) {
  if (!config.is_object()) return launch_refusal("file", "an accelerate config is a YAML mapping");
  launch_import out;
  json parallel = json::object();
  json workload = json::object();
  const std::string type = text(config, "distributed_type");
  const auto processes = count(config, "num_processes");
  const auto machines = count(config, "num_machines");
  if (type == "DEEPSPEED") {
    if (auto e =
            deepspeed_plugin(config.value("deepspeed_config", json::object()), parallel, workload))
      return *e;
  } else if (type == "FSDP") {
    const json& f = config.value("fsdp_config", json::object());
    if (!f.is_object()) return launch_refusal("fsdp_config", "must be a mapping");
    fsdp_plugin(f, parallel, workload);
  } else if (type == "MULTI_GPU") {
    parallel["method"] = "ddp";
  } else if (type == "NO" || type.empty()) {
    parallel["method"] = "single";
  } else {
    return launch_refusal("distributed_type", type +
                                                  " is not one gpumem estimates (NO, MULTI_GPU, "
                                                  "DEEPSPEED, FSDP)");
  }
  const std::string precision = text(config, "mixed_precision");
  if (precision == "bf16") workload["compute"] = "amp_bf16";
  if (precision == "fp16") workload["compute"] = "amp_fp16";
  if (precision == "no") {
    workload["compute"] = "fp32";
    out.assumed.push_back({"mixed_precision",
                           "no: fp32, unless the script loads the model in "
                           "16 bits (then state pure_bf16 or pure_fp16)"});
  }
  json cluster = json::object();
  if (processes) cluster["gpus"] = *processes;
  if (processes && machines && *machines > 1) cluster["gpus_per_node"] = *processes / *machines;
  if (processes && machines && *machines > 0 && *processes % *machines != 0) {
    out.conflicts.push_back({"num_processes", "not a whole number per machine"});
  }
  for (const auto& item : config.items()) {
    const std::string& key = item.key();
    if (key == "distributed_type" || key == "deepspeed_config" || key == "fsdp_config" ||
        key == "mixed_precision" || key == "num_processes" || key == "num_machines") {
      continue;
    }
    out.ignored.push_back({key, "no effect on the estimate"});
  }
  if (!cluster.empty()) out.fields["cluster"] = std::move(cluster);
  if (!parallel.empty()) out.fields["parallel"] = std::move(parallel);
  if (!workload.empty()) out.fields["workload"] = std::move(workload);
  return out;
}

}  // namespace gpumem
