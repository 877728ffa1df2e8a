#include "gpumem/model/litgpt_model.hpp"

namespace gpumem {

tensor_spec tied_lm_head(const model_spec& spec) {
  tensor_spec head;
  head.name = "lm_head.weight";
  head.role = tensor_role::lm_head;
  head.module = module_kind::linear;
  head.shape = {spec.vocab_size, spec.embedding_dim};
  return head;
}

model_spec litgpt_model(const model_spec& spec) {
  model_spec out = spec;
  if (!spec.tied_embeddings) return out;
  out.tied_embeddings = false;
  out.tensors.push_back(tied_lm_head(spec));
  return out;
}

}  // namespace gpumem
