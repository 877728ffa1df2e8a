#pragma once
// LLMem's estimator (Kim et al., IJCAI 2024; github.com/taehokim20/LLMem size_estimator.py),
// reproduced term by term, with m_init computed instead of measured (Colossal-AI Gemini chunks,
// CUDA context, model buffers, allocator rounding). See docs/llmem.md.

#include <cstdint>
#include <string>
#include <vector>

#include "gpumem/model/model_spec.hpp"
#include "gpumem/plan/estimate.hpp"
#include "gpumem/result.hpp"
#include "gpumem/runtime/hardware.hpp"

namespace gpumem {

// What LLMem reads from a model, prepared once per model.
struct llmem_model {
  // size_estimator.py param_bytes: the parameters of modules whose class is exactly `Linear` or
  // contains `Embedding`, in model.modules() order; a tied LM head appears again, last.
  struct selected_tensor {
    std::uint64_t numel = 0;
    std::uint64_t last_dim = 0;
    bool tp_sharded = false;  // a Linear or Embedding weight: split over the TP ranks
    int tensor = -1;          // index into model_spec::tensors; -1 for the tied LM head
  };
  std::vector<selected_tensor> selected;
  // Every parameter once, in model.parameters() order, for Gemini's chunks.
  std::vector<selected_tensor> parameters;
  std::uint64_t blocks = 0;           // modules named *DecoderLayer / *Block
  std::uint64_t hidden = 0;           // block input width
  std::uint64_t embedding_width = 0;  // first Embedding's output (OPT-350m: word_embed_proj_dim)
  std::uint64_t vocab = 0;
  std::uint64_t logits_bytes = 2;      // 4 for CodeGen and GPT-Neo (fp32 logits)
  std::vector<std::uint64_t> buffers;  // model buffers on the GPU, bytes each (causal masks)
  std::vector<std::string> warnings;

  // Gemini's chunks at one tensor-parallel and data-parallel degree, and what the caching
  // allocator reserves for them and the buffers: derived from the model and the two degrees
  // alone, so worked out once per pair (the planner asks for the same pairs again and again).
  struct chunk_memory {
    std::uint64_t tp = 0;
    std::uint64_t dp = 0;
    std::uint64_t chunk_size_elements = 0;
    std::uint64_t chunk_count = 0;
    bool keep_gathered = false;
    std::uint64_t model_buffers = 0;
    std::uint64_t fp16_chunks = 0;
    std::uint64_t fp32_chunks = 0;
    std::uint64_t reserved = 0;  // segments the allocator obtained for chunks and buffers
  };
  chunk_memory chunks_at(std::uint64_t tp, std::uint64_t dp) const;

  // LLMem's parameter terms (each selected tensor rounded to 2 MiB, summed) for one method over
  // `shards` GPUs at tensor-parallel degree `tp`: derived from the model and these alone, so
  // worked out once per combination, as the chunks are.
  struct parameter_terms {
    parallel_method method = parallel_method::single;
    std::uint64_t shards = 1;
    std::uint64_t tp = 1;
    bool exact_dp_tp_fraction = false;
    std::uint64_t gathered_params = 0;
    std::uint64_t optimizer_states = 0;
    std::uint64_t lm_head_weight = 0;
  };
  parameter_terms parameter_terms_at(parallel_method method, std::uint64_t shards, std::uint64_t tp,
                                     bool exact_dp_tp_fraction) const;

 private:
  mutable std::vector<chunk_memory> chunk_memories_;      // one per degree pair asked for
  mutable std::vector<parameter_terms> parameter_terms_;  // one per combination asked for
};

result<llmem_model> prepare_llmem(const model_spec& spec);

// The batch-independent part for one method: the parameter terms and m_init.
struct llmem_fixed {
  parallel_config parallel;
  std::uint64_t gpus = 1;
  std::uint64_t optimizer_states = 0;
  std::uint64_t gathered_params = 0;
  std::uint64_t lm_head_weight = 0;
  std::uint64_t input = 0;
  // m_init and its parts.
  std::uint64_t m_init = 0;
  std::uint64_t cuda_context = 0;
  std::uint64_t model_buffers = 0;       // reserved for the buffers
  std::uint64_t fp16_chunks = 0;         // bytes of the fp16 parameter chunk shards on this rank
  std::uint64_t fp32_chunks = 0;         // bytes of the fp32 master chunk shards on this rank
  std::uint64_t allocator_rounding = 0;  // reserved minus requested, chunks and buffers
  std::uint64_t chunk_size_elements = 0;
  std::uint64_t chunk_count = 0;  // per dtype
  std::uint64_t dp_degree = 1;
  bool keep_gathered = false;
};

// Checks the method against the GPU count and the tensor shapes (TP must divide every split
// dimension) and computes the fixed terms.
result<llmem_fixed> llmem_fixed_terms(const model_spec& spec, const llmem_model& model,
                                      const cluster_spec& cluster, const parallel_config& parallel,
                                      std::uint64_t seq_len);

// The estimate at one micro-batch: components m_init, optimizer_states, gathered_params,
// lm_head_weight, input, activations, logits_and_loss, tp_gather_buffers (in that order) for
// every rank (all ranks are alike).
rank_estimate llmem_estimate(const llmem_model& model, const llmem_fixed& fixed,
                             const cluster_spec& cluster, std::uint64_t micro_batch,
                             std::uint64_t seq_len);

// size_estimator.py bs_search: the largest micro-batch whose estimate does not exceed the usable
// memory (0 when batch 1 does not fit), up to `limit`.
std::uint64_t llmem_max_batch(const llmem_model& model, const llmem_fixed& fixed,
                              const cluster_spec& cluster, std::uint64_t seq_len,
                              std::uint64_t limit);

// LLMem's per-tensor rounding, as Python computes it on floats: a value that is not a multiple
// of 2 MiB goes up to the next multiple.
std::uint64_t llmem_round(double bytes);

}  // namespace gpumem
