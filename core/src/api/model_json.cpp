#include "api/model_json.hpp"

#include "api/json_text.hpp"

namespace gpumem {

using nlohmann::ordered_json;

namespace {

const char* stack_name(stack_kind stack) {
  return stack == stack_kind::encoder ? "encoder" : "decoder";
}

ordered_json dimensions(const model_spec& s) {
  // Written key by key: nlohmann's initializer lists copy every nested value (a third of a
  // params answer's time). Room for the identity keys an answer adds to it.
  ordered_json out = json_object(32);
  out["model_type"] = s.model_type;
  out["architecture"] = s.architecture;
  out["kind"] = s.encoder_decoder ? "encoder-decoder" : (s.causal ? "decoder" : "encoder");
  out["vocab_size"] = s.vocab_size;
  out["hidden_size"] = s.hidden_size;
  out["embedding_dim"] = s.embedding_dim;
  out["num_layers"] = s.num_layers;
  out["num_heads"] = s.num_heads;
  out["num_kv_heads"] = s.num_kv_heads;
  out["head_dim"] = s.head_dim;
  out["v_head_dim"] = s.v_head_dim;
  out["intermediate_size"] = s.intermediate_size;
  out["max_positions"] = s.max_positions;
  out["gated_mlp"] = s.gated_mlp;
  out["parallel_block"] = s.parallel_block;
  out["norm"] = s.norm == norm_kind::rms_norm ? "rms_norm" : "layer_norm";
  out["activation"] = s.activation;
  out["tied_embeddings"] = s.tied_embeddings;
  out["logits_fp32"] = s.logits_fp32;
  out["attention_dropout"] = s.attention_dropout;
  out["hidden_dropout"] = s.hidden_dropout;
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
  ordered_json groups = json_object(9);
  groups["embedding"]["token"] = g.token_embedding;
  groups["embedding"]["position"] = g.position_embedding;
  groups["attention"] = g.attention;
  ordered_json& mlp = groups["mlp"];
  mlp["dense"] = g.mlp;
  mlp["router"] = g.router;
  mlp["routed_experts"] = g.routed_experts;
  mlp["shared_experts"] = g.shared_experts;
  groups["norm"] = g.norm;
  groups["projection"] = g.projection;
  groups["lm_head"] = g.lm_head;
  groups["task_head"] = g.task_head;
  groups["vision"] = g.vision;
  ordered_json blocks = ordered_json::array();
  for (const auto& b : c.blocks) {
    ordered_json& block = blocks.emplace_back(json_object(10));
    block["stack"] = stack_name(b.stack);
    block["first"] = b.first;
    block["last"] = b.last;
    block["count"] = b.last - b.first + 1;
    block["moe"] = b.moe;
    block["shares_params_of"] = b.shares_params_of;
    block["attention"] = b.attention;
    block["mlp"] = b.mlp;
    block["norm"] = b.norm;
    block["total"] = b.total;
  }
  ordered_json out = json_object(7);
  out["model"] = dimensions(spec);
  out["total_params"] = c.total;
  out["active_params"] = c.active;
  out["bias_params"] = c.bias;
  out["tensor_count"] = spec.tensors.size();
  out["groups"] = std::move(groups);
  out["blocks"] = std::move(blocks);
  return out;
}

}  // namespace gpumem
