#include "training/adapter_targets.hpp"

#include <algorithm>
#include <string_view>
#include <utility>

namespace gpumem {

namespace {

// Which linear weights carry LoRA adapters (PEFT target_modules; "all-linear": every linear
// layer in the blocks, not the LM head).
// A Llama-style name that a model without such a module (fused q/k/v, two-matrix MLPs, other
// naming) reads by role, as validation points name targets (validation README: `q_proj`,
// `k_proj`, `v_proj` cover a fused QKV matrix with one adapter; `up_proj` is a two-matrix MLP's
// first matrix): q/k/v_proj the attention input, o_proj its output, gate/up_proj the MLP input,
// down_proj its output, lm_head the output layer: the (at most three) such names a tensor answers
// to.
// (string_view: compared by length first, no strlen per comparison)
struct llama_aliases {
  std::string_view names[3] = {};
  bool matches(const std::string& target) const {
    for (std::string_view name : names) {
      if (!name.empty() && target == name) return true;
    }
    return false;
  }
};

llama_aliases aliases_of(const tensor_spec& t, const std::string& module) {
  static constexpr std::string_view llama_names[] = {"q_proj",    "k_proj",  "v_proj",   "o_proj",
                                                     "gate_proj", "up_proj", "down_proj"};
  for (std::string_view name : llama_names) {
    if (module == name) return {};  // the model has the module itself
  }
  if (t.layer < 0) {
    if (t.role == tensor_role::lm_head) return {{"lm_head"}};
    return {};
  }
  // MoE routers and the shared expert's gate have no Llama-style name.
  if (t.role == tensor_role::router || module == std::string_view("shared_expert_gate")) return {};
  // Separate projections under other names (BERT's query, key, value) match one each.
  static constexpr std::pair<std::string_view, std::string_view> separate[] = {
      {"q_proj", "query"}, {"k_proj", "key"}, {"v_proj", "value"}, {"q_proj", "q"},
      {"k_proj", "k"},     {"v_proj", "v"},   {"o_proj", "o"}};
  for (const auto& [llama, other] : separate) {
    if (module == other) return {{llama}};
  }
  switch (role_of(t)) {
    case linear_role::attention_in:
      return {{"q_proj", "k_proj", "v_proj"}};
    case linear_role::attention_out:
      return {{"o_proj"}};
    case linear_role::mlp_in:
      return {{"gate_proj", "up_proj"}};
    case linear_role::mlp_out:
      return {{"down_proj"}};
    default:
      return {};
  }
}

}  // namespace

// Whether `t` is one of `targets` as PEFT matches module names (LoRA's or IA3's).
bool adapter_target_of(const std::vector<std::string>& targets, const tensor_spec& t) {
  // (transformers 5's MoE router is a bare parameter, not an nn.Linear)
  if (t.role == tensor_role::router) return false;
  if (t.is_bias || (t.module != module_kind::linear && t.module != module_kind::conv1d))
    return false;
  // (The parsed model names every tensor's module; one made later is named from its path. A
  // reference either way: a conditional of a temporary and a member copied the name each call.)
  std::string derived;
  const std::string& module = t.module_name.empty() ? (derived = module_of(t.name)) : t.module_name;
  for (const auto& target : targets) {
    // PEFT's all-linear: every nn.Linear but the output layer, a vision tower's included.
    if (target == std::string_view("all-linear") && t.role != tensor_role::lm_head) return true;
    if (target == module) return true;
  }
  // The Llama-style names it answers to, worked out only when no target names it directly.
  const llama_aliases aliases = aliases_of(t, module);
  return std::any_of(targets.begin(), targets.end(),
                     [&](const std::string& target) { return aliases.matches(target); });
}

bool adapter_target(const training_config& config, const tensor_spec& t) {
  return adapter_target_of(config.lora_targets, t);
}

bool lora_target(const training_config& config, const tensor_spec& t) {
  return config.finetune == finetune_kind::lora && adapter_target(config, t);
}

// PEFT IA3 (tuners/ia3/layer.py Linear): a learned vector scales the output of each target, or
// the input of a feedforward target (the MLP's output projection, PEFT's feedforward_modules).
bool ia3_target(const training_config& config, const tensor_spec& t) {
  return config.finetune == finetune_kind::ia3 && adapter_target(config, t);
}
bool ia3_scales_input(const tensor_spec& t) { return role_of(t) == linear_role::mlp_out; }

// A tied LM head is still an nn.Linear module (sharing the embedding's weight) that PEFT adapts.
bool tied_head_target(const model_spec& spec, const training_config& config) {
  return config.finetune == finetune_kind::lora && spec.tied_embeddings &&
         std::find(config.lora_targets.begin(), config.lora_targets.end(), "lm_head") !=
             config.lora_targets.end();
}

// The token embedding: the table of vocab_size rows (not BERT's token types).
bool token_table(const model_spec& spec, const tensor_spec& t) {
  return t.role == tensor_role::token_embedding && t.module == module_kind::embedding &&
         t.shape.size() == 2 && t.shape[0] == spec.vocab_size;
}

bool names_token_embedding(const model_spec& spec, const std::string& name) {
  return name == "embed_tokens" ||
         std::any_of(spec.tensors.begin(), spec.tensors.end(), [&](const tensor_spec& t) {
           return token_table(spec, t) &&
                  (t.module_name.empty() ? module_of(t.name) : t.module_name) == name;
         });
}

// PEFT's LoRA on an nn.Embedding (tuners/lora/layer.py Embedding): a target naming the token
// embedding trains lora_embedding_A [r, vocab] and lora_embedding_B [dim, r] beside the frozen
// table.
bool embedding_lora_target(const model_spec& spec, const training_config& config,
                           const tensor_spec& t) {
  return config.finetune == finetune_kind::lora && token_table(spec, t) &&
         std::any_of(
             config.lora_targets.begin(), config.lora_targets.end(),
             [&](const std::string& target) { return names_token_embedding(spec, target); });
}

}  // namespace gpumem
