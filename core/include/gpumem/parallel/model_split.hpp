#pragma once
// How tensor and pipeline parallelism split a model: the features and elements of each tensor a
// tensor-parallel rank holds (Megatron-LM's column- and row-parallel linears), and the blocks
// each pipeline stage runs.

#include <cstddef>
#include <cstdint>
#include <optional>

#include "gpumem/model/model_spec.hpp"
#include "gpumem/result.hpp"

namespace gpumem {

// A linear layer's output and input features (transformers' GPT-2 Conv1D stores them the other
// way round).
std::uint64_t tensor_out(const tensor_spec& t);
std::uint64_t tensor_in(const tensor_spec& t);
// Column-parallel layers split their output features over the tensor-parallel ranks.
bool column_parallel(const tensor_spec& t);
// A block linear's features on this rank.
std::uint64_t local_out(const tensor_spec& t, std::uint64_t tp);
std::uint64_t local_in(const tensor_spec& t, std::uint64_t tp);
// The last dimension of this rank's part of a tensor (Adafactor factors rows and columns).
std::uint64_t local_last_dim(const tensor_spec& t, std::uint64_t tp);

// The elements of `tensor` one of `tp` tensor-parallel ranks holds (Megatron-LM, Shoeybi et al.
// 2019): column-parallel linears (q/k/v, gate/up) and their biases split the output features,
// row-parallel ones (o, down) the input features, the token embedding and LM head the vocabulary
// (rounded up), fused routed experts every expert's width; norms, position embeddings,
// row-parallel biases and MoE routers are replicated.
std::uint64_t tensor_parallel_numel(const tensor_spec& tensor, std::uint64_t tp);

// The input features of `tensor` (a weight matrix) on one of `tp` ranks: split for row-parallel
// block linears, whole otherwise.
std::uint64_t tensor_parallel_in_features(const tensor_spec& tensor, std::uint64_t tp);

// The blocks [first, last) pipeline stage `stage` of `stages` runs: an even split, the first
// (layers mod stages) stages taking one more (Megatron-LM's uniform split when it divides).
struct stage_layers {
  std::size_t first = 0;
  std::size_t last = 0;
};
stage_layers pipeline_stage_layers(std::size_t layers, std::uint64_t stages, std::uint64_t stage);

// parallel.invalid_degree unless `tp` divides the attention heads, the KV heads and the MLP
// width (Megatron-style splits of whole heads and MLP columns).
std::optional<error> check_tensor_parallel(const model_spec& spec, std::uint64_t tp);

}  // namespace gpumem
