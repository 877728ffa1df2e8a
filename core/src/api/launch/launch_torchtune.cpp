// torchtune's launch line: `tune run [--nproc_per_node N] RECIPE --config FAMILY/CONFIG
// key=value ...`, a shipped config (for its checkpoint and tokenizer paths) with every key the
// estimate depends on overridden (torchtune 0.6.1: torchtune/_cli/run.py, recipes/*.py and
// recipes/configs/). One device runs the *_single_device recipes; several run the
// *_distributed ones, which shard with FSDP2 (fully_shard, reshard_after_forward from
// fsdp_reshard_after_forward). Its single-device full fine-tuning steps the optimizer inside
// backward (optimizer_in_bwd), as the torchtune profile models it.
#include <string>
#include <vector>

#include "api/launch/launch.hpp"
#include "api/launch/launch_torchtune_models.hpp"

namespace gpumem {

namespace {

struct tune_line {
  std::vector<std::string> overrides;
  void set(const std::string& key, const std::string& value) {
    overrides.push_back(key + "=" + value);
  }
};

std::string flag(bool on) { return on ? "True" : "False"; }

// The shipped config to start from: the recipe's own for this fine-tuning, else the plain LoRA
// one (the same recipe; the model's builder arguments are overridden anyway).
std::string config_name(const torchtune_model& m, const training_config& c, bool several) {
  const std::string size = m.size;
  const std::string where = several ? "" : "_single_device";
  std::vector<std::string> tries;
  if (c.finetune == finetune_kind::full) {
    tries = several ? std::vector<std::string>{"full"}
                    : std::vector<std::string>{"full_single_device", "full_low_memory"};
  } else {
    const bool quantized = c.quantization != base_quantization::none;
    if (c.dora && quantized) tries.push_back("qdora" + where);
    if (c.dora) tries.push_back("dora" + where);
    if (quantized) tries.push_back("qlora" + where);
    tries.push_back("lora" + where);
  }
  for (const auto& t : tries) {
    if (torchtune_ships(m, size + "_" + t)) return std::string(m.family) + "/" + size + "_" + t;
  }
  return "";
}

// lora_attn_modules, apply_lora_to_mlp and apply_lora_to_output from the request's targets.
std::optional<error> lora_modules(const launch_setup& s, const torchtune_model& m,
                                  tune_line& line) {
  const training_config& c = s.training;
  std::vector<std::string> attention;
  int mlp_parts = 0;
  bool head = false;
  const auto add = [&](const char* name) {
    for (const auto& a : attention) {
      if (a == name) return;
    }
    attention.push_back(name);
  };
  for (const auto& t : c.lora_targets) {
    if (t == "all-linear") {
      for (const char* name : {"q_proj", "k_proj", "v_proj", "output_proj"}) add(name);
      mlp_parts = 3;
    } else if (t == "q_proj" || t == "k_proj" || t == "v_proj") {
      add(t.c_str());
    } else if (t == "o_proj") {
      add("output_proj");
    } else if (t == "gate_proj" || t == "up_proj" || t == "down_proj") {
      ++mlp_parts;
    } else if (t == "lm_head") {
      head = true;
    } else {
      return launch_refusal("workload.lora.targets",
                            "torchtune adapts q_proj, k_proj, v_proj, o_proj (its output_proj), "
                            "the MLP as a whole and the output layer; not " +
                                t);
    }
  }
  if (mlp_parts > 0 && mlp_parts < 3) {
    return launch_refusal("workload.lora.targets",
                          "torchtune adapts the MLP as a whole (apply_lora_to_mlp): name "
                          "gate_proj, up_proj and down_proj together");
  }
  if (head && (!m.output_lora || s.spec->tied_embeddings)) {
    return launch_refusal("workload.lora.targets",
                          "torchtune's builder for this model adapts no output layer (its head "
                          "is the tied embedding)");
  }
  std::string list = "[";
  for (std::size_t i = 0; i < attention.size(); ++i) list += (i ? "," : "") + attention[i];
  line.set("model.lora_attn_modules", list + "]");
  line.set("model.apply_lora_to_mlp", flag(mlp_parts == 3));
  if (m.output_lora) line.set("model.apply_lora_to_output", flag(head));
  return std::nullopt;
}

std::optional<error> model_overrides(const launch_setup& s, const torchtune_model& m, bool instruct,
                                     tune_line& line) {
  const training_config& c = s.training;
  const std::string builder = torchtune_builder(m, instruct);
  const std::string module = std::string("torchtune.models.") + m.family + ".";
  if (c.finetune == finetune_kind::full) {
    line.set("model._component_", module + builder);
    return std::nullopt;
  }
  if (c.dora && !m.dora) {
    return launch_refusal("workload.finetune",
                          "torchtune's LoRA builder for this model takes no use_dora");
  }
  line.set("model._component_", module + "lora_" + builder);
  if (auto e = lora_modules(s, m, line)) return e;
  line.set("model.lora_rank", std::to_string(c.lora_rank));
  line.set("model.lora_alpha", std::to_string(2 * c.lora_rank));  // its configs: alpha = 2 rank
  line.set("model.lora_dropout", decimal_text(lora_dropout_of(c)));
  if (c.dora) line.set("model.use_dora", "True");
  // torchtune's QLoRA: the frozen base as torchao NF4Tensors (quantize_base).
  line.set("model.quantize_base", flag(c.quantization != base_quantization::none));
  return std::nullopt;
}

// The optimizer: torch.optim's, bitsandbytes' 8-bit, or (stepping in backward) a paged one.
std::optional<error> optimizer_overrides(const training_config& c, bool in_backward,
                                         tune_line& line) {
  if (in_backward) {
    if (c.optimizer != optimizer_kind::adamw && c.optimizer != optimizer_kind::adamw_8bit) {
      return launch_refusal("workload.optimizer",
                            "torchtune's single-device full fine-tuning steps a paged "
                            "bitsandbytes AdamW inside backward: adamw or adamw_8bit");
    }
    line.set("optimizer._component_", c.optimizer == optimizer_kind::adamw_8bit
                                          ? "bitsandbytes.optim.PagedAdamW8bit"
                                          : "bitsandbytes.optim.PagedAdamW");
    line.set("optimizer_in_bwd", "True");
    return std::nullopt;
  }
  switch (c.optimizer) {
    case optimizer_kind::adamw: {
      line.set("optimizer._component_", "torch.optim.AdamW");
      const adamw_implementation impl = c.adamw_impl.value_or(adamw_implementation::fused);
      line.set("optimizer.fused", flag(impl == adamw_implementation::fused));
      line.set("optimizer.foreach", flag(impl == adamw_implementation::foreach));
      break;
    }
    case optimizer_kind::adamw_8bit:
      line.set("optimizer._component_", "bitsandbytes.optim.AdamW8bit");
      break;
    case optimizer_kind::sgd:
    case optimizer_kind::sgd_momentum:
      line.set("optimizer._component_", "torch.optim.SGD");
      line.set("optimizer.momentum", c.optimizer == optimizer_kind::sgd ? "0" : "0.9");
      break;
    default:
      return launch_refusal("workload.optimizer",
                            "torchtune's recipes step torch.optim or bitsandbytes optimizers: "
                            "adamw, adamw_8bit, sgd or sgd_momentum");
  }
  if (c.finetune == finetune_kind::full) line.set("optimizer_in_bwd", "False");
  return std::nullopt;
}

// What the recipes run: one device or FSDP2, checkpointing whole blocks or none, activations
// offloaded to the host or not, and (distributed) FSDP's CPUOffload.
std::optional<error> parallel_overrides(const launch_setup& s, bool several, tune_line& line) {
  const training_config& c = s.training;
  if (c.tp_degree > 1 || c.cp_degree > 1 || c.pp_degree > 1) {
    return launch_refusal("parallel.method",
                          "the torchtune export runs data parallelism only (FSDP2); its "
                          "tensor_parallel_plan is the model's own to write");
  }
  if (several && s.method != "fsdp_full_shard" && s.method != "fsdp_shard_grad_op") {
    return launch_refusal("parallel.method",
                          "torchtune's distributed recipes shard with FSDP2: fsdp_full_shard, "
                          "or fsdp_shard_grad_op (fsdp_reshard_after_forward False)");
  }
  if (c.selective_recompute) {
    return launch_refusal("workload.grad_ckpt",
                          "torchtune's recipes checkpoint whole blocks "
                          "(enable_activation_checkpointing), not selected ops");
  }
  line.set("enable_activation_checkpointing", flag(c.grad_ckpt));
  offload_placement rest = s.parallel.offload;
  const bool activations = rest.activations == offload_target::cpu;
  if (rest.activations == offload_target::nvme)
    return launch_refusal("parallel.offload", "torchtune offloads activations to the host only");
  rest.activations = offload_target::none;
  line.set("enable_activation_offloading", flag(activations));
  if (!several) {
    if (rest.any())
      return launch_refusal("parallel.offload", "torchtune offloads states under FSDP only");
    return std::nullopt;
  }
  const auto host = fsdp_host_offload(rest);
  if (!host.ok()) return host.failure();
  line.set("fsdp_cpu_offload", flag(host.value()));
  line.set("fsdp_reshard_after_forward", flag(s.method == "fsdp_full_shard"));
  return std::nullopt;
}

}  // namespace

result<launch_output> export_torchtune(const launch_setup& s) {
  const training_config& c = s.training;
  if (c.framework != framework_profile::torchtune) {
    return launch_refusal("workload.framework",
                          "a torchtune export runs torchtune's own models and recipes: set "
                          "workload.framework torchtune and estimate again");
  }
  bool instruct = false;
  const torchtune_model* m = torchtune_model_of(s.model_id, instruct);
  if (!m) {
    return launch_refusal("model",
                          "torchtune 0.6.1 builds Llama 2, 3, 3.1, 3.2 and 3.3, Mistral 7B, "
                          "Gemma, Gemma 2, Qwen2.5 and Code Llama 7B; not this model");
  }
  if (c.finetune != finetune_kind::full && c.finetune != finetune_kind::lora) {
    return launch_refusal("workload.finetune",
                          "torchtune's recipes fine-tune full, LoRA, QLoRA or DoRA");
  }
  if (c.compute != compute_precision::pure_bf16 && c.compute != compute_precision::fp32) {
    return launch_refusal("workload.compute",
                          "torchtune runs the model in its own dtype without autocast: "
                          "pure_bf16 or fp32");
  }
  const bool several = s.cluster.gpus > 1;
  const bool in_backward = !several && c.finetune == finetune_kind::full && c.optimizer_step;
  if (in_backward && c.grad_accumulation > 1) {
    return launch_refusal("workload.grad_accumulation",
                          "torchtune's single-device full fine-tuning steps inside backward "
                          "(optimizer_in_bwd), which takes no gradient accumulation: 1");
  }
  if (!c.optimizer_step) {
    return launch_refusal("workload.phase", "torchtune's recipes train: phase train");
  }
  const std::string config = config_name(*m, c, several);
  if (config.empty()) {
    return launch_refusal("model", std::string("torchtune 0.6.1 ships no config for this "
                                               "fine-tuning of this model on ") +
                                       (several ? "several devices" : "one device") +
                                       " (its configs: " + m->configs + ")");
  }
  tune_line line;
  if (auto e = model_overrides(s, *m, instruct, line)) return *e;
  line.set("batch_size", std::to_string(c.micro_batch));
  line.set("gradient_accumulation_steps", std::to_string(c.grad_accumulation));
  line.set("tokenizer.max_seq_len", std::to_string(c.seq_len));
  line.set("dtype", c.compute == compute_precision::fp32 ? "fp32" : "bf16");
  if (auto e = optimizer_overrides(c, in_backward, line)) return *e;
  // The loss the torchtune profile models (torchtune/modules/loss/ce_chunked_output_loss.py).
  line.set("loss._component_", "torchtune.modules.loss.CEWithChunkedOutputLoss");
  line.set("compile", "False");  // eager, as estimated
  if (auto e = parallel_overrides(s, several, line)) return *e;

  const bool full = c.finetune == finetune_kind::full;
  const std::string recipe = std::string(full ? "full_finetune_" : "lora_finetune_") +
                             (several ? "distributed" : "single_device");
  std::vector<std::string> words = {"tune", "run"};
  const std::uint64_t nodes = nodes_of(s);
  if (nodes > 1) words.insert(words.end(), {"--nnodes", std::to_string(nodes)});
  if (several)
    words.insert(words.end(), {"--nproc_per_node", std::to_string(s.cluster.gpus / nodes)});
  words.insert(words.end(), {recipe, "--config", config});
  launch_output out;
  // An override a line, continued with a backslash, as torchtune's docs write them.
  out.command = shell_line(words);
  for (const auto& o : line.overrides) out.command += " \\\n  " + shell_line({o});
  const std::string id = s.model_id.empty() ? std::string(m->id) : s.model_id;
  out.not_expressed.push_back(
      {"model",
       "torchtune reads the checkpoint and tokenizer from the shipped config's paths: "
       "`tune download " +
           id +
           " --output-dir DIR` first, then add checkpointer.checkpoint_dir=DIR and "
           "tokenizer.path=DIR/… if DIR is not the config's"});
  out.not_expressed.push_back(
      {"workload.seq_len",
       "torchtune truncates each sample to tokenizer.max_seq_len and pads a "
       "batch to its longest: the estimate is that of full-length batches"});
  if (c.quantization == base_quantization::nf4) {
    out.not_expressed.push_back(
        {"workload.weights",
         "torchao's NF4 (quantize_base) also quantises its block scales, as "
         "nf4_double_quant does (0.52 bytes a weight "
         "rather than 0.56): its frozen weights take about 8 % less"});
  }
  if (nodes > 1) {
    out.not_expressed.push_back({"cluster.gpus_per_node",
                                 "tune run passes torchrun's rendezvous flags through: add "
                                 "--node_rank, --rdzv_backend c10d and --rdzv_endpoint on each "
                                 "node"});
  }
  return out;
}

}  // namespace gpumem
