// The load phase: the CUDA workspaces, every weight as loaded (one allocation each), the
// adapters and other trained additions, what the optimizer builds before the first step (master
// weights, DDP's buckets, ZeRO-3's partitions), and how much each block gathers when sharded.
#include <algorithm>
#include <optional>

#include "gpumem/model/litgpt_model.hpp"
#include "gpumem/model/param_count.hpp"
#include "training/adapter_targets.hpp"
#include "training/step_replay.hpp"

namespace gpumem {

void step_replay::load() {
  if (config.timeline_samples > 0) tl.record();
  // What the allocator's segments may take of the device (CUDA context and libraries aside).
  const std::uint64_t context =
      config.cuda_context_bytes.value_or(default_cuda_context_bytes(gpu.architecture));
  outside = context + cuda_libraries_bytes();
  if (gpu.memory_bytes > outside) tl.limit(gpu.memory_bytes - outside);
  tl.phase("load");
  // cuBLAS and cuBLASLt (1 MiB) workspaces of the forward thread.
  tl.allocate(cublas_workspace_bytes(gpu.architecture), cat::cuda_workspace);
  tl.allocate(1ULL << 20, cat::cuda_workspace);
  load_weights();
  load_adapters();
  load_peft_extras();
  load_llama_adapter();
  index_params();
  size_gathers();
}

// Parameters as loaded (one allocation each), and the trainable ones of full fine-tuning.
void step_replay::load_weights() {
  // Lightning's BitsandbytesPrecision (litgpt's --quantize) converts every nn.Linear, the LM
  // head's included (lightning/fabric/plugins/precision/bitsandbytes.py convert_module).
  quantized_head = ctx.quantized && fw.quantizes_lm_head;
  for (const auto& t : spec.tensors) {
    if (quantized_head && t.role == tensor_role::lm_head && !t.is_bias)
      head_dequantised += t.numel() * ctx.c * (ctx.fp16_quant_state ? 2 : 1);
  }
  for (const auto& t : spec.tensors) {
    if (!on_stage(t)) continue;
    // QLoRA quantises the blocks' linear layers; embeddings, norms and the LM head stay 16-bit
    // (transformers BitsAndBytesConfig skips the output layer).
    const bool quantize = ctx.quantized && !t.is_bias && !(ctx.fp32_kept && t.kept_fp32) &&
                          (t.module == module_kind::linear || t.module == module_kind::conv1d) &&
                          (t.layer >= 0 || (quantized_head && t.role == tensor_role::lm_head));
    const std::uint64_t local = tensor_parallel_numel(t, tp);
    const bool head_or_embedding = t.role == tensor_role::token_embedding ||
                                   t.role == tensor_role::position_embedding ||
                                   t.role == tensor_role::lm_head;
    const bool kept_fp32 = ctx.fp32_kept && t.kept_fp32;
    const std::uint64_t stored_bytes = kept_fp32 || kbit_prepared
                                           ? (head_or_embedding && !t.is_bias ? kbit_head_bytes : 4)
                                           : base_bytes;
    if (!params_on_host) {
      tl.allocate(share(quantize ? quantized_weight_bytes(t, tp, config.quantization)
                                 : local * stored_bytes,
                        params_sharded),
                  cat::weights);
    }
    if (ctx.full && stepped(t))
      params.push_back({local, kept_fp32 ? 4 : base_bytes, gradient_block(t.layer),
                        local_last_dim(t, tp), t.shape.size() >= 2});
  }
}

// LoRA's (and DoRA's) adapters on the linears it targets: the targets, and a tied LM head named
// lm_head (the embedding's weight, on the last stage).
void step_replay::load_adapters() {
  // (Pointers, not copies: a tensor's name is a string to allocate.)
  std::vector<const tensor_spec*> adapted;
  for (const auto& t : spec.tensors) {
    if (lora_target(config, t) && on_stage(t)) adapted.push_back(&t);
  }
  std::optional<tensor_spec> tied_head;
  if (tied_head_target(spec, config) && last_stage)
    adapted.push_back(&tied_head.emplace(tied_lm_head(spec)));
  params.reserve(params.size() + 3 * adapted.size());
  for (const tensor_spec* adapter : adapted) {
    const tensor_spec& t = *adapter;
    // A [r, in] and B [out, r], split with their layer's split dimension.
    const std::uint64_t in_features = local_in(t, tp);
    const std::uint64_t out_features = local_out(t, tp);
    for (std::uint64_t cols : {in_features, config.lora_rank}) {
      const std::uint64_t numel =
          cols == config.lora_rank ? out_features * cols : config.lora_rank * cols;
      tl.allocate(numel * ctx.adapter_bytes, cat::adapters);
      if (stepped(t))
        params.push_back({numel, ctx.adapter_bytes, gradient_block(t.layer), cols, true});
    }
    if (config.dora) {
      // DoRA's magnitude: one trainable value per output feature (PEFT lora_magnitude_vector).
      tl.allocate(out_features * ctx.adapter_bytes, cat::adapters);
      if (stepped(t)) {
        params.push_back(
            {out_features, ctx.adapter_bytes, gradient_block(t.layer), out_features, false});
      }
    }
  }
}

// LoRA on the token embedding (PEFT lora.Embedding): A [r, vocab] and B [dim, r] in the
// adapter dtype, stepped back with the embeddings; PEFT's modules_to_save: a trainable copy of
// the embedding or the LM head (copy.deepcopy of the module, so in its dtype once the kbit
// preparation and TRL's casts ran) beside the frozen original, which no longer runs; IA3's
// vectors; prompt tuning's virtual tokens.
void step_replay::load_peft_extras() {
  for (const auto& t : spec.tensors) {
    if (!first_stage || !embedding_lora_target(spec, config, t) || embedding_lora) continue;
    embedding_lora = true;
    for (const std::uint64_t numel :
         {config.lora_rank * t.shape[0], t.shape[1] * config.lora_rank}) {
      tl.allocate(numel * ctx.adapter_bytes, cat::adapters);
      params.push_back({numel, ctx.adapter_bytes, -1, numel / config.lora_rank, true});
    }
  }
  std::vector<tensor_spec> copied;
  for (const auto& t : spec.tensors) {
    if ((config.save_embeddings && first_stage && token_table(spec, t)) ||
        (config.save_lm_head && last_stage && t.role == tensor_role::lm_head))
      copied.push_back(t);
  }
  if (config.save_lm_head && last_stage && spec.tied_embeddings)
    copied.push_back(tied_lm_head(spec));
  for (const auto& t : copied) {
    const std::uint64_t bytes = kbit_prepared ? kbit_head_bytes : base_bytes;
    tl.allocate(t.numel() * bytes, cat::adapters);
    params.push_back({t.numel(), bytes, -1, t.shape.back(), t.shape.size() >= 2});
  }
  for (const auto& t : spec.tensors) {
    // IA3's vector: one value per input feature of a feedforward target, per output feature of
    // any other (PEFT: ia3_l of shape [1, in] or [out, 1]).
    if (!ia3_target(config, t) || !on_stage(t)) continue;
    const std::uint64_t features = ia3_scales_input(t) ? local_in(t, tp) : local_out(t, tp);
    tl.allocate(features * ctx.adapter_bytes, cat::adapters);
    if (stepped(t))
      params.push_back({features, ctx.adapter_bytes, gradient_block(t.layer), features, false});
  }
  if (config.finetune == finetune_kind::prompt_tuning && first_stage) {
    // PEFT's PromptEmbedding: num_virtual_tokens rows of the token embedding's width, stepped
    // back with the embeddings.
    const std::uint64_t prompt = config.virtual_tokens * spec.embedding_dim;
    tl.allocate(prompt * ctx.adapter_bytes, cat::adapters);
    params.push_back({prompt, ctx.adapter_bytes, -1, spec.embedding_dim, true});
  }
}

// litgpt's LLaMA-Adapter: a prompt and a gate per block from adapter_start_layer (v2 also trains
// the norms and a scale and bias per output feature of every linear).
void step_replay::load_llama_adapter() {
  llama_adapter = config.finetune == finetune_kind::llama_adapter_v1 ||
                  config.finetune == finetune_kind::llama_adapter_v2;
  adapter_v2 = config.finetune == finetune_kind::llama_adapter_v2;
  for (std::size_t l = stage.first; llama_adapter && l < stage.last; ++l) {
    if (l < config.adapter_start_layer) continue;
    // adapter_wte [prompt, hidden] and gating_factor [1, 1, heads, 1].
    const int layer = static_cast<int>(l);
    const std::uint64_t prompt = config.adapter_prompt_length * spec.hidden_size;
    tl.allocate(prompt * ctx.adapter_bytes, cat::adapters);
    params.push_back({prompt, ctx.adapter_bytes, layer, spec.hidden_size, true});
    tl.allocate(spec.num_heads * ctx.adapter_bytes, cat::adapters);
    params.push_back({spec.num_heads, ctx.adapter_bytes, layer, spec.num_heads, false});
  }
  for (const auto& t : spec.tensors) {
    if (!adapter_v2 || !on_stage(t) || t.is_bias) continue;
    const std::uint64_t local = tensor_parallel_numel(t, tp);
    if (t.role == tensor_role::norm) {
      params.push_back({local, base_bytes, t.layer, local, false});  // trains in place
    } else if (t.module == module_kind::linear || t.module == module_kind::conv1d) {
      // adapter_scale and adapter_bias per output feature (the LM head's too).
      const std::uint64_t features = t.layer >= 0 ? local_out(t, tp) : tensor_out(t);
      for (int k = 0; k < 2; ++k) {
        tl.allocate(features * ctx.adapter_bytes, cat::adapters);
        params.push_back({features, ctx.adapter_bytes, t.layer, features, false});
      }
    }
  }
}

// The trained parameters of each block, in order; what the optimizer builds with them.
void step_replay::index_params() {
  for (const auto& p : params) out.trainable_params += p.numel;
  params_of.resize(spec.layers.size() + 1);  // index layer + 1; 0: outside the blocks
  // Each list is sized before it is filled (one allocation each).
  const auto slot = [&](const trainable& p) {
    const bool listed = p.layer >= -1 && static_cast<std::size_t>(p.layer + 1) < params_of.size();
    return listed ? static_cast<std::size_t>(p.layer + 1) : params_of.size();
  };
  std::vector<std::size_t> counts(params_of.size() + 1);  // (the last: not listed)
  for (const auto& p : params) ++counts[slot(p)];
  for (std::size_t i = 0; i < params_of.size(); ++i) params_of[i].reserve(counts[i]);
  for (const auto& p : params) {
    if (slot(p) < params_of.size()) params_of[slot(p)].push_back(&p);
  }
  for (const auto& p : params) trainable_bytes += p.numel * p.bytes;
  if (master && !states_on_host) {
    // The optimizer's fp32 copy of its (share of the) parameters, made when it is built.
    for (const auto& p : params)
      tl.allocate(share(4 * p.numel, states_sharded), cat::master_weights);
  }
  if (method.bucket_copy_of_grads) {
    // DDP's Reducer keeps every gradient again in flat buckets (gradient_as_bucket_view=False).
    tl.allocate(trainable_bytes, cat::communication_buffers);
  }
}

const std::vector<const step_replay::trainable*>& step_replay::layer_params(int layer) const {
  static const std::vector<const trainable*> none;
  return layer >= -1 && static_cast<std::size_t>(layer + 1) < params_of.size()
             ? params_of[static_cast<std::size_t>(layer + 1)]
             : none;
}

// Unsharded parameters of one block (or of what lives outside the blocks: embeddings, final
// norm, LM head) in the dtype they are gathered in.
void step_replay::size_gathers() {
  block_params.assign(spec.layers.size(), 0);
  largest_module.assign(spec.layers.size(), 0);
  for (const auto& t : spec.tensors) {
    if (!on_stage(t)) continue;
    const std::uint64_t bytes = tensor_parallel_numel(t, tp) * gathered_bytes;
    if (t.layer >= 0) {
      block_params[static_cast<std::size_t>(t.layer)] += bytes;
    } else if (t.role != tensor_role::vision) {
      // (A vision tower's layers are units of their own, gathered only to run images.)
      root_params += bytes;
    }
  }
  if (deepspeed3) size_deepspeed_gathers();
  // A block that shares another's parameters gathers them again to run.
  for (std::size_t l = 0; l < spec.layers.size(); ++l) {
    const auto own = static_cast<std::size_t>(parameter_block(spec, static_cast<int>(l)));
    block_params[l] = block_params[own];
    largest_module[l] = largest_module[own];
  }
  prefetch_limit = config.prefetch_bucket_elements * gathered_bytes;
  bucket_bytes = config.reduce_bucket_elements * (ctx.full ? full_bytes : ctx.adapter_bytes);
  if (deepspeed3) {
    if (persistent_params > 0) tl.allocate(persistent_params, cat::gathered_params);
    // Made when the optimizer is built (stage3.py _setup_for_real_optimizer): the reduce bucket
    // (on the GPU even when the optimizer is offloaded) and, unless the gradients go to the
    // host, the flat buffer of this rank's gradient partitions in the model dtype.
    if (bucket_bytes > 0) tl.allocate(bucket_bytes, cat::communication_buffers);
    if (!grads_to_host) {
      std::uint64_t partitions = 0;
      for (const auto& p : params) partitions += share(p.numel * p.bytes, true);
      tl.allocate(partitions, cat::gradients);
    }
  }
  // unsloth dequantises a 4-bit base for its forward matmuls into one buffer per GPU, grown to
  // the largest linear (unsloth/kernels/utils.py WEIGHT_BUFFERS, ABSMAX_BUFFERS).
  if (fw.dequantise_buffer && ctx.quantized)
    tl.allocate(unsloth_dequantised_bytes(spec, ctx.c, -1), cat::weights);
}

// DeepSpeed ZeRO-3 gathers module by module (deepspeed/runtime/zero/
// partitioned_param_coordinator.py): a module's parameters before it runs plus up to
// prefetch_bucket_elements ahead of it, released after it ran; parameters of at most
// persistence_threshold elements stay gathered for good (parameter_offload.py
// mark_persistent_parameters). A block gathered again for checkpointing's recomputation stays
// gathered through its backward, which follows within stage3_max_reuse_distance.
void step_replay::size_deepspeed_gathers() {
  std::vector<std::pair<std::string, std::uint64_t>> modules;  // block modules, in order
  for (const auto& t : spec.tensors) {
    if (!on_stage(t)) continue;
    const std::uint64_t bytes = tensor_parallel_numel(t, tp) * gathered_bytes;
    if (tensor_parallel_numel(t, tp) <= config.persistence_threshold) {
      persistent_params += bytes;
      if (t.layer >= 0) {
        block_params[static_cast<std::size_t>(t.layer)] -= bytes;
      } else if (t.role != tensor_role::vision) {
        root_params -= bytes;
      }
      continue;
    }
    if (t.layer >= 0) {
      const std::string path = t.name.substr(0, t.name.rfind('.'));
      if (modules.empty() || modules.back().first != path) modules.push_back({path, 0});
      modules.back().second += bytes;
      auto& largest = largest_module[static_cast<std::size_t>(t.layer)];
      largest = std::max(largest, modules.back().second);
    } else if (t.role == tensor_role::token_embedding ||
               t.role == tensor_role::position_embedding) {
      input_root = std::max(input_root, bytes);
      if (t.role == tensor_role::token_embedding && spec.tied_embeddings) output_root += bytes;
    } else if (t.role != tensor_role::vision) {
      output_root += bytes;
    }
  }
}

// What ZeRO-3 holds gathered while block l runs (forward or backward), with what it prefetches
// of the block that follows (`next` bytes).
std::uint64_t step_replay::deepspeed_working_set(std::size_t l, bool backward,
                                                 std::uint64_t next) const {
  const std::uint64_t own = backward && checkpointed ? block_params[l] : largest_module[l];
  return own + std::min(prefetch_limit, next);
}

}  // namespace gpumem
