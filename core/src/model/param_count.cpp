#include "gpumem/model/param_count.hpp"

#include <string>

namespace gpumem {

namespace {

std::uint64_t& group_of(param_groups& g, tensor_role role) {
  switch (role) {
    case tensor_role::token_embedding:
      return g.token_embedding;
    case tensor_role::position_embedding:
      return g.position_embedding;
    case tensor_role::attention:
      return g.attention;
    case tensor_role::mlp:
      return g.mlp;
    case tensor_role::router:
      return g.router;
    case tensor_role::routed_experts:
      return g.routed_experts;
    case tensor_role::shared_experts:
      return g.shared_experts;
    case tensor_role::norm:
      return g.norm;
    case tensor_role::projection:
      return g.projection;
    case tensor_role::lm_head:
      return g.lm_head;
    case tensor_role::task_head:
      return g.task_head;
    case tensor_role::vision:
      return g.vision;
  }
  return g.task_head;
}

bool is_mlp(tensor_role role) {
  return role == tensor_role::mlp || role == tensor_role::router ||
         role == tensor_role::routed_experts || role == tensor_role::shared_experts;
}

bool same_size(const block_params& a, const block_params& b) {
  return a.stack == b.stack && a.attention == b.attention && a.mlp == b.mlp && a.norm == b.norm &&
         a.moe == b.moe && a.shares_params_of == b.shares_params_of;
}

}  // namespace

result<param_count> count_params(const model_spec& spec) {
  param_count out;
  std::vector<block_params> per_block(spec.layers.size());
  std::uint64_t unused_experts = 0;  // routed-expert parameters a token does not use
  bool overflow = false;

  for (const auto& t : spec.tensors) {
    const std::uint64_t n = t.numel();
    overflow |= __builtin_add_overflow(out.total, n, &out.total);
    group_of(out.groups, t.role) += n;
    if (t.is_bias) out.bias += n;
    if (t.layer < 0 || static_cast<std::size_t>(t.layer) >= per_block.size()) continue;
    const auto slot = static_cast<std::size_t>(t.layer);
    auto& b = per_block[slot];
    if (t.role == tensor_role::norm) {
      b.norm += n;
    } else if (is_mlp(t.role)) {
      b.mlp += n;
    } else {
      b.attention += n;
    }
    b.total += n;
    if (t.role == tensor_role::routed_experts && spec.moe.num_experts > 0) {
      const std::uint64_t idle = spec.moe.num_experts - spec.moe.experts_per_token;
      unused_experts += n / spec.moe.num_experts * idle;
    }
  }
  if (overflow || out.total > max_exact_count) {
    return error{"config.too_large", "model.config",
                 "[model.config] describes more than 2^53 parameters; the accepted range is up to "
                 "9007199254740992"};
  }
  // A text token reaches neither the idle experts nor a vision tower.
  out.active = out.total - unused_experts - out.groups.vision;

  for (std::size_t i = 0; i < per_block.size(); ++i) {
    auto b = per_block[i];
    b.stack = spec.layers[i].stack;
    b.first = b.last = spec.layers[i].index;
    b.moe = spec.layers[i].moe;
    b.shares_params_of = spec.layers[i].shares_params_of;
    if (!out.blocks.empty() && same_size(out.blocks.back(), b) &&
        out.blocks.back().last + 1 == b.first) {
      out.blocks.back().last = b.first;
    } else {
      out.blocks.push_back(b);
    }
  }
  return out;
}

}  // namespace gpumem
