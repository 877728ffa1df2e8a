#pragma once
// The detailed estimator for inference: loading the weights in their storage format, the KV
// cache (preallocated, grown on demand, or paged as vLLM reserves it), the prefill of the prompt
// and the decode steps, replayed through the caching allocator for PyTorch frameworks, or summed
// as llama.cpp's fixed buffers. One rank of a tensor- or pipeline-parallel group at a time. See
// docs/methodology.md ("Inference") for every term and its source.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gpumem/model/attention_kernel.hpp"
#include "gpumem/model/model_spec.hpp"
#include "gpumem/model/weight_format.hpp"
#include "gpumem/parallel/model_split.hpp"
#include "gpumem/result.hpp"
#include "gpumem/runtime/hardware.hpp"
#include "gpumem/runtime/memory_timeline.hpp"
#include "gpumem/runtime/software_stack.hpp"

namespace gpumem {

// How the KV cache is held: preallocated to a fixed length (litgpt, transformers' static
// cache, llama.cpp's n_ctx), grown by concatenation as tokens arrive (transformers'
// DynamicCache), or in fixed-size blocks carved from a pre-reserved share of the GPU (vLLM).
enum class kv_cache_kind { static_cache, dynamic, paged };

// Whose code serves: transformers generate(), litgpt generate, vLLM, llama.cpp, AutoAWQ's fused
// modules under transformers' generate() (from_quantized with fuse_layers, its default).
enum class serving_framework { transformers, litgpt, vllm, llama_cpp, autoawq };

// Their names in requests and answers: static, dynamic, paged; transformers, litgpt, vllm,
// llama_cpp, autoawq.
std::optional<kv_cache_kind> kv_cache_kind_named(const std::string& name);
// Whether transformers `release` ran eager attention unless told otherwise: before 4.36, whose
// pull request 26572 made SDPA the default (generate_release.cpp).
bool transformers_eager_by_default(const library_release& release);
const char* kv_cache_kind_name(kv_cache_kind kind);
std::optional<serving_framework> serving_framework_named(const std::string& name);
const char* serving_framework_name(serving_framework framework);

struct inference_config {
  weight_storage weights;
  // A quantised checkpoint's modules left in 16 bits (its quantization_config's
  // modules_to_not_convert or ignore: parts of a tensor's name).
  std::vector<std::string> unquantized_modules;
  std::uint64_t activation_bytes = 2;  // compute dtype: 2 (fp16/bf16) or 4 (fp32)
  bool activation_bf16 = true;         // bf16 rather than fp16 when activation_bytes is 2
  std::uint64_t kv_bytes = 2;          // KV cache element: 2 (fp16/bf16) or 1 (fp8/int8)
  std::uint64_t batch = 1;             // sequences decoded together
  std::uint64_t prompt_tokens = 512;
  std::uint64_t new_tokens = 1;  // 1: prefill and the first token only
  kv_cache_kind kv = kv_cache_kind::dynamic;
  std::uint64_t kv_cache_tokens =
      0;  // static: tokens preallocated per sequence (0: what the framework allocates: prompt + new
          // - 1 under transformers, prompt + new else)
  // paged (vLLM): tokens per block, the share of the GPU vLLM reserves, and the tokens of its
  // profiling forward pass (max_num_batched_tokens). Defaults: block_size 16
  // (vllm/platforms/cuda.py), gpu_memory_utilization 0.9, max_num_batched_tokens 8192 and
  // max_num_seqs 256 (vllm/engine/arg_utils.py, the LLM class on GPUs under 70 GiB).
  std::uint64_t block_size = 16;
  double gpu_memory_utilization = 0.9;
  std::uint64_t profile_tokens = 8192;
  std::uint64_t profile_sequences = 256;  // max_num_seqs: logits of the sampler's profile run
  attention_kernel attention = attention_kernel::sdpa;
  serving_framework framework = serving_framework::transformers;
  // transformers' release (framework transformers): what generate() computes and keeps changed
  // with it (generate_release); unset: today's.
  std::optional<library_release> transformers;
  // AutoAWQ's release (framework autoawq): its fused modules changed with it (autoawq_fused.hpp);
  // unset: its last, 0.2.9. Its cache holds kv_cache_tokens (max_seq_len; 0: the release's
  // default).
  std::optional<library_release> autoawq;
  std::uint64_t tp_degree = 1;
  std::uint64_t pp_degree = 1;  // layers split over pp_degree GPUs; this replay is pp_stage
  std::uint64_t pp_stage = 0;
  // Samples of the run's memory over time to report (0: none; options.timeline). vLLM and
  // llama.cpp reserve fixed buffers, and have none.
  std::size_t timeline_samples = 0;
};

struct inference_estimate {
  timeline_peak peak;  // allocated peak, its phase and what was alive
  std::uint64_t peak_reserved = 0;
  std::uint64_t weight_bytes = 0;        // this rank's stored weights
  std::uint64_t kv_bytes_per_token = 0;  // this rank's KV cache per token of one sequence
  std::uint64_t kv_cache_bytes = 0;      // this rank's KV cache at the peak
  // paged: the KV cache's capacity in tokens (whole blocks) and how many sequences of the
  // request's length it holds at once.
  std::uint64_t kv_capacity_tokens = 0;
  std::uint64_t concurrent_sequences = 0;
  bool fits_request = true;  // paged: the capacity holds the request's sequences
  std::vector<std::string> notes;
  timeline_series timeline;  // when config.timeline_samples > 0 (not vLLM, llama.cpp)
};

// Fails with mode.unsupported_model for encoders and encoder-decoders, with
// parallel.invalid_degree when tp_degree does not divide the heads, KV heads and MLP width or
// pp_degree exceeds the layers, and with request.invalid_value for a GGUF format outside
// llama.cpp or llama.cpp with another format.
result<inference_estimate> estimate_inference(const model_spec& spec,
                                              const inference_config& config, const gpu_spec& gpu);

// Bytes of the KV cache of one sequence of `tokens` tokens on this rank (its stage's layers, its
// share of the KV heads): sliding-window layers hold at most their window. MLA caches the
// compressed latent and the rope key under vLLM, the decompressed keys and values elsewhere.
std::uint64_t kv_cache_bytes(const model_spec& spec, const inference_config& config,
                             std::uint64_t tokens);

// What nvidia-smi shows for the rank at the peak: the reserved pool (llama.cpp's buffers, vLLM's
// reservation), the CUDA context and the CUDA libraries' kernels.
std::uint64_t inference_device_used(const inference_estimate& estimate,
                                    std::uint64_t cuda_context_bytes);

}  // namespace gpumem
