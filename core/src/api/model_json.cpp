#include "api/model_json.hpp"

namespace gpumem {

using nlohmann::ordered_json;

namespace {

const char* stack_name(stack_kind stack) {
  return stack == stack_kind::encoder ? "encoder" : "decoder";
}

ordered_json dimensions(const model_spec& s) {
  ordered_json out = {
      {"model_type", s.model_type},
      {"architecture", s.architecture},
      {"kind", s.encoder_decoder ? "encoder-decoder" : (s.causal ? "decoder" : "encoder")},
      {"vocab_size", s.vocab_size},
      {"hidden_size", s.hidden_size},
      {"embedding_dim", s.embedding_dim},
      {"num_layers", s.num_layers},
      {"num_heads", s.num_heads},
      {"num_kv_heads", s.num_kv_heads},
      {"head_dim", s.head_dim},
      {"v_head_dim", s.v_head_dim},
      {"intermediate_size", s.intermediate_size},
      {"max_positions", s.max_positions},
      {"gated_mlp", s.gated_mlp},
      {"parallel_block", s.parallel_block},
      {"norm", s.norm == norm_kind::rms_norm ? "rms_norm" : "layer_norm"},
      {"activation", s.activation},
      {"tied_embeddings", s.tied_embeddings},
      {"logits_fp32", s.logits_fp32},
      {"attention_dropout", s.attention_dropout},
      {"hidden_dropout", s.hidden_dropout},
  };
  out["moe"] = nullptr;
  if (s.moe.num_experts > 0) {
    std::uint64_t moe_layers = 0;
    for (const auto& layer : s.layers) moe_layers += layer.moe;
    out["moe"] = {{"num_experts", s.moe.num_experts},
                  {"experts_per_token", s.moe.experts_per_token},
                  {"expert_intermediate", s.moe.expert_intermediate},
                  {"shared_intermediate", s.moe.shared_intermediate},
                  {"moe_layers", moe_layers}};
  }
  out["mla"] = nullptr;
  if (s.mla) {
    out["mla"] = {{"q_lora_rank", s.mla_dims.q_lora_rank},
                  {"kv_lora_rank", s.mla_dims.kv_lora_rank},
                  {"qk_nope_head_dim", s.mla_dims.qk_nope_head_dim},
                  {"qk_rope_head_dim", s.mla_dims.qk_rope_head_dim},
                  {"v_head_dim", s.mla_dims.v_head_dim}};
  }
  std::uint64_t sliding = 0;
  for (const auto& layer : s.layers) sliding += layer.attention == attention_pattern::sliding;
  out["sliding_window_layers"] = sliding;
  return out;
}

}  // namespace

ordered_json params_json(const model_spec& spec, const param_count& c) {
  const auto& g = c.groups;
  ordered_json groups = {
      {"embedding", {{"token", g.token_embedding}, {"position", g.position_embedding}}},
      {"attention", g.attention},
      {"mlp",
       {{"dense", g.mlp},
        {"router", g.router},
        {"routed_experts", g.routed_experts},
        {"shared_experts", g.shared_experts}}},
      {"norm", g.norm},
      {"projection", g.projection},
      {"lm_head", g.lm_head},
      {"task_head", g.task_head},
      {"vision", g.vision},
  };
  ordered_json blocks = ordered_json::array();
  for (const auto& b : c.blocks) {
    blocks.push_back({{"stack", stack_name(b.stack)},
                      {"first", b.first},
                      {"last", b.last},
                      {"count", b.last - b.first + 1},
                      {"moe", b.moe},
                      {"shares_params_of", b.shares_params_of},
                      {"attention", b.attention},
                      {"mlp", b.mlp},
                      {"norm", b.norm},
                      {"total", b.total}});
  }
  return {{"model", dimensions(spec)},           {"total_params", c.total},
          {"active_params", c.active},           {"bias_params", c.bias},
          {"tensor_count", spec.tensors.size()}, {"groups", std::move(groups)},
          {"blocks", std::move(blocks)}};
}

}  // namespace gpumem
