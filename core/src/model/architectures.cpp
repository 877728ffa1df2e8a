#include "model/architectures.hpp"

namespace gpumem {

std::uint64_t read_standard_dims(config_reader& cfg, model_spec& spec) {
  spec.hidden_size = cfg.required({"hidden_size"}, max_width);
  spec.embedding_dim = spec.hidden_size;
  spec.vocab_size = cfg.required({"vocab_size"}, max_vocab);
  spec.intermediate_size = cfg.required({"intermediate_size"}, max_width);
  const auto layers = cfg.required({"num_hidden_layers"}, max_layers);
  read_heads(cfg, spec, {"num_attention_heads"}, {"num_key_value_heads"});
  return layers;
}

void read_heads(config_reader& cfg, model_spec& spec, std::initializer_list<const char*> head_keys,
                std::initializer_list<const char*> kv_keys) {
  spec.num_heads = cfg.required(head_keys, max_heads);
  spec.num_kv_heads = cfg.optional(kv_keys, spec.num_heads, max_heads);
  const char* head_key = *head_keys.begin();
  if (cfg.has("head_dim")) {
    spec.head_dim = cfg.required({"head_dim"}, max_width);
  } else if (spec.num_heads > 0 && spec.hidden_size > 0) {
    if (spec.hidden_size % spec.num_heads != 0) {
      cfg.fail("config.inconsistent_heads", head_key,
               "[" + cfg.field(head_key) + "] must divide hidden size " +
                   std::to_string(spec.hidden_size) + ", got " + std::to_string(spec.num_heads) +
                   " heads");
      return;
    }
    spec.head_dim = spec.hidden_size / spec.num_heads;
  }
  if (spec.num_kv_heads > 0 && spec.num_heads % spec.num_kv_heads != 0) {
    const char* kv_key = *kv_keys.begin();
    cfg.fail("config.inconsistent_heads", kv_key,
             "[" + cfg.field(kv_key) + "] must divide the " + std::to_string(spec.num_heads) +
                 " attention heads, got " + std::to_string(spec.num_kv_heads));
  }
  spec.v_head_dim = spec.head_dim;
}

void add_uniform_layers(model_spec& spec, stack_kind stack, std::uint64_t count) {
  for (std::uint64_t i = 0; i < count; ++i) {
    layer_spec layer;
    layer.stack = stack;
    layer.index = static_cast<int>(i);
    layer.mlp_intermediate = spec.intermediate_size;
    spec.layers.push_back(layer);
  }
  spec.num_layers = spec.layers.size();
}

}  // namespace gpumem

#include "model/tensor_builder.hpp"

namespace gpumem {

void add_lm_head(tensor_builder& add, const model_spec& spec, const std::string& name, bool bias) {
  add.scope("");
  if (!spec.tied_embeddings) {
    add.linear(name, spec.embedding_dim, spec.vocab_size, bias, tensor_role::lm_head);
  } else if (bias) {
    add.parameter(name + ".bias", {spec.vocab_size}, tensor_role::lm_head, true);
  }
}

}  // namespace gpumem
