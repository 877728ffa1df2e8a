#pragma once
// A tied LM head as a tensor of its own, and the model as litgpt builds it.

#include "gpumem/model/model_spec.hpp"

namespace gpumem {

// A tied LM head as a tensor of its own (the embedding's weight, as the head reads it).
tensor_spec tied_lm_head(const model_spec& spec);

// The model as litgpt builds it: litgpt/model.py's GPT has an lm_head Linear of its own and never
// ties it to the token embedding (a tied checkpoint's embedding is copied into it), so a tied
// config gains a separate [vocab, hidden] LM head.
model_spec litgpt_model(const model_spec& spec);

}  // namespace gpumem
