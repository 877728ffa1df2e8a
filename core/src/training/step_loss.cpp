// The loss phase on the last pipeline stage: the final norm, the LM head (16-bit copy of its
// weight under autocast) and the loss, as each framework computes them — transformers upcasts
// the logits to fp32 and cross-entropy keeps log-softmax's fp32 output; litgpt and torchtune
// chunk; unsloth fuses the head into its loss.
#include <algorithm>
#include <cmath>

#include "training/step_replay.hpp"

namespace gpumem {

namespace {
// torchtune's CEWithChunkedOutputLoss (num_output_chunks = 8; recipes call
// model.set_num_output_chunks with it): the output projection and cross-entropy in 8 chunks.
constexpr std::uint64_t torchtune_output_chunks = 8;
// litgpt's LM head chunk and chunked_cross_entropy's chunk (finetune/*.py lm_head_chunk_size=128,
// utils.py chunked_cross_entropy chunk_size=128), in tokens of each sequence.
constexpr std::uint64_t litgpt_chunk_tokens = 128;
}  // namespace

// unsloth's fused loss splits the tokens into chunks whose logits, at 16 bytes apiece, fit
// `target_bytes` (min(half the free device memory, 4 GiB)) less the hidden states' gradient
// `fixed_bytes`, in multiples of 4 (unsloth_zoo/fused_losses/cross_entropy_loss.py
// get_chunk_size, _CE_BYTES_PER_LOGIT, _CE_TARGET_GB_CAP).
std::uint64_t unsloth_loss_chunks(std::uint64_t tokens, std::uint64_t vocab, double target_bytes,
                                  double fixed_bytes) {
  if (fixed_bytes > 0 && fixed_bytes < target_bytes) target_bytes -= fixed_bytes;
  const double exact =
      static_cast<double>(tokens) * static_cast<double>(vocab) * 16.0 / target_bytes;
  if (exact <= 1.0 + 1e-9) return 1;
  const auto chunks = static_cast<std::uint64_t>(std::ceil(exact / 4 - 1e-9)) * 4;
  return std::min(chunks, tokens);
}

// What the output layer projects and the loss reads: every position onto the (rank's share of
// the) vocabulary for language-model heads; for BERT's and ALBERT's classification heads the pooled
// first token (sequence classification) or every token (token classification, question answering:
// start and end) onto the classifier's outputs (transformers BertFor* forward).
output_shape output_of(const model_spec& spec, const training_config& config, std::uint64_t v,
                       std::uint64_t tokens) {
  if (spec.causal || spec.architecture.find("MaskedLM") != std::string::npos ||
      spec.architecture.find("PreTraining") != std::string::npos) {
    return {tokens, v};
  }
  std::uint64_t labels = 2;
  for (const auto& t : spec.tensors) {
    if (t.role == tensor_role::task_head && !t.is_bias && t.shape.size() == 2 &&
        t.name.find("pooler") == std::string::npos)
      labels = t.shape[0];
  }
  // The bare encoders (BertModel, AlbertModel) are read by their pooled output too.
  const std::string& head = spec.architecture;
  const bool bare = head.size() >= 5 && head.compare(head.size() - 5, 5, "Model") == 0;
  const bool pooled = head.find("SequenceClassification") != std::string::npos || bare;
  return {pooled ? config.micro_batch : tokens, labels};
}

void step_replay::loss() {
  if (last_stage) {
    tl.phase("loss");
    if (deepspeed3) head.push_back(tl.allocate(output_root, cat::gathered_params));
    // The final norm keeps its input in fp32 (transformers), or its 16-bit input and an fp32
    // inverse RMS a row (unsloth's Fast_RMS_Layernorm).
    head.push_back(
        tl.allocate(fw.own_kernels ? ctx.r * th * h + 4 * th : 4 * th * h, cat::activations));
    // T5Stack's final dropout after the decoder's final norm: its mask.
    if (spec.encoder_decoder && spec.hidden_dropout > 0)
      head.push_back(tl.allocate(th * h, cat::activations));
    if (ctx.autocast_copies) {
      head.push_back(tl.allocate(v * e * ctx.c, cat::autocast_weight_copies));
      head.push_back(tl.allocate(t_tokens * e * ctx.c, cat::activations));
    } else if (kbit_prepared && ctx.amp && kbit_head_bytes != ctx.c) {
      // A frozen fp32 LM head: autocast's 16-bit copy, kept for the input's gradient.
      head.push_back(tl.allocate(v * e * ctx.c, cat::autocast_weight_copies));
    }
    // A trained copy of the LM head (modules_to_save) keeps its 16-bit input for its weight's
    // gradient.
    if (config.save_lm_head) head.push_back(tl.allocate(t_tokens * e * ctx.c, cat::activations));
    // LLaMA-Adapter v2's LM head keeps linear(x) + adapter_bias for its scale's gradient.
    if (adapter_v2) head.push_back(tl.allocate(ctx.c * tv, cat::logits_and_loss));
    switch (fw.loss) {
      case loss_path::fused_chunks:
        loss_unsloth();
        break;
      case loss_path::chunked_fp32:
        loss_litgpt();
        break;
      case loss_path::chunked_output:
        loss_torchtune();
        break;
      case loss_path::upcast_logits:
        loss_transformers();
        break;
    }
  }
  end_forward();
}

// unsloth's fused loss (UnslothFusedLoss) projects the final norm's output a chunk of tokens at
// a time, upcasts the chunk's logits to fp32 and takes its cross-entropy back at once
// (torch.func.grad_and_value): bf16 logits, fp32 copy, log-softmax's output and its gradient, 14
// bytes a logit. It keeps only the hidden states' gradient.
void step_replay::loss_unsloth() {
  const std::uint64_t hidden = ctx.c * t_tokens * e;
  const int normed = tl.allocate(hidden, cat::activations);
  kept_logits = tl.allocate(hidden, cat::logits_and_loss);
  if (unsloth_chunks == 0) {  // sized once (functools.cache)
    const double cap = 4.0 * static_cast<double>(1ULL << 30);
    double target = cap;
    if (gpu.memory_bytes > 0) {
      const std::uint64_t used = outside + tl.reserved();
      const double free =
          gpu.memory_bytes > used ? static_cast<double>(gpu.memory_bytes - used) : 0.0;
      target = std::max(std::min(cap, free / 2), 1.0);
    }
    unsloth_chunks =
        unsloth_loss_chunks(t_tokens, output.cols, target, static_cast<double>(hidden));
  }
  tl.free(tl.allocate(14 * ceil_div(t_tokens, unsloth_chunks) * output.cols, cat::logits_and_loss));
  tl.free(normed);
}

// litgpt projects in 128-token chunks (GPT.forward lm_head_chunk_size=128); once model() returns
// them all, Fabric casts each to fp32 (_FabricModule.forward convert_output), and the loop's
// `logits` holds them until the next model() returns.
void step_replay::loss_litgpt() {
  tl.free(tl.allocate(head_dequantised, cat::activations));  // for the last chunk
  const int chunks = ctx.c == 4 ? -1 : tl.allocate(ctx.c * tv, cat::logits_and_loss);
  kept_logits = tl.allocate(4 * tv, cat::logits_and_loss);
  tl.free(chunks);
  drop_previous_iteration();  // `logits` is reassigned
  // chunked_cross_entropy takes each chunk's loss apart and keeps its fp32 log-softmax.
  // (A pooled classifier head's output is smaller than one chunk.)
  chunk_elements = std::min(
      tv, config.micro_batch * std::min<std::uint64_t>(ctx.seq, litgpt_chunk_tokens) * output.cols);
  log_softmax = tl.allocate(4 * tv, cat::logits_and_loss);
}

// torchtune: 8 output chunks in the compute dtype, each upcast to fp32 for cross-entropy
// (CEWithChunkedOutputLoss), logits deleted before backward.
void step_replay::loss_torchtune() {
  const int chunks = tl.allocate(ctx.c * tv, cat::logits_and_loss);
  // torch.chunk along the sequence: chunks of ceil(seq / 8) tokens per sequence.
  chunk_elements = config.micro_batch * ceil_div(ctx.seq, torchtune_output_chunks) * output.cols;
  log_softmax = tl.allocate(4 * tv, cat::logits_and_loss);
  const int upcast = ctx.c == 4 ? -1 : tl.allocate(4 * chunk_elements, cat::logits_and_loss);
  tl.free(upcast);
  tl.free(chunks);
}

// transformers: the logits, their fp32 upcast (ForCausalLMLoss), log-softmax's output. A plain
// cross-entropy first copies a causal LM's logits shifted by one position (B (s - 1) rows), and
// casts only under autocast; ForCausalLMLoss before 4.49 copies its upcast shifted.
void step_replay::loss_transformers() {
  // Llama's forward before 4.46 casts the head's 16-bit output to the fp32 logits it returns.
  const int head_output = forward_upcast ? tl.allocate(ctx.c * tv, cat::logits_and_loss) : -1;
  const int logits = tl.allocate(logit_bytes * tv, cat::logits_and_loss);
  tl.free(head_output);
  // model() returns the logits alone: the loop's variable takes them before the loss.
  if (keep_outputs && plain_loss) drop_previous_iteration();
  // ForCausalLMLoss upcasts, then copies; a plain cross-entropy copies, then autocast upcasts.
  const bool upcast = loss_bytes != logit_bytes;
  const int upcast_first = upcast && !plain_loss ? tl.allocate(4 * tv, cat::logits_and_loss) : -1;
  const int shifted_copy =
      shifted
          ? tl.allocate(shift_bytes * (tv - config.micro_batch * output.cols), cat::logits_and_loss)
          : -1;
  const int upcast_then = upcast && plain_loss ? tl.allocate(4 * tv, cat::logits_and_loss) : -1;
  log_softmax = tl.allocate(loss_bytes * tv, cat::logits_and_loss);
  tl.free(upcast_first);
  tl.free(upcast_then);
  tl.free(shifted_copy);
  if (keep_outputs) {
    // The loop's `outputs` is reassigned once model() returns.
    drop_previous_iteration();
    kept_logits = logits;
  } else {
    tl.free(logits);
  }
}

// The model has returned: its output, autocast's cache and (unless a block keeps it) the
// encoder's memory go.
void step_replay::end_forward() {
  tl.free(residual);
  if (checkpointed) {
    for (int id : copies) tl.free(id);  // autocast's cache is cleared when it exits
  }
  if (!memory_kept) {
    tl.free(memory);
    memory = -1;
  }
}

// The loop's variable is reassigned: the last iteration's logits and graph die.
void step_replay::drop_previous_iteration() {
  tl.free(previous_logits);
  previous_logits = -1;
  for (int id : previous_graph) tl.free(id);
  previous_graph.clear();
}

}  // namespace gpumem
