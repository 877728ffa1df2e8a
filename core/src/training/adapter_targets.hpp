#pragma once
// Which modules PEFT's targets name, as its suffix match reads them (LoRA, IA3, LoRA on the token
// embedding), and the role a block's linear layer plays in the data flow.

#include <cstdint>
#include <string>

#include "gpumem/model/model_spec.hpp"
#include "gpumem/training/training_step.hpp"

namespace gpumem {

// The module's own name in a parameter's path ("model.layers.0.self_attn.q_proj.weight" ->
// "q_proj").
std::string module_of(const std::string& name);

// Where a block's linear layer sits in the data flow, from its Hugging Face module path.
// Cross-attention (T5's EncDecAttention) takes its queries from the decoder and its keys and
// values from the encoder's output, the memory.
enum class linear_role {
  attention_in,
  attention_out,
  mlp_in,
  mlp_out,
  cross_query,
  cross_memory,
  cross_out,
  latent_q,
  latent_kv
};

linear_role role_of(const tensor_spec& t);

// Whether `t` is one of the adapter targets (LoRA's or IA3's) as PEFT matches module names.
bool adapter_target(const training_config& config, const tensor_spec& t);
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
