#pragma once
// Exact parameter counts of a model_spec, by module group, per block and in total, plus the
// parameters active per token for mixture-of-experts models.

#include <cstdint>
#include <vector>

#include "gpumem/model/model_spec.hpp"
#include "gpumem/result.hpp"

namespace gpumem {

// Counts by tensor_role (see model_spec.hpp).
struct param_groups {
  std::uint64_t token_embedding = 0;
  std::uint64_t position_embedding = 0;
  std::uint64_t attention = 0;
  std::uint64_t mlp = 0;
  std::uint64_t router = 0;
  std::uint64_t routed_experts = 0;
  std::uint64_t shared_experts = 0;
  std::uint64_t norm = 0;
  std::uint64_t projection = 0;
  std::uint64_t lm_head = 0;
  std::uint64_t task_head = 0;
  std::uint64_t vision = 0;
};

// A run of consecutive, identically sized blocks of one stack.
struct block_params {
  stack_kind stack = stack_kind::decoder;
  int first = 0;  // block indices, inclusive
  int last = 0;
  std::uint64_t attention = 0;  // per block
  std::uint64_t mlp = 0;        // dense MLP, router, routed and shared experts
  std::uint64_t norm = 0;
  std::uint64_t total = 0;
  bool moe = false;
  int shares_params_of = -1;  // ALBERT: these blocks run block N's parameters (counted there)
};

struct param_count {
  std::uint64_t total = 0;  // every trainable tensor once (tied weights once)
  // Per text token: total minus the routed experts not selected and any vision tower.
  std::uint64_t active = 0;
  std::uint64_t bias = 0;  // of which biases
  param_groups groups;
  std::vector<block_params> blocks;
};

// The largest count that a double (and so JavaScript) holds exactly.
inline constexpr std::uint64_t max_exact_count = 1ULL << 53;

// Fails with config.too_large when the model has more than 2^53 parameters.
result<param_count> count_params(const model_spec& spec);

}  // namespace gpumem
