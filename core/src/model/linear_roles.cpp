#include <string>

#include "gpumem/model/model_spec.hpp"

namespace gpumem {

std::string module_of(const std::string& name) {
  // "model.layers.0.self_attn.q_proj.weight" -> "q_proj"
  const auto end = name.rfind('.');
  const auto start = name.rfind('.', end - 1);
  return name.substr(start + 1, end - start - 1);
}

namespace {

linear_role read_linear_role(const tensor_spec& t) {
  const std::string module = module_of(t.name);
  if (t.role == tensor_role::router) return linear_role::mlp_in;  // reads the MLP's input
  // T5 (modeling_t5.py): SelfAttention and EncDecAttention q, k, v, o; DenseReluDense wi (wi_0
  // and wi_1 when gated) and wo. (Only short names are looked at: this runs for every linear of
  // every replay.)
  if (module.size() <= 4) {
    if (t.name.find(".EncDecAttention.") != std::string::npos) {
      return module == "q"   ? linear_role::cross_query
             : module == "o" ? linear_role::cross_out
                             : linear_role::cross_memory;
    }
    if (module == "o") return linear_role::attention_out;
    if (module == "wi" || module == "wi_0" || module == "wi_1") return linear_role::mlp_in;
    if (module == "wo") return linear_role::mlp_out;
  }
  // DeepSeek's latent attention: q_b_proj and kv_b_proj read the normalised q and kv latents.
  if (module == "q_b_proj") return linear_role::latent_q;
  if (module == "kv_b_proj") return linear_role::latent_kv;
  if (module == "dense" && t.role == tensor_role::mlp) {
    // BERT's intermediate.dense and output.dense
    return t.name.find("intermediate") != std::string::npos ? linear_role::mlp_in
                                                            : linear_role::mlp_out;
  }
  for (const char* m : {"o_proj", "out_proj", "dense"}) {
    if (module == m) return linear_role::attention_out;
  }
  if (module == "c_proj") {
    return t.name.find(".attn.") != std::string::npos ? linear_role::attention_out
                                                      : linear_role::mlp_out;
  }
  for (const char* m :
       {"gate_proj", "up_proj", "gate_up_proj", "fc1", "fc_in", "c_fc", "dense_h_to_4h"}) {
    if (module == m) return linear_role::mlp_in;
  }
  for (const char* m : {"down_proj", "fc2", "fc_out", "dense_4h_to_h"}) {
    if (module == m) return linear_role::mlp_out;
  }
  return linear_role::attention_in;  // q/k/v, fused qkv, c_attn, query_key_value
}

}  // namespace

linear_role linear_role_of(const tensor_spec& t) {
  return t.flow != linear_role::unknown ? t.flow : read_linear_role(t);
}

}  // namespace gpumem
