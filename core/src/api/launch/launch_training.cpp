// The training formats: a DeepSpeed config, an accelerate config, a torchrun line and the
// transformers/PEFT/bitsandbytes arguments of the script they launch.
#include <cctype>
#include <string>

#include "api/launch/launch.hpp"
#include "gpumem/plan/estimate.hpp"

namespace gpumem {

using json = nlohmann::ordered_json;

namespace {

bool fsdp(const std::string& method) { return method.rfind("fsdp_", 0) == 0; }

// What every launcher here runs: one process per GPU of a transformers (HF Trainer or
// accelerate) script, without tensor, context or pipeline parallelism.
std::optional<error> check_launchable(const launch_setup& s, const std::string& format) {
  if (s.training.framework != framework_profile::transformers) {
    return launch_refusal("workload.framework",
                          "a " + format +
                              " export runs a transformers script (HF Trainer or accelerate); " +
                              "this setup runs another framework, whose own launcher runs it");
  }
  if (s.parallel.tp > 1 || s.parallel.cp > 1 || s.parallel.pp > 1) {
    return launch_refusal("parallel.method",
                          format + " has no tensor, context or pipeline parallelism for a " +
                              "transformers model: this setup needs Megatron-LM, " +
                              "torchtitan or DeepSpeed's pipeline engine");
  }
  if (s.method == "gemini") {
    return launch_refusal("parallel.method",
                          "Colossal-AI's Gemini runs under its own launcher "
                          "(colossalai run), not " +
                              format);
  }
  return std::nullopt;
}

const char* offload_device(offload_target t) { return offload_target_name(t); }

// DeepSpeed's config JSON (deepspeed/runtime/zero/config.py and offload_config.py, DeepSpeed
// 0.16; docs "DeepSpeed Configuration JSON"), as the HF Trainer integration reads it
// (transformers/integrations/deepspeed.py: "auto" values filled from TrainingArguments).
result<launch_output> deepspeed(const launch_setup& s) {
  if (auto e = check_launchable(s, "DeepSpeed")) return *e;
  const training_config& c = s.training;
  if (!zero_sharding(s.parallel.sharding)) {
    return launch_refusal("parallel.method", "a DeepSpeed config runs ZeRO stages 1 to 3; " +
                                                 s.method +
                                                 " is exported as accelerate or torchrun");
  }
  if (c.compute == compute_precision::pure_bf16 || c.compute == compute_precision::pure_fp16) {
    return launch_refusal("workload.compute",
                          "DeepSpeed's bf16 and fp16 modes keep fp32 master weights "
                          "(amp_bf16, amp_fp16 here): pure 16-bit training is not one "
                          "of them");
  }
  const offload_placement& o = s.parallel.offload;
  if (o.activations != offload_target::none) {
    return launch_refusal("parallel.offload.activations",
                          "DeepSpeed's cpu_checkpointing moves Megatron-LM's checkpoints, not a "
                          "transformers model's");
  }
  if (o.gradients != offload_target::none && o.optimizer == offload_target::none) {
    return launch_refusal("parallel.offload.gradients",
                          "DeepSpeed moves gradients to the host only with the optimizer "
                          "(offload_optimizer)");
  }
  launch_output out;
  json config = json::object();
  config["train_micro_batch_size_per_gpu"] = c.micro_batch;
  config["gradient_accumulation_steps"] = c.grad_accumulation;
  config["train_batch_size"] = c.micro_batch * c.grad_accumulation * s.parallel.dp;
  if (c.compute == compute_precision::amp_bf16) config["bf16"] = {{"enabled", true}};
  if (c.compute == compute_precision::amp_fp16) config["fp16"] = {{"enabled", true}};
  json z = json::object();
  z["stage"] = s.parallel.sharding == data_parallel::zero1   ? 1
               : s.parallel.sharding == data_parallel::zero2 ? 2
                                                             : 3;
  // overlap_comm and contiguous_gradients are left to DeepSpeed's defaults (zero/config.py),
  // which the estimate assumes.
  // The buckets the estimate sized (ZeRO-2's and 3's gradient reduction, ZeRO-3's gathers).
  if (s.parallel.sharding != data_parallel::zero1) {
    z["reduce_bucket_size"] = s.parallel.reduce_bucket_elements;
  }
  if (s.parallel.sharding == data_parallel::zero3) {
    z["stage3_prefetch_bucket_size"] = s.parallel.prefetch_bucket_elements;
    z["stage3_param_persistence_threshold"] = s.parallel.persistence_threshold;
  }
  const auto offload_section = [](offload_target t) {
    json section = {{"device", offload_device(t)}, {"pin_memory", true}};
    // A placeholder: the node's NVMe mount (offload_config.py nvme_path).
    if (t == offload_target::nvme) section["nvme_path"] = "/local_nvme";
    return section;
  };
  if (o.optimizer != offload_target::none) z["offload_optimizer"] = offload_section(o.optimizer);
  if (o.params != offload_target::none) z["offload_param"] = offload_section(o.params);
  config["zero_optimization"] = std::move(z);
  if (o.optimizer != offload_target::none) {
    // ZeRO-Offload steps with DeepSpeedCPUAdam, which DeepSpeed builds from this section
    // (zero_force_ds_cpu_optimizer refuses a client optimizer); "auto": the Trainer's values.
    if (c.optimizer != optimizer_kind::adamw) {
      return launch_refusal("workload.optimizer",
                            "an offloaded DeepSpeed optimizer is DeepSpeedCPUAdam "
                            "(AdamW): another optimizer does not offload");
    }
    config["optimizer"] = {
        {"type", "AdamW"},
        {"params", {{"lr", "auto"}, {"betas", "auto"}, {"eps", "auto"}, {"weight_decay", "auto"}}}};
  }
  out.files.push_back({"ds_config.json", "json", std::move(config)});
  const std::uint64_t nodes = nodes_of(s);
  out.command =
      "deepspeed --num_gpus " + std::to_string(s.cluster.gpus / nodes) +
      (nodes > 1 ? " --num_nodes " + std::to_string(nodes) + " --hostfile hostfile" : "") +
      " train.py --deepspeed ds_config.json";
  if (c.grad_ckpt || c.finetune != finetune_kind::full ||
      c.quantization != base_quantization::none) {
    out.not_expressed.push_back(
        {"workload",
         "gradient checkpointing, LoRA, the quantised base and (without offload) the "
         "optimizer are set in the training script: see its transformers arguments"});
  }
  return out;
}

const char* mixed_precision(compute_precision p) {
  if (p == compute_precision::amp_bf16) return "bf16";
  if (p == compute_precision::amp_fp16) return "fp16";
  return "no";  // fp32, or pure 16-bit: the model loaded in its dtype, no autocast
}

// accelerate's config file (accelerate/commands/config/config_args.py ClusterConfig,
// accelerate 1.2), as `accelerate config` writes it.
result<launch_output> accelerate(const launch_setup& s) {
  if (auto e = check_launchable(s, "accelerate")) return *e;
  const training_config& c = s.training;
  const offload_placement& o = s.parallel.offload;
  json config = json::object();
  config["compute_environment"] = "LOCAL_MACHINE";
  const std::uint64_t nodes = nodes_of(s);
  if (zero_sharding(s.parallel.sharding)) {
    config["distributed_type"] = "DEEPSPEED";
    if (o.activations != offload_target::none ||
        (o.gradients != offload_target::none && o.gradients != o.optimizer)) {
      return launch_refusal("parallel.offload",
                            "accelerate's DeepSpeed plugin offloads the optimizer "
                            "(with its gradients) and the parameters only");
    }
    json ds = json::object();
    ds["gradient_accumulation_steps"] = c.grad_accumulation;
    ds["offload_optimizer_device"] = offload_device(o.optimizer);
    ds["offload_param_device"] = offload_device(o.params);
    if (o.optimizer == offload_target::nvme) ds["offload_optimizer_nvme_path"] = "/local_nvme";
    if (o.params == offload_target::nvme) ds["offload_param_nvme_path"] = "/local_nvme";
    ds["zero3_init_flag"] = s.parallel.sharding == data_parallel::zero3;
    ds["zero_stage"] = s.parallel.sharding == data_parallel::zero1   ? 1
                       : s.parallel.sharding == data_parallel::zero2 ? 2
                                                                     : 3;
    config["deepspeed_config"] = std::move(ds);
  } else if (fsdp(s.method)) {
    config["distributed_type"] = "FSDP";
    const auto host = fsdp_host_offload(o);
    if (!host.ok()) return host.failure();
    json f = json::object();
    f["fsdp_auto_wrap_policy"] = "TRANSFORMER_BASED_WRAP";
    f["fsdp_backward_prefetch"] = "BACKWARD_PRE";
    f["fsdp_cpu_ram_efficient_loading"] = true;
    f["fsdp_offload_params"] = host.value();
    // accelerate's enum names: the strategy in capitals.
    std::string strategy = fsdp_strategy(s.method);
    for (char& ch : strategy) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
    f["fsdp_sharding_strategy"] = strategy;
    f["fsdp_state_dict_type"] = "SHARDED_STATE_DICT";
    f["fsdp_sync_module_states"] = true;
    f["fsdp_use_orig_params"] = true;
    f["fsdp_activation_checkpointing"] = c.grad_ckpt;
    config["fsdp_config"] = std::move(f);
  } else {
    if (o.any()) {
      return launch_refusal("parallel.offload", "offloading needs ZeRO or FSDP, not " + s.method);
    }
    config["distributed_type"] = s.cluster.gpus > 1 ? "MULTI_GPU" : "NO";
  }
  config["machine_rank"] = 0;
  if (nodes > 1) {
    config["main_process_ip"] = "MAIN_NODE_ADDRESS";  // a placeholder: the first node's address
    config["main_process_port"] = 29500;              // torch.distributed's default MASTER_PORT
  }
  config["main_training_function"] = "main";
  config["mixed_precision"] = mixed_precision(c.compute);
  config["num_machines"] = nodes;
  config["num_processes"] = s.cluster.gpus;
  config["rdzv_backend"] = nodes > 1 ? "c10d" : "static";
  config["same_network"] = true;
  config["use_cpu"] = false;
  launch_output out;
  out.files.push_back({"accelerate_config.yaml", "yaml", std::move(config)});
  out.command = "accelerate launch --config_file accelerate_config.yaml train.py";
  if (c.grad_ckpt && !fsdp(s.method)) {
    out.not_expressed.push_back({"workload.grad_ckpt",
                                 "gradient checkpointing is set in the training script: "
                                 "gradient_checkpointing=True in its transformers arguments"});
  }
  if (c.finetune != finetune_kind::full || c.quantization != base_quantization::none) {
    out.not_expressed.push_back({"workload.finetune",
                                 "LoRA and the quantised base are set in the training script: "
                                 "see its transformers arguments"});
  }
  return out;
}

// torchrun's command line (torch/distributed/run.py, PyTorch 2.5): one process per GPU; the
// method is the script's.
result<launch_output> torchrun(const launch_setup& s) {
  if (s.parallel.pp > 1) {
    return launch_refusal("parallel.method",
                          "torchrun launches processes; a pipeline needs its "
                          "framework's launcher (Megatron-LM, DeepSpeed)");
  }
  launch_output out;
  const std::uint64_t nodes = nodes_of(s);
  // Across nodes: c10d rendezvous on the first node at torch.distributed's default port, 29500.
  const std::string per_node = std::to_string(s.cluster.gpus / nodes);
  out.command = nodes > 1 ? "torchrun --nnodes " + std::to_string(nodes) + " --nproc_per_node " +
                                per_node +
                                " --node_rank $NODE_RANK --rdzv_backend c10d --rdzv_endpoint "
                                "$MASTER_ADDR:29500 --rdzv_id gpumem train.py"
                          : "torchrun --standalone --nproc_per_node " + per_node + " train.py";
  out.not_expressed.push_back(
      {"parallel.method", "torchrun only starts the processes: " + method_label(s.method) +
                              ", the micro-batch and the precision are set in the training "
                              "script (see the accelerate, DeepSpeed and transformers formats)"});
  return out;
}

}  // namespace

result<launch_output> export_training(const launch_setup& setup, const std::string& format) {
  if (format == "deepspeed") return deepspeed(setup);
  if (format == "accelerate") return accelerate(setup);
  if (format == "torchrun") return torchrun(setup);
  if (format == "axolotl") return export_axolotl(setup);
  if (format == "litgpt") return export_litgpt(setup);
  if (format == "torchtune") return export_torchtune(setup);
  return export_transformers(setup);
}

}  // namespace gpumem
