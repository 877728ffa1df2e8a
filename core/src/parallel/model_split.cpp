#include "gpumem/parallel/model_split.hpp"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

namespace gpumem {

std::uint64_t tensor_out(const tensor_spec& t) {
  return t.module == module_kind::conv1d ? t.shape[1] : t.shape[0];
}
std::uint64_t tensor_in(const tensor_spec& t) {
  return t.module == module_kind::conv1d ? t.shape[0] : t.shape[1];
}

// Column-parallel layers split their output features over the tensor-parallel ranks.
bool column_parallel(const tensor_spec& t) {
  const linear_role role = linear_role_of(t);
  return role == linear_role::attention_in || role == linear_role::mlp_in ||
         role == linear_role::cross_query || role == linear_role::cross_memory ||
         role == linear_role::latent_q || role == linear_role::latent_kv;
}
// A block linear's features on this rank.
std::uint64_t local_out(const tensor_spec& t, std::uint64_t tp) {
  return column_parallel(t) ? tensor_out(t) / tp : tensor_out(t);
}
std::uint64_t local_in(const tensor_spec& t, std::uint64_t tp) {
  return column_parallel(t) ? tensor_in(t) : tensor_in(t) / tp;
}

// The last dimension of this rank's part of a tensor (Adafactor factors rows and columns).
std::uint64_t local_last_dim(const tensor_spec& t, std::uint64_t tp) {
  const std::uint64_t local = tensor_parallel_numel(t, tp);
  if (t.shape.size() < 2) return local;
  if (local == t.numel()) return t.shape.back();
  const bool block_linear = t.layer >= 0;
  const bool last_split = block_linear && (t.module == module_kind::conv1d) == column_parallel(t);
  return last_split ? t.shape.back() / tp : t.shape.back();
}

std::uint64_t tensor_parallel_numel(const tensor_spec& tensor, std::uint64_t tp) {
  if (tp <= 1) return tensor.numel();
  // Routed experts split every expert's width (Megatron-LM's expert tensor parallelism); the
  // router stays whole on every rank.
  if (tensor.role == tensor_role::routed_experts) return tensor.numel() / tp;
  if (tensor.role == tensor_role::router) return tensor.numel();
  const bool block_linear = tensor.layer >= 0 && (tensor.module == module_kind::linear ||
                                                  tensor.module == module_kind::conv1d);
  if (block_linear) {
    return tensor.is_bias && !column_parallel(tensor) ? tensor.numel() : tensor.numel() / tp;
  }
  if (tensor.role == tensor_role::token_embedding || tensor.role == tensor_role::lm_head) {
    return ceil_div(tensor.shape[0], tp) * (tensor.numel() / tensor.shape[0]);
  }
  return tensor.numel();
}

std::uint64_t tensor_parallel_in_features(const tensor_spec& tensor, std::uint64_t tp) {
  const bool block_linear = tensor.layer >= 0 && (tensor.module == module_kind::linear ||
                                                  tensor.module == module_kind::conv1d);
  return block_linear ? local_in(tensor, std::max<std::uint64_t>(tp, 1)) : tensor_in(tensor);
}

stage_layers pipeline_stage_layers(std::size_t layers, std::uint64_t stages, std::uint64_t stage) {
  const std::size_t n = static_cast<std::size_t>(stages);
  const std::size_t s = static_cast<std::size_t>(stage);
  const std::size_t base = layers / n;
  const std::size_t extra = layers % n;
  stage_layers out;
  out.first = s * base + std::min(s, extra);
  out.last = out.first + base + (s < extra ? 1 : 0);
  return out;
}

std::optional<error> check_tensor_parallel(const model_spec& spec, std::uint64_t tp) {
  // Expert tensor parallelism splits every routed expert's width and the shared expert's too.
  std::vector<std::pair<const char*, std::uint64_t>> widths = {
      {"the attention heads", spec.num_heads},
      {"the key/value heads", spec.num_kv_heads},
      {"the MLP width", spec.intermediate_size}};
  if (spec.moe.num_experts > 0)
    widths.push_back({"the expert width", spec.moe.expert_intermediate});
  if (spec.moe.shared_intermediate > 0)
    widths.push_back({"the shared experts' width", spec.moe.shared_intermediate});
  bool divides = tp > 0;
  for (const auto& [name, width] : widths) divides = divides && width % tp == 0;
  if (divides) return std::nullopt;
  std::string parts;
  for (std::size_t i = 0; i < widths.size(); ++i) {
    parts += i == 0 ? "" : i + 1 == widths.size() ? " and " : ", ";
    parts += std::string(widths[i].first) + " (" + std::to_string(widths[i].second) + ")";
  }
  return error{"parallel.invalid_degree", "parallel.tp",
               "[parallel.tp] tensor parallelism over " + std::to_string(tp) +
                   " ranks needs it to divide " + parts};
}

}  // namespace gpumem
