// What the replayed run is, decided once before the first allocation: the pipeline stage, the
// dtypes of weights, adapters and activations, what data parallelism shards and offload moves,
// the framework's loop, and the blocks' descriptions.
#include <algorithm>

#include "gpumem/model/param_count.hpp"
#include "training/step_replay.hpp"

namespace gpumem {

step_replay::step_replay(const model_spec& model, const training_config& run_config,
                         const gpu_spec& device, const std::vector<std::string>& unmatched_targets)
    : spec(model),
      config(run_config),
      gpu(device),
      fw(framework_of(run_config)),
      method(data_parallel_of(run_config.sharding)),
      ctx{model, run_config} {
  setup_stage();
  setup_precision();
  setup_sharding();
  setup_framework();
  describe_blocks();
  release_notes(unmatched_targets);
}

void step_replay::setup_stage() {
  tp = std::max<std::uint64_t>(config.tp_degree, 1);
  cp = std::max<std::uint64_t>(config.cp_degree, 1);
  pp = std::max<std::uint64_t>(config.pp_degree, 1);
  stage = pipeline_stage_layers(spec.layers.size(), pp, config.pp_stage);
  first_stage = config.pp_stage == 0;
  last_stage = config.pp_stage + 1 == pp;
  // 1F1B: stage s has started the forward of p - s micro-batches when the first backward reaches
  // it (Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on GPU Clusters").
  const std::uint64_t micro_batches = config.pp_micro_batches ? config.pp_micro_batches : pp;
  in_flight = std::min(pp - config.pp_stage, micro_batches);
  // Where a parameter's gradient appears in backward: in its block's backward, or, for blocks
  // that share parameters (ALBERT), in the last block that runs them, the first one stepped back.
  // (Indexed once: a per-tensor scan of every block made the replay quadratic in the blocks.)
  last_runner.resize(spec.layers.size());
  for (std::size_t l = 0; l < spec.layers.size(); ++l) last_runner[l] = static_cast<int>(l);
  for (std::size_t l = 0; l < spec.layers.size(); ++l) {
    const int runs = parameter_block(spec, static_cast<int>(l));
    if (runs >= 0 && static_cast<std::size_t>(runs) < spec.layers.size())
      last_runner[static_cast<std::size_t>(runs)] = static_cast<int>(l);
  }
}

// What a stage holds: its blocks; the first the embeddings, the last the final norm and LM
// head (with tied embeddings its own copy of the token embedding as the head, Megatron-LM's
// shared word embeddings).
bool step_replay::on_stage(const tensor_spec& t) const {
  if (t.layer >= 0) {
    const auto l = static_cast<std::size_t>(t.layer);
    return l >= stage.first && l < stage.last;
  }
  const bool input_side =
      t.role == tensor_role::token_embedding || t.role == tensor_role::position_embedding ||
      t.role == tensor_role::vision || t.name.find("project_in") != std::string::npos;
  if (t.role == tensor_role::token_embedding && spec.tied_embeddings && last_stage) return true;
  return input_side ? first_stage : last_stage;
}

int step_replay::gradient_block(int layer) const {
  return layer >= 0 && static_cast<std::size_t>(layer) < spec.layers.size()
             ? last_runner[static_cast<std::size_t>(layer)]
             : layer;
}

void step_replay::setup_precision() {
  ctx.cp = cp;
  ctx.seq = config.seq_len / cp;
  ctx.tokens = config.micro_batch * ctx.seq;
  ctx.tp = tp;
  // Sequence parallelism splits the hidden-width tensors along the sequence (Korthikanti et al.
  // 2022, "Reducing Activation Recomputation in Large Transformer Models").
  ctx.h_tokens = config.sequence_parallel ? ceil_div(ctx.tokens, tp) : ctx.tokens;
  ctx.c = compute_bytes(config.compute);
  ctx.full = config.finetune == finetune_kind::full;
  // DeepSpeed's and Colossal-AI's mixed precision converts the module — LoRA adapters too — to
  // 16 bits and runs it without autocast (the fp32 copies of what trains live in the optimizer:
  // deepspeed/runtime/engine.py _configure_distributed_model, Colossal-AI LowLevelZeroModel and
  // GeminiDDP): its activations are all 16-bit.
  // A model stated as fp32 (`workload.weights`) is taken as not converted.
  engine_16bit = is_amp(config.compute) && zero_engine(config.sharding) &&
                 (ctx.full ? full_model_weight_bytes(config) == 2
                           : config.base_weight_bytes == 0 || config.base_weight_bytes == 2);
  ctx.amp = is_amp(config.compute) && !engine_16bit;
  ctx.norms_train = ctx.full || config.finetune == finetune_kind::llama_adapter_v2;
  ctx.quantized = !ctx.full && config.quantization != base_quantization::none;
  ctx.int8_base = ctx.quantized && config.quantization == base_quantization::int8;
  // transformers and litgpt quantise to 4 bits with bitsandbytes; torchtune's QLoRA runs
  // torchao's NF4Tensor, whose LinearNF4 saves the weight alone (torchao/dtypes/nf4tensor.py),
  // and unsloth its own kernels (framework_traits::bitsandbytes_4bit).
  bitsandbytes_4bit = ctx.quantized && !ctx.int8_base && fw.bitsandbytes_4bit;
  ctx.base_keeps_input =
      ctx.int8_base || (bitsandbytes_4bit && config.software.bnb_4bit_keeps_input());
  ctx.fp16_quant_state = ctx.quantized && fw.bf16_from_fp16_quant_state &&
                         (config.compute == compute_precision::amp_bf16 ||
                          config.compute == compute_precision::pure_bf16);
  pure = config.compute == compute_precision::pure_bf16 ||
         config.compute == compute_precision::pure_fp16;
  full_bytes = full_model_weight_bytes(config);
  base_bytes = ctx.full
                   ? full_bytes
                   : (config.base_weight_bytes ? config.base_weight_bytes : (ctx.c == 4 ? 4 : 2));
  // PEFT upcasts adapters to fp32 under mixed precision (autocast_adapter_dtype=True); before
  // 0.12 they took the dtype of a 16-bit or fp32 base layer (a quantised one's adapters stay
  // fp32: nn.Linear's default dtype, and PEFT's kbit preparation casts to fp32 anyway).
  ctx.adapter_bytes = pure || engine_16bit ? 2 : 4;
  adapters_in_base_dtype = config.software.peft_adapters_in_base_dtype() &&
                           config.finetune == finetune_kind::lora && !ctx.quantized &&
                           !engine_16bit && ctx.adapter_bytes != base_bytes;
  if (adapters_in_base_dtype) ctx.adapter_bytes = base_bytes;
  ctx.r = base_bytes;
  // transformers keeps the modules a model lists in _keep_in_fp32_modules (T5's `wo`) fp32 when
  // it is loaded in fp16 or quantised by bitsandbytes (modeling_utils.py from_pretrained); a
  // 16-bit engine converts the whole module again (DeepSpeed's module.half()).
  const bool fp16_load = (config.compute == compute_precision::amp_fp16 ||
                          config.compute == compute_precision::pure_fp16) &&
                         base_bytes == 2;
  ctx.fp32_kept = (fp16_load || ctx.quantized) && !engine_16bit &&
                  std::any_of(spec.tensors.begin(), spec.tensors.end(),
                              [](const tensor_spec& t) { return t.kept_fp32; });
}

void step_replay::setup_sharding() {
  // Data parallelism: which states each rank keeps a 1/n share of.
  dp = config.sharding;
  n = std::max<std::uint64_t>(config.dp_degree, 1);
  params_sharded = method.shards_params;
  // A vision tower that text-only batches never run gets no gradient on one GPU or under FSDP
  // (its units never run), so AdamW makes no states for it (torch.optim skips a None grad); DDP
  // zero-fills unused parameters' gradients (find_unused_parameters, which the unused tower
  // needs), and DeepSpeed ZeRO and Gemini flatten every parameter that requires grad into their
  // fp32 groups and states.
  idle_tower_steps = method.steps_unused_params;
  grads_sharded = method.shards_grads;
  // PEFT's prepare_model_for_kbit_training, which the transformers QLoRA recipes run on an
  // unsharded 4-bit model (TRL SFTTrainer, the QLoRA paper's qlora.py; FSDP / ZeRO-3 QLoRA skip
  // it), casts every weight that is not 4-bit to fp32 (peft/utils/other.py); under bf16 TRL and
  // qlora.py cast the embeddings and LM head back to bf16 and keep the norms fp32
  // (trl peft_module_casting_to_bf16; the adapters stay as PEFT made them, fp32 under autocast
  // — qlora.py and older TRL also cast them to bf16, which is not modelled). Where the norms
  // multiply in their weight's dtype, they hand fp32 to the 4-bit linears, whose outputs come
  // back fp32, and the residual stream turns fp32 at the first block's MLP (modelled from the
  // first block on).
  kbit_prepared =
      config.kbit_preparation && ctx.quantized && fw.kbit_preparation && !params_sharded && !pure;
  ctx.kbit_fp32_norms = kbit_prepared && !spec.norm_keeps_input_dtype;
  if (ctx.kbit_fp32_norms) ctx.r = 4;
  kbit_head_bytes = config.compute == compute_precision::amp_bf16 ? base_bytes : 4;
  states_sharded = method.shards_states;
  const offload_placement& off = config.offload;
  states_on_host = off.optimizer != offload_target::none;
  params_on_host = off.params != offload_target::none;
  grads_to_host = states_on_host || off.gradients != offload_target::none;
  acts_to_host = off.activations != offload_target::none;
  // Mixed precision over a 16-bit model keeps fp32 master weights in the optimizer.
  master = (ctx.full && is_amp(config.compute) && full_bytes == 2) || engine_16bit;
  // Gathered (unsharded) parameters arrive in the compute dtype (FSDP MixedPrecision
  // param_dtype, DeepSpeed's 16-bit parameters).
  gathered_bytes = ctx.full ? (is_amp(config.compute) ? ctx.c : full_bytes) : base_bytes;
  // FSDP's MixedPrecision gathers every parameter, the embeddings' included, in param_dtype, "the
  // dtype for forward and backward computation" (torch.distributed.fsdp.MixedPrecision docs): the
  // residual stream of an fp32 model runs in the compute dtype.
  if (method.gathers_in_compute_dtype) ctx.r = gathered_bytes;
  // Autocast copies fp32 weights to 16 bits; gathered (FSDP MixedPrecision) and 16-bit models
  // are already in the compute dtype.
  ctx.autocast_copies = ctx.amp && ctx.full && full_bytes == 4 && !params_sharded;
  // DeepSpeed ZeRO-3 gathers module by module (step_load.cpp size_deepspeed_gathers).
  deepspeed3 = method.gathers_modules;
}

// A vision tower that text-only batches never run is stepped only where setup_sharding says.
bool step_replay::stepped(const tensor_spec& t) const {
  return t.role != tensor_role::vision || idle_tower_steps;
}

std::uint64_t step_replay::share(std::uint64_t bytes, bool sharded) const {
  return sharded ? (bytes + n - 1) / n : bytes;
}

// Optimizer states: the stated dtype, else fp32 beside master weights, else the parameters'.
std::uint64_t step_replay::state_bytes(std::uint64_t param_bytes) const {
  if (config.optimizer_state_bytes) return config.optimizer_state_bytes;
  return master ? 4 : param_bytes;
}

void step_replay::setup_framework() {
  // torchtitan's per-op selective checkpointing checkpoints every block (block_memory::op_cache).
  checkpointed = config.grad_ckpt || (fw.per_op_selective_recompute && config.selective_recompute);
  // torchtune's single-device full fine-tuning recipes step each parameter inside backward
  // (optimizer_in_bwd: its gradient is freed right after) with a paged bitsandbytes optimizer,
  // whose states live in CUDA unified memory outside PyTorch's allocator
  // (recipes/full_finetune_single_device.py, configs *_full_single_device.yaml).
  in_backward =
      fw.steps_in_backward && ctx.full && dp == data_parallel::none && config.optimizer_step;
  // DeepSpeed ZeRO steps with its FusedAdam, Colossal-AI's LowLevelZero and Gemini with
  // HybridAdam: multi-tensor kernels that update in place (deepspeed/ops/adam/fused_adam.py,
  // colossalai/nn/optimizer/hybrid_adam.py).
  in_place_adam = zero_engine(dp);
  steps = config.optimizer_step ? 2 : 1;  // step 2 runs with the optimizer states
  // Gradient accumulation: micro-batches before the last of a step leave their gradients
  // alive through the next forward; replaying two per step shows every such moment.
  micro_steps = config.grad_accumulation > 1 && !in_backward ? 2 : 1;
  // FSDP skips its reduce-scatter while accumulating (no_sync, which litgpt's
  // fabric.no_backward_sync and accelerate's accumulate() use), so each unit's unsharded
  // gradient is kept until the last micro-batch (torch FullyShardedDataParallel.no_sync docs).
  // torchtune's recipes call backward() on every micro-batch without it, reduce-scattering
  // each time into the shard.
  no_sync = method.fsdp && fw.fsdp_no_sync;
  unsynced.resize(spec.layers.size() + 1);
  // torch < 2.0's zero_grad zeroes the gradients in place (set_to_none=False): those the loop's
  // optimizer owns stay allocated into the next step, whose backward accumulates into them.
  // DeepSpeed's and Colossal-AI's engines set theirs to None whatever the release
  // (deepspeed/runtime/zero/stage_1_and_2.py zero_grad(set_to_none=True)).
  grads_outlive_step = config.software.zero_grad_keeps_gradients() && !zero_engine(dp) &&
                       !grads_to_host && !in_backward;
  // litgpt's fit loop keeps the last iteration's logits and loss (and so its graph) until the
  // next forward returns (finetune/lora.py: `logits = model(...)`), as a transformers loop that
  // keeps its `outputs` does (training_config::keep_outputs); bitsandbytes' MatMul4Bit holds its
  // input in ctx.tensors, outside the saved tensors autograd frees in backward (bitsandbytes <
  // 0.45 autograd/_functions.py; later versions keep (None, B)), so the inputs of every 4-bit
  // linear stay alive from their backward until the next forward has run.
  keep_outputs = config.keep_outputs && fw.keep_outputs_option;
  keeps_logits = fw.keeps_last_logits || keep_outputs;
  inputs_outlive_backward = ctx.quantized && keeps_logits;
  // unsloth's gradient checkpointing copies each block's input to pinned host memory, all but
  // the last block's and those of at most 2^20 elements (unsloth_zoo/gradient_checkpointing.py
  // UnslothCheckpointFunction, MINIMUM_SIZE), and copies them back for the recomputation into
  // two GPU buffers it sizes in the first forward and keeps (GPU_BUFFERS, GPU_BUFFERS_B).
  inputs_to_host = unsloth_host_checkpoint_bytes(spec, config) > 0;
  // FSDP1 with use_orig_params=True lets frozen and trainable tensors share a flat parameter,
  // whose gradient then covers the frozen ones too ("equivalent to not freezing those
  // parameters", torch.distributed.fsdp FullyShardedDataParallel docs). litgpt's LoRA wraps
  // whole blocks (Lightning FSDPStrategy: auto_wrap_policy={Block}, use_orig_params=True);
  // PEFT's and torchtune's FSDP wrapping put the adapters in units of their own.
  frozen_in_flat_params = !ctx.full && fw.frozen_in_flat_params && method.fsdp;
}

void step_replay::describe_blocks() {
  // An encoder-decoder's decoder blocks run over the labels' tokens and read the encoder's.
  step_context decoder_ctx = ctx;
  first_decoder = spec.layers.size();
  if (spec.encoder_decoder) {
    decoder_ctx.seq = decoder_len(config);
    decoder_ctx.tokens = config.micro_batch * decoder_ctx.seq;
    decoder_ctx.h_tokens = decoder_ctx.tokens;
    decoder_ctx.memory_seq = ctx.seq;
    decoder_ctx.memory_tokens = ctx.tokens;
    for (std::size_t l = spec.layers.size(); l-- > 0;) {
      if (spec.layers[l].stack == stack_kind::decoder) first_decoder = l;
    }
  }
  decoder_seq = decoder_ctx.seq;
  blocks.reserve(spec.layers.size());
  for (std::size_t l = 0; l < spec.layers.size(); ++l) {
    const step_context& at = l >= first_decoder ? decoder_ctx : ctx;
    const int here = static_cast<int>(l);
    // A block like the one before, over the same tokens, is described as it was.
    if (l > 0 && l != first_decoder && same_block_description(at, here - 1, here)) {
      blocks.push_back(blocks.back());
      continue;
    }
    blocks.push_back(block_memory_of(at, here));
    blocks.back().residual = at.r * at.h_tokens * spec.hidden_size;
  }
  for (std::size_t l = stage.first; l < stage.last; ++l) {
    for (auto bytes : saved_bytes(blocks[l])) out.saved_activation_bytes += bytes;
  }
  stage_masked = std::any_of(blocks.begin() + static_cast<std::ptrdiff_t>(stage.first),
                             blocks.begin() + static_cast<std::ptrdiff_t>(stage.last),
                             [](const block_memory& b) { return b.masked_attention; });
  // The encoder's output every cross-attention reads (step_forward.cpp end_encoder).
  memory_kept = checkpointed || std::any_of(blocks.begin(), blocks.end(),
                                            [](const block_memory& b) { return b.keeps_memory; });
  memory_bytes = norm_output_bytes(ctx, ctx.r) * ctx.tokens * spec.hidden_size;
  // (the LM head's: the decoder's)
  t_tokens = decoder_ctx.tokens;
  th = decoder_ctx.h_tokens;
  h = spec.hidden_size;
  v = ceil_div(spec.vocab_size, tp);  // vocabulary-parallel LM head
  output = output_of(spec, config, v, t_tokens);
  e = spec.embedding_dim;
  tv = output.rows * output.cols;
  // A plain cross-entropy (training_config::loss) keeps the log-softmax in the logits' dtype
  // outside autocast; every other loss takes it in fp32.
  // T5ForConditionalGeneration and the Gemma 3 and Llama 4 wrappers take their own
  // (model_spec::loss); T5's labels are already aligned with its logits (the decoder's inputs
  // are the labels shifted right); Gemma 3's upcasts the logits first.
  // transformers before 4.46 took a causal LM's loss in its forward as a plain cross-entropy,
  // of fp32 logits in Llama's code from 4.31 (software_stack::loss_in_model_forward,
  // transformers_forward_upcasts_logits); 4.46 to 4.48's ForCausalLMLoss upcasts, then copies
  // the logits shifted (software_stack::loss_copies_shifted_logits).
  const software_stack& software = config.software;
  const bool transformers_causal_lm = fw.model_losses && fw.loss == loss_path::upcast_logits &&
                                      spec.loss == model_loss::causal_lm && spec.causal &&
                                      !spec.encoder_decoder &&
                                      config.loss != loss_kind::plain_cross_entropy;
  forward_upcast = transformers_causal_lm && software.transformers &&
                   transformers_forward_upcasts_logits(spec.model_type, *software.transformers);
  loss_by_release = transformers_causal_lm && software.loss_copies_shifted_logits();
  plain_loss = fw.model_losses && (config.loss == loss_kind::plain_cross_entropy ||
                                   spec.loss != model_loss::causal_lm ||
                                   (transformers_causal_lm && software.loss_in_model_forward()));
  shifted = (plain_loss && spec.causal && !spec.encoder_decoder) || loss_by_release;
  logit_bytes =
      spec.logits_fp32 || forward_upcast || (fw.model_losses && spec.loss == model_loss::plain_fp32)
          ? 4
          : ctx.c;
  loss_bytes = plain_loss && !ctx.amp ? logit_bytes : 4;
  // A plain cross-entropy copies the logits as they are; ForCausalLMLoss its fp32 upcast.
  shift_bytes = plain_loss ? logit_bytes : 4;
}

// What a block keeps for its backward: its input under checkpointing, else its saved tensors
// (and autocast's weight copies).
std::vector<std::uint64_t> step_replay::saved_bytes(const block_memory& b) const {
  if (!b.graph) return std::vector<std::uint64_t>{};
  if (checkpointed) {
    std::vector<std::uint64_t> out_bytes{b.residual};
    out_bytes.insert(out_bytes.end(), b.op_cache.begin(), b.op_cache.end());
    return out_bytes;
  }
  std::vector<std::uint64_t> out_bytes = b.weight_copies;
  out_bytes.insert(out_bytes.end(), b.saved.begin(), b.saved.end());
  return out_bytes;
}

// What the stated library releases change, and what the answer should say it assumed.
void step_replay::release_notes(const std::vector<std::string>& unmatched_targets) {
  const software_stack& software = config.software;
  if (adapters_in_base_dtype) {
    out.notes.push_back("peft " + release_name(*software.peft) +
                        ": the adapters take the base weights' 16-bit dtype, as do their "
                        "gradients and optimizer states (PEFT 0.12 upcasts them to fp32)");
  }
  if (bitsandbytes_4bit) {
    const std::string keeps = ctx.base_keeps_input
                                  ? "the 4-bit linears keep their inputs in ctx.tensors"
                                  : "the 4-bit linears keep no input (0.45 and later)";
    out.notes.push_back(software.bitsandbytes
                            ? "bitsandbytes " + release_name(*software.bitsandbytes) + ": " +
                                  keeps + (ctx.base_keeps_input ? " (before 0.45)" : "")
                            : keeps +
                                  ", as bitsandbytes before 0.45 does (assumed; "
                                  "workload.software.bitsandbytes 0.45 or later keeps none)");
  }
  if (loss_by_release && last_stage) {
    const std::string release = "transformers " + release_name(*software.transformers) + ": ";
    out.notes.push_back(
        software.loss_in_model_forward()
            ? release + "the model's forward takes the loss, a cross-entropy of its logits" +
                  (forward_upcast ? " upcast to fp32 (Llama's code from 4.31)" : "") +
                  " copied shifted by one position (4.46 moved it into ForCausalLMLoss)"
            : release +
                  "ForCausalLMLoss copies the fp32 logits shifted by one position (4.49 pads "
                  "the labels instead)");
  }
  for (const auto& target : unmatched_targets)
    out.notes.push_back(std::string(config.finetune == finetune_kind::ia3 ? "IA3" : "LoRA") +
                        " target '" + target +
                        "' names no linear module of this model; PEFT skips it");
  if (kernel_run(spec, config.attention, fw.transformers_modelling) != config.attention)
    out.notes.push_back(kernel_run_note(spec));
  std::vector<std::string> torch1;  // what torch 1.x's defaults change here
  if (grads_outlive_step)
    torch1.push_back("zero_grad keeps the gradients, zeroed, into the next step");
  if (software.adamw_loops_by_default() && config.optimizer == optimizer_kind::adamw &&
      !config.adamw_impl && !in_place_adam)
    torch1.push_back("AdamW steps one parameter at a time");
  if (!torch1.empty()) {
    out.notes.push_back("torch " + release_name(*software.torch) + ": " + torch1.front() +
                        (torch1.size() > 1 ? "; " + torch1.back() : "") +
                        " (PyTorch 2.0 changed the defaults)");
  }
}

}  // namespace gpumem
