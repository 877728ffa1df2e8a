#pragma once
// Which modules PEFT's targets name, as its suffix match reads them (LoRA, IA3, LoRA on the token
// embedding), and the role a block's linear layer plays in the data flow.

#include <cstdint>
#include <string>
#include <vector>

#include "gpumem/model/model_spec.hpp"
#include "gpumem/training/training_step.hpp"

namespace gpumem {

// A linear's role in its block (model_spec.hpp, linear_role_of).
inline linear_role role_of(const tensor_spec& t) { return linear_role_of(t); }

// Whether `t` is one of the adapter targets (LoRA's or IA3's) as PEFT matches module names.
bool adapter_target(const training_config& config, const tensor_spec& t);
// The same for a list of targets (one target alone, as the request check asks of each).
bool adapter_target_of(const std::vector<std::string>& targets, const tensor_spec& t);
bool lora_target(const training_config& config, const tensor_spec& t);
bool ia3_target(const training_config& config, const tensor_spec& t);
// IA3 scales the input of a feedforward target (the MLP's output projection), else the output.
bool ia3_scales_input(const tensor_spec& t);
// A tied LM head is still an nn.Linear module (sharing the embedding's weight) that PEFT adapts.
bool tied_head_target(const model_spec& spec, const training_config& config);
// The token embedding: the table of vocab_size rows (not BERT's token types).
bool token_table(const model_spec& spec, const tensor_spec& t);
// PEFT's LoRA on the token embedding (a target naming it).
bool embedding_lora_target(const model_spec& spec, const training_config& config,
                           const tensor_spec& t);

}  // namespace gpumem
