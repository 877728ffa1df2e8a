#include "gpumem/plan/step_time.hpp"

#include <algorithm>

#include "gpumem/model/attention_kernel.hpp"

namespace gpumem {

namespace {

// Ring collectives (NCCL): an all-reduce of M bytes sends 2 (k-1)/k M per rank, an all-gather
// or reduce-scatter of M bytes in total sends (k-1)/k M per rank.
double all_reduce_bytes(double bytes, double ranks) { return 2.0 * (ranks - 1.0) / ranks * bytes; }
double gather_bytes(double bytes, double ranks) { return (ranks - 1.0) / ranks * bytes; }

// Forward FLOPs per token: 2 per matmul parameter (multiply and add), and attention's
// scores and weighted values, 2 s per head dimension each, over the tokens each layer attends to
// (Narayanan et al. 2021, "Efficient large-scale language model training on GPU clusters",
// Appendix: the same accounting, without the causal half).
double forward_flops_per_token(const model_spec& spec, const param_count& counts,
                               std::uint64_t seq_len, bool causal_kernel, std::uint64_t target_len,
                               bool masked_windows = false) {
  if (spec.encoder_decoder && seq_len > 0) {
    // The encoder's blocks run its s tokens, the decoder's blocks and LM head the t labels'
    // (T5's attention computes every score: self-attention over its own stack's tokens, the
    // decoder's cross-attention over the s encoder positions).
    const double s = static_cast<double>(seq_len);
    const double t = static_cast<double>(target_len > 0 ? target_len : seq_len);
    const double head_width =
        static_cast<double>(spec.num_heads * (spec.head_dim + spec.v_head_dim));
    double flops = 2.0 * static_cast<double>(spec.vocab_size * spec.embedding_dim) * t;
    for (const auto& tensor : spec.tensors) {
      if (tensor.layer < 0 || tensor.is_bias || tensor.module != module_kind::linear) continue;
      const bool encoder =
          spec.layers[static_cast<std::size_t>(tensor.layer)].stack == stack_kind::encoder;
      flops += 2.0 * static_cast<double>(tensor.numel()) * (encoder ? s : t);
    }
    for (const auto& layer : spec.layers) {
      flops += layer.stack == stack_kind::encoder ? 2.0 * s * head_width * s
                                                  : 2.0 * t * head_width * (t + s);
    }
    return flops / s;
  }
  double matmul =
      static_cast<double>(counts.active) -
      static_cast<double>(counts.groups.token_embedding + counts.groups.position_embedding);
  if (spec.tied_embeddings) matmul += static_cast<double>(spec.vocab_size * spec.embedding_dim);
  // Llama 4's experts multiply every token, scaled to 0 off its top-k (Llama4TextMoe), so all
  // their parameters count.
  if (spec.moe.dense_dispatch && spec.moe.num_experts > 0) {
    matmul += static_cast<double>(counts.groups.routed_experts) *
              static_cast<double>(spec.moe.num_experts - spec.moe.experts_per_token) /
              static_cast<double>(spec.moe.num_experts);
  }
  // A block that runs another's parameters again (ALBERT) multiplies by them again.
  for (const auto& layer : spec.layers) {
    if (layer.shares_params_of < 0) continue;
    for (const auto& t : spec.tensors) {
      if (t.layer == layer.shares_params_of && !t.is_bias && t.module == module_kind::linear)
        matmul += static_cast<double>(t.numel());
    }
  }
  // A windowed layer that transformers hands SDPA with a mask (sdpa_window_mask) runs the
  // memory-efficient kernel over every score: neither the window nor the causal half is skipped.
  double attention = 0;
  for (const auto& layer : spec.layers) {
    const bool masked = masked_windows && sdpa_window_mask(layer, seq_len);
    const std::uint64_t seen = layer.sliding_window_tokens > 0 && !masked
                                   ? std::min(seq_len, layer.sliding_window_tokens)
                                   : seq_len;
    const double scores = 2.0 * static_cast<double>(seen) *
                          static_cast<double>(spec.num_heads * (spec.head_dim + spec.v_head_dim));
    attention += causal_kernel && spec.causal && !masked ? scores / 2.0 : scores;
  }
  return 2.0 * matmul + attention;
}

// Bytes each GPU sends per step for tensor parallelism of degree t.
double tensor_parallel_bytes(const model_spec& spec, double tokens, double t,
                             const step_time_options& options) {
  const double forwards = 1.0 + options.recompute;
  if (!options.all_reduce_every_linear) {
    // Megatron-LM: one all-reduce after attention and one after the MLP in forward, the same in
    // backward (Shoeybi et al. 2019, Fig. 4).
    const double block = all_reduce_bytes(tokens * static_cast<double>(spec.hidden_size) * 2.0, t);
    return static_cast<double>(spec.num_layers) * block * 2.0 * (forwards + 1.0);
  }
  // Colossal-AI 1D row-parallel Linear (LLMem tp_real.py): forward all-reduces each output,
  // backward all-gathers each split input gradient.
  double bytes = 0;
  for (const auto& t_spec : spec.tensors) {
    if (t_spec.module != module_kind::linear || t_spec.is_bias || t_spec.layer < 0) continue;
    const double out = static_cast<double>(t_spec.shape[0]);
    const double in = static_cast<double>(t_spec.shape[1]);
    bytes +=
        forwards * all_reduce_bytes(tokens * out * 2.0, t) + gather_bytes(tokens * in * 2.0, t);
  }
  return bytes;
}

// Eager attention (no fused kernel) writes the whole score matrix, heads x s x s per sequence
// and layer (window-capped), several times in a forward — transformers' eager path under
// 16-bit autocast: the scores (2 bytes), scaled and masked (2), softmax's fp32 output (4, an
// autocast fp32 op), cast back (2) and, with attention dropout, its output and mask (2 + 1)
// (models/gpt2/modeling_gpt2.py _attn, models/llama eager_attention_forward) — each read once by
// the next op; a backward moves about twice a forward's bytes. These kernels are bound by the
// memory's bandwidth, not by FLOPs.
double eager_attention_seconds(const model_spec& spec, const step_time_options& options,
                               double sequences, std::uint64_t seq_len, double t,
                               double bandwidth) {
  if (options.causal_kernel || spec.encoder_decoder || bandwidth <= 0) return 0.0;
  double elements = 0;  // score elements per sequence, every layer
  for (const auto& layer : spec.layers) {
    const std::uint64_t seen =
        layer.sliding_window_tokens > 0 ? std::min(seq_len, layer.sliding_window_tokens) : seq_len;
    elements += static_cast<double>(spec.num_heads) * static_cast<double>(seq_len) *
                static_cast<double>(seen);
  }
  const double written = 2.0 + 2.0 + 4.0 + 2.0 + (spec.attention_dropout > 0 ? 3.0 : 0.0);
  const double forward_bytes = 2.0 * written * elements * sequences / t;
  const double bytes = forward_bytes * (1.0 + options.recompute) + 2.0 * forward_bytes;
  return bytes / (bandwidth * achieved_bandwidth_share);
}

// Modules with parameters in a decoder block (q, k, v, o, gate, up, down and two norms), each a
// ZeRO-3 fetch (deepspeed/runtime/zero/partitioned_param_coordinator.py).
constexpr double modules_per_block = 9.0;

}  // namespace

double optimizer_bytes_per_param(double weight_bytes, double state_bytes, double states,
                                 bool multi_pass) {
  if (multi_pass && states == 2.0) return 6.0 * weight_bytes + 14.0 * state_bytes;
  if (multi_pass && states == 1.0) return 3.0 * weight_bytes + 5.0 * state_bytes;
  return 2.0 * weight_bytes + weight_bytes + 2.0 * states * state_bytes;
}

double adafactor_bytes_per_param(double weight_bytes) {
  return 21.0 * 4.0 + (weight_bytes < 4.0 ? 3.0 * (weight_bytes + 4.0) : 0.0);
}

double matmul_flops(const gpu_spec& gpu, bool bf16, bool fp32) {
  if (fp32) return gpu.fp32_flops > 0 ? gpu.fp32_flops : gpu.fp16_dense_flops / 8.0;
  return bf16 && gpu.bf16_dense_flops > 0 ? gpu.bf16_dense_flops : gpu.fp16_dense_flops;
}

double model_forward_flops_per_token(const model_spec& spec, const param_count& counts,
                                     std::uint64_t seq_len, bool causal_kernel) {
  return forward_flops_per_token(spec, counts, seq_len, causal_kernel, 0);
}

double per_op_recompute_share(const model_spec& spec, const param_count& counts,
                              std::uint64_t seq_len, bool causal_kernel) {
  const double h = static_cast<double>(spec.hidden_size);
  const double q = static_cast<double>(spec.num_heads * spec.head_dim);
  const double kv = static_cast<double>(spec.num_kv_heads * spec.head_dim);
  const double i = static_cast<double>(spec.intermediate_size);
  const double recomputed =
      2.0 * static_cast<double>(spec.layers.size()) * (h * kv + q * h + h * i);
  const double forward = forward_flops_per_token(spec, counts, seq_len, causal_kernel, 0);
  return forward > 0 ? std::min(1.0, recomputed / forward) : 0.0;
}

double recomputed_forwards(const model_spec& spec, const param_count& counts, std::uint64_t seq_len,
                           bool causal_kernel, bool full_checkpointing, bool per_op_checkpointing) {
  if (full_checkpointing) return 1.0;
  return per_op_checkpointing ? per_op_recompute_share(spec, counts, seq_len, causal_kernel) : 0.0;
}

step_time estimate_step_time(const model_spec& spec, const param_count& counts,
                             const cluster_spec& cluster, const parallel_config& parallel,
                             std::uint64_t micro_batch, std::uint64_t seq_len,
                             const step_time_options& options) {
  step_time out;
  const auto n = static_cast<double>(cluster.gpus);
  const auto method = parallel.method;
  const double t = (method == parallel_method::tp || method == parallel_method::dp_tp)
                       ? static_cast<double>(parallel.tp)
                       : 1.0;
  double dp = 1.0;  // data-parallel degree
  if (method == parallel_method::cdp || method == parallel_method::adp) dp = n;
  if (method == parallel_method::dp_tp) dp = n / t;

  const double forward = forward_flops_per_token(spec, counts, seq_len, options.causal_kernel,
                                                 options.target_len, options.sdpa_window_masks);
  // Forward, backward (input and weight gradients: 2 forwards' worth), recomputation.
  const double passes = 1.0 + (options.weight_gradients ? 2.0 : 1.0) + options.recompute;
  out.flops_per_token = passes * forward;
  // Context parallelism gives each rank seq_len / cp tokens of every sequence; each still attends
  // over the whole sequence (load-balanced causal chunks: equal work per rank).
  const double cp = parallel.cp > 1 ? static_cast<double>(parallel.cp) : 1.0;
  const double tokens = static_cast<double>(micro_batch * seq_len) / cp;  // per rank
  const double peak = matmul_flops(cluster.gpu, options.bf16, options.fp32);
  out.compute_s = tokens * out.flops_per_token / t / (peak * options.mfu);
  out.attention_memory_s =
      eager_attention_seconds(spec, options, static_cast<double>(micro_batch), seq_len, t,
                              cluster.gpu.memory_bandwidth_bytes_per_s);
  out.compute_s += out.attention_memory_s;
  // The memory-bound kernels around the matmuls (elementwise_traffic.hpp): the blocks' in each
  // forward, the recomputation and a backward that moves about twice a forward's bytes (each
  // kernel's gradient reads its saved input and the output's gradient and writes the input's);
  // the loss once; under autocast each fp32 weight cast to 16 bits in every forward (read 4,
  // write 2: torch autocast's cast cache lives one forward) and its 16-bit gradient cast back.
  if (cluster.gpu.memory_bandwidth_bytes_per_s > 0) {
    const bool learned_positions = counts.groups.position_embedding > 0;
    double bytes = tokens * (block_traffic_per_token(spec, options.dtypes, learned_positions) *
                                 (1.0 + options.recompute + 2.0) +
                             loss_traffic_per_token(spec, options.dtypes));
    if (options.dtypes.casts()) {
      // (Every parameter counted: the token table's lookup runs in fp32, but a tied LM head
      // casts it; the norms' weights are a small share.)
      const double params = static_cast<double>(counts.total);
      bytes += 6.0 * params * (1.0 + options.recompute) +
               (options.weight_gradients ? 6.0 * params : 0.0);
    }
    out.elementwise_s =
        bytes / t / (cluster.gpu.memory_bandwidth_bytes_per_s * achieved_bandwidth_share);
    out.compute_s += out.elementwise_s;
  }
  // QLoRA: before each use a 4-bit weight is read (0.5625 bytes with its fp32 absmax per 64,
  // bitsandbytes quantize_4bit) and written out in 16 bits (dequantize_4bit), at the memory's
  // bandwidth: in the forward, the recomputation and the backward's input gradient.
  if (options.four_bit_params > 0 && cluster.gpu.memory_bandwidth_bytes_per_s > 0) {
    out.dequantize_s = options.four_bit_params / t * (0.5625 + 2.0) * (2.0 + options.recompute) /
                       (cluster.gpu.memory_bandwidth_bytes_per_s * achieved_bandwidth_share);
    out.compute_s += out.dequantize_s;
  }
  // LoRA's kernels beside each adapted matmul move their bytes at the memory's bandwidth: in the
  // forward, the recomputation and a backward of about twice a forward's; DoRA's weight norm in
  // each forward and recomputation (it is detached: the backward does not repeat it).
  if (cluster.gpu.memory_bandwidth_bytes_per_s > 0) {
    const double bytes = options.adapter_bytes_per_token * tokens / t * (3.0 + options.recompute) +
                         options.adapter_fixed_bytes / t * (1.0 + options.recompute);
    out.adapter_s = bytes / (cluster.gpu.memory_bandwidth_bytes_per_s * achieved_bandwidth_share);
    out.compute_s += out.adapter_s;
  }

  // Data-parallel collectives cross nodes when the job spans more than one. NCCL builds a ring
  // (or tree) per network adapter and splits the buffer over them; each ring enters and leaves a
  // node once, so a node's adapters together carry a collective, up to its NVLink's bandwidth
  // (the ring algorithm: nccl-tests doc/PERFORMANCE.md, "bus bandwidth"; one ring per adapter of
  // a rail-optimised node: NCCL's documentation of NCCL_CROSS_NIC). A DGX A100 has 8 adapters of
  // 25 GB/s.
  const std::uint64_t per_node = cluster.gpus_per_node > 0 ? cluster.gpus_per_node : cluster.gpus;
  const bool multi_node = cluster.gpus > per_node;
  const double intra = cluster.gpu.link_bandwidth_bytes_per_s;
  const double dp_bandwidth = multi_node
                                  ? std::min(intra, cluster.inter_node_bandwidth_bytes_per_s *
                                                        static_cast<double>(per_node))
                                  : intra;
  const double params_bytes = 2.0 * static_cast<double>(counts.total) / t;  // 16-bit weights
  const double trainable =
      options.trainable_params > 0 ? options.trainable_params : static_cast<double>(counts.total);
  const double gradient_bytes = options.gradient_bytes * trainable / t;

  double dp_s = 0;
  if (method == parallel_method::cdp) {
    dp_s = all_reduce_bytes(gradient_bytes, dp) / dp_bandwidth;  // gradient all-reduce
  } else if (dp > 1) {
    // ZeRO-3 / Gemini: parameters gathered for forward and again for backward, gradients
    // reduce-scattered: 1.5x DDP's volume when every parameter trains (Rajbhandari et al. 2020,
    // ZeRO, Section 7.2.2).
    dp_s = (2.0 * gather_bytes(params_bytes, dp) + gather_bytes(gradient_bytes, dp)) / dp_bandwidth;
  }
  double tp_s = 0;
  if (t > 1) tp_s = tensor_parallel_bytes(spec, tokens, t, options) / intra;
  // Ring attention (TransformerEngine AttnFuncWithCPAndKVP2P): every layer's forward passes a
  // rank's K/V chunk around cp - 1 times, the backward K/V and dK/dV, each overlapping the
  // attention computed on the chunk before (Liu et al. 2023, Ring Attention); what the
  // attention's share of the compute cannot hide is exposed.
  double ring_s = 0;
  double ring_exposed = 0;
  if (cp > 1) {
    const double forwards = 1.0 + options.recompute;
    const double kv_chunk =
        tokens * 2.0 * static_cast<double>(spec.num_kv_heads * (spec.head_dim + spec.v_head_dim)) /
        t;
    ring_s =
        static_cast<double>(spec.num_layers) * (cp - 1.0) * kv_chunk * (forwards + 2.0) / intra;
    const double attention =
        forward - forward_flops_per_token(spec, counts, 0, options.causal_kernel, 0);
    ring_exposed = std::max(0.0, ring_s - out.compute_s * attention / forward);
  }
  out.communication_s = dp_s + tp_s + ring_s;

  double hidden_dp = 0;
  if (method == parallel_method::cdp) {
    // DDP buckets all-reduce gradients while backward continues (Li et al. 2020, PyTorch DDP).
    hidden_dp = std::min(dp_s, out.compute_s * (passes - 1.0 - options.recompute) / passes);
  } else {
    hidden_dp = std::min(dp_s, out.compute_s);  // prefetched gathers overlap compute
  }
  out.exposed_communication_s = dp_s - hidden_dp + tp_s + ring_exposed;
  // Gradient accumulation: every micro-batch's compute and its collectives but DDP's
  // all-reduce, which runs once (no_sync until the last micro-batch).
  const double accumulation =
      static_cast<double>(std::max<std::uint64_t>(options.grad_accumulation, 1));
  if (accumulation > 1) {
    const double once = method == parallel_method::cdp ? dp_s - hidden_dp : 0.0;
    out.exposed_communication_s = once + (out.exposed_communication_s - once) * accumulation;
    out.compute_s *= accumulation;
    out.attention_memory_s *= accumulation;
    out.dequantize_s *= accumulation;
    out.adapter_s *= accumulation;
    out.elementwise_s *= accumulation;
    out.communication_s = (method == parallel_method::cdp ? dp_s : dp_s * accumulation) +
                          (tp_s + ring_s) * accumulation;
  }
  // ZeRO-3 / FSDP gather every block's parameters in each pass (forward, recomputation,
  // backward), one collective per module or per block: at small batches their latency, not
  // their bytes, sets the time, and a gather waits for the one before it.
  if (method == parallel_method::adp && dp > 1) {
    const double per_pass = options.gathers_per_module ? modules_per_block : 1.0;
    out.exposed_communication_s += static_cast<double>(spec.num_layers) * per_pass *
                                   (2.0 + options.recompute) * collective_latency_s * accumulation;
  }
  // The optimizer step over this GPU's share of the trained parameters.
  const double stepped = options.trainable_params > 0 ? options.trainable_params
                         : options.weight_gradients   ? static_cast<double>(counts.total)
                                                      : 0.0;
  if (stepped > 0 && cluster.gpu.memory_bandwidth_bytes_per_s > 0) {
    const double share = (options.optimizer_sharded ? dp : 1.0) * t;
    const double bytes = options.engine_optimizer ? options.engine_optimizer_bytes_per_param
                                                  : options.optimizer_bytes_per_param;
    out.optimizer_s = stepped / share * bytes /
                      (cluster.gpu.memory_bandwidth_bytes_per_s * achieved_bandwidth_share);
  }
  // The host launches every kernel: a step cannot be shorter than its launches.
  const double launches =
      (static_cast<double>(spec.num_layers) * options.kernels_per_block + options.adapter_kernels) *
      (1.0 + 2.0 + options.recompute) * accumulation;
  out.dispatch_s = std::max(0.0, launches * training_launch_s - out.compute_s);
  out.step_s = out.compute_s + out.dispatch_s + out.exposed_communication_s + out.optimizer_s;
  out.tokens_per_s = out.step_s > 0 ? tokens * accumulation * dp / out.step_s : 0;
  out.tokens_per_s_per_gpu = out.tokens_per_s / n;
  return out;
}

void add_offload_time(step_time& speed, const host_footprint& host, const cluster_spec& cluster) {
  const double before = speed.step_s;
  if (host.cpu_optimizer_params > 0) {
    speed.step_s -= speed.optimizer_s;
    speed.optimizer_s = 0;
  }
  speed.offload_s = offload_seconds(host, speed.step_s, cluster.gpu.host_link_bandwidth_bytes_per_s,
                                    cluster.host);
  speed.step_s += speed.offload_s;
  if (speed.step_s <= 0) return;
  speed.tokens_per_s *= before / speed.step_s;
  speed.tokens_per_s_per_gpu *= before / speed.step_s;
}

}  // namespace gpumem
