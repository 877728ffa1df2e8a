#pragma once
// How long one training step takes, to rank the methods that fit (LLMem's Algorithm 1 chooses
// the fastest) and to say how long a run takes. A roofline-style model, stated in docs/llmem.md
// ("The step-time model"):
// - compute: FLOPs per token (6 per matmul parameter for forward and backward, plus attention's
//   12 L s d; recomputation adds one more forward) at the GPU's dense fp16/bf16 peak times a
//   model-FLOPs utilisation, plus the memory-bound kernels around the matmuls at the memory's
//   bandwidth (elementwise_traffic.hpp);
// - communication: the bytes each GPU sends in the method's collectives (ring algorithms) over
//   the intra-node link, or the inter-node link for collectives that span nodes;
// - overlap: DDP hides gradient all-reduce behind the backward pass, ZeRO-3 / Gemini prefetch
//   hides parameter gathers behind compute; tensor-parallel collectives are on the critical path;
// - the host: a step is never shorter than the host's work to launch its kernels.

#include <cstdint>

#include "gpumem/model/model_spec.hpp"
#include "gpumem/model/param_count.hpp"
#include "gpumem/offload/offload.hpp"
#include "gpumem/plan/elementwise_traffic.hpp"
#include "gpumem/plan/estimate.hpp"
#include "gpumem/runtime/hardware.hpp"

namespace gpumem {

// Default utilisation of the GPU's dense peak by the matmuls and the attention kernel (the
// memory-bound kernels around them are timed by their bytes): the model-FLOPs utilisation typical
// of well-tuned large-model training on A100/H100
// (PaLM: 46.2 % MFU, Chowdhery et al. 2022, Table 3; Megatron-LM: 52 % of peak for GPT-3 175B
// on A100, Narayanan et al. 2021; IBM/PyTorch FSDP Llama-2-7B: 57 %, pytorch.org blog
// "Maximizing training throughput using PyTorch FSDP", 2024).
inline constexpr double default_mfu = 0.45;

// Kernels per block in a forward: a Llama-style block launches about 30 (two RMSNorms of five
// ops, four projections, rotary embedding, the attention kernel, two residual adds, three MLP
// projections and the gated activation: transformers models/llama/modeling_llama.py); a
// backward about twice as many.
inline constexpr double kernels_per_block_forward = 30.0;
// unsloth's fused block kernels launch about 14: one for each RMSNorm (Fast_RMS_Layernorm
// instead of five ops), one rotary embedding of q and k together (Fast_RoPE_Embedding instead of
// about eight ops) and one SwiGLU (unsloth/kernels/rms_layernorm.py, rope_embedding.py,
// swiglu.py).
inline constexpr double fused_kernels_per_block_forward = 14.0;
// The host's cost of one eager kernel launch, which the GPU cannot run ahead of: about 10 us
// (PyTorch dispatch plus cudaLaunchKernel; "Accelerating PyTorch with CUDA Graphs",
// pytorch.org blog, 2021).
inline constexpr double kernel_launch_s = 10e-6;
// A training step's host time per kernel counted above (kernels_per_block_forward, an adapter's
// kernels; a backward counted as two forwards): the Python of each module's forward, autograd's
// recording and its engine, autocast's dispatch and the launch itself. About 40 us, measured: the
// median over the ten runs of validation/measured_h100*.json whose estimated GPU work is under
// 40 % of their step (host-bound: GPT-2 at 2,048 tokens, Llama-3.2-1B and Qwen2.5-0.5B LoRA and
// DoRA at 512-4,096 tokens) of their step time over these kernels, 28-51 us each, 89 for one run
// whose steps varied by half (torch 2.11, Python 3.12, an H100 host; docs/llmem.md). A faster
// or slower host CPU moves it.
inline constexpr double training_launch_s = 40e-6;
// A small NCCL collective's latency within a node: about 25 us for an all-gather of a few bytes
// over 8 NVLink GPUs (nccl-tests all_gather_perf, ring, A100 DGX).
inline constexpr double collective_latency_s = 25e-6;

// The share of the datasheet bandwidth a streaming kernel reaches: about 85 % (BabelStream
// triad on A100 and H100; Deakin et al., "BabelStream", and its published results).
inline constexpr double achieved_bandwidth_share = 0.85;

// The matmul rate of a step's precision: 16-bit on the tensor cores (bf16's figure where the GPU
// has bf16 tensor cores, else fp16's), fp32 on the CUDA cores: PyTorch leaves
// torch.backends.cuda.matmul.allow_tf32 False since 1.12 (torch/backends/cuda/__init__.py and the
// 1.12 release notes), so fp32 matmuls do not run as TF32. A custom GPU that states no fp32
// figure: an eighth of its fp16 tensor figure, the ratio of Volta's and Turing's datasheets
// (V100 15.7 of 125 TFLOPS, T4 8.1 of 65).
double matmul_flops(const gpu_spec& gpu, bool bf16, bool fp32);

// The bytes an optimizer step moves per trained parameter, at the memory's bandwidth. In one pass
// (torch's fused AdamW, DeepSpeed's FusedAdam and Colossal-AI's HybridAdam in place,
// csrc/adam/multi_tensor_adam.cu): the stepped weight (fp32 beside a master copy, else the
// parameters' dtype) read and written, its gradient (the same dtype) read, and each state read
// and written. AdamW in fp32: 7 x 4 = 28; pure bf16 14; bitsandbytes' 8-bit AdamW (1-byte
// states, its own fused kernel) beside fp32 weights 16; SGD 12, with momentum 20; Adafactor's
// factored second moment adds next to nothing (12).
// torch.optim's default foreach AdamW (and its for-loop one, kernel for kernel the same) runs a
// kernel per operation instead (torch/optim/adamw.py _multi_tensor_adamw, torch 2.x): the weight
// decay (weight read and written), lerp of exp_avg (it and the gradient read, it written), mul
// and addcmul of exp_avg_sq (read and written twice, the gradient read), sqrt(exp_avg_sq) into a
// new tensor, its division and its eps (read and written twice), and addcdiv into the weight
// (weight, exp_avg and the quotient read, the weight written): 6 weight-sized and 14 state-sized
// passes, 80 bytes in fp32. SGD with momentum (_multi_tensor_sgd): the buffer's mul and add and
// the weight's add: 3 weight-sized and 5 state-sized passes.
double optimizer_bytes_per_param(double weight_bytes, double state_bytes, double states,
                                 bool multi_pass);
// transformers' Adafactor (optimization.py Adafactor.step, relative_step, no first moment, as the
// HF Trainer's "adafactor" runs it) steps each parameter with separate fp32 kernels: the weight's
// RMS (a read), grad**2 and its eps (two passes each), the row and column means (one read each),
// the outer product of their rsqrt factors (a write), its product with the gradient (three), the
// update's RMS (a read), its division by the clipped RMS and its scaling by the learning rate
// (two each), and the weight's update by its negation (two, then three): 21 fp32 passes, 84
// bytes a parameter; a 16-bit weight and gradient are upcast first and the weight copied back
// (6 bytes each).
double adafactor_bytes_per_param(double weight_bytes);

// Forward FLOPs per token of a decoder run over `seq_len` tokens: 2 per matmul parameter and
// attention's scores and weighted values (halved by a fused causal kernel).
double model_forward_flops_per_token(const model_spec& spec, const param_count& counts,
                                     std::uint64_t seq_len, bool causal_kernel);

struct step_time_options {
  double mfu = default_mfu;
  // Forwards' worth recomputed in backward: 1 under gradient checkpointing (LLMem: always on), 0
  // without, a share of one under a selective policy (per_op_recompute_share).
  double recompute = 1.0;
  // Backward computes weight gradients as well as input gradients (a second forward's worth);
  // frozen weights (LoRA, QLoRA) need only the input gradients.
  bool weight_gradients = true;
  bool bf16 = false;  // bf16 tensor-core peak instead of fp16
  bool fp32 = false;  // fp32 compute: matmuls on the CUDA cores (matmul_flops)
  // Fused causal attention (FlashAttention, SDPA) skips the masked half of the score matrix
  // (Dao et al. 2022, FlashAttention); eager attention computes all of it.
  bool causal_kernel = false;
  // transformers hands SDPA an explicit mask for windowed layers once the sequence reaches the
  // window (sdpa_window_mask): the memory-efficient kernel then computes every score.
  bool sdpa_window_masks = false;
  // Colossal-AI 1D TP as LLMem runs it splits every Linear's input and all-reduces its output;
  // false: Megatron-style, two all-reduces per block in forward and two in backward.
  bool all_reduce_every_linear = true;
  // Encoder-decoders: the decoder's tokens per sequence (0: seq_len). Their FLOPs per token are
  // the sequence's FLOPs over its seq_len encoder tokens, which tokens/s counts.
  std::uint64_t target_len = 0;
  // The optimizer's states are sharded over the data-parallel ranks (ZeRO-1/2/3, FSDP, Gemini),
  // each stepping its share; DDP steps every parameter on every GPU.
  bool optimizer_sharded = false;
  // Parameters gathered per block and pass under ZeRO-3 / FSDP: one collective per module that
  // holds parameters (DeepSpeed ZeRO-3 fetches each submodule's) or one per block (FSDP's
  // per-block units).
  bool gathers_per_module = false;
  // Micro-batches per optimizer step: each runs its forward and backward (and ZeRO-3 / FSDP
  // gather their parameters again), the gradient all-reduce and the optimizer step run once.
  std::uint64_t grad_accumulation = 1;
  double optimizer_bytes_per_param = 28.0;  // AdamW with fp32 weights and states (above)
  // What the request's optimizer moves when a ZeRO or Gemini engine steps it with its in-place
  // kernel (one pass), and whether this candidate's engine does.
  double engine_optimizer_bytes_per_param = 28.0;
  bool engine_optimizer = false;
  // The dtypes the memory-bound kernels move (elementwise_traffic.hpp): 16-bit activations
  // unless fp32 compute; an fp32 residual stream beside fp32 weights under autocast.
  activation_dtypes dtypes;
  // The parameters the step trains (0: every one): adapters' gradients alone are reduced and
  // stepped, while ZeRO-3 / FSDP still gather the frozen base with them.
  double trainable_params = 0;
  // Bytes of a trained parameter's gradient as data parallelism reduces it: the trained
  // weights' dtype — fp32 under torch autocast (DDP all-reduces the fp32 .grad: PyTorch
  // reducer.cpp buckets by the parameters' dtype; PEFT keeps adapters in fp32 under autocast),
  // 16 bits under pure 16-bit training or DeepSpeed's engine, which holds a 16-bit module. ZeRO-3
  // and FSDP gather and reduce in the 16-bit compute dtype (FSDP MixedPrecision's param_dtype).
  double gradient_bytes = 2;
  // LoRA's own kernels beside the matmuls (plan/adapter_cost.hpp), whole model: bytes a token
  // moves in a forward, bytes a forward moves whatever the tokens (DoRA's weight norm), kernels
  // a forward launches.
  double adapter_bytes_per_token = 0;
  double adapter_fixed_bytes = 0;
  double adapter_kernels = 0;
  // Kernels a block launches in a forward (fused_kernels_per_block_forward under unsloth).
  double kernels_per_block = kernels_per_block_forward;
  // A 4-bit base (QLoRA): the weights its block linears hold in 4 bits, dequantised to 16 bits
  // before each use (bitsandbytes MatMul4Bit: forward, recomputation and backward).
  double four_bit_params = 0;
};

struct step_time {
  double flops_per_token = 0;          // forward + backward (+ recompute) per token, whole model
  double compute_s = 0;                // per GPU
  double communication_s = 0;          // all collectives, per GPU
  double exposed_communication_s = 0;  // not hidden behind compute
  double attention_memory_s = 0;       // eager attention's score-sized tensors (part of compute_s)
  double dequantize_s = 0;             // a 4-bit base's dequantisation (part of compute_s)
  double adapter_s = 0;                // LoRA's own memory-bound kernels (part of compute_s)
  double elementwise_s = 0;  // norms, residuals, activations, loss, casts (part of compute_s)
  double optimizer_s = 0;    // the optimizer step, memory-bound, per GPU
  double dispatch_s = 0;     // the host's kernel launches, when they outlast the GPU
  double offload_s = 0;      // added by offloading (offload.hpp), included in step_s
  double step_s = 0;
  double tokens_per_s = 0;  // whole job
  double tokens_per_s_per_gpu = 0;
};

// The share of a forward that torchtitan's per-op selective checkpointing recomputes: the matmuls
// its policy does not keep, k, o and up of every block (block_activations.hpp, block_memory::
// op_cache), out of forward_flops_per_token (the attention kernel's output is kept).
double per_op_recompute_share(const model_spec& spec, const param_count& counts,
                              std::uint64_t seq_len, bool causal_kernel);

// step_time_options::recompute for a run: a forward under full checkpointing, the per-op share
// under torchtitan's per-op policy, else none.
double recomputed_forwards(const model_spec& spec, const param_count& counts, std::uint64_t seq_len,
                           bool causal_kernel, bool full_checkpointing, bool per_op_checkpointing);

step_time estimate_step_time(const model_spec& spec, const param_count& counts,
                             const cluster_spec& cluster, const parallel_config& parallel,
                             std::uint64_t micro_batch, std::uint64_t seq_len,
                             const step_time_options& options);

// A step that offloads (offload.hpp): the seconds its host traffic, NVMe swaps and CPU optimizer
// add beyond the compute they overlap (offload_seconds); where the CPU steps the optimizer, the
// GPU's optimizer step is not run. step_s and both rates follow.
void add_offload_time(step_time& speed, const host_footprint& host, const cluster_spec& cluster);

}  // namespace gpumem
