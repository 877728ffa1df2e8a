#include "training/framework.hpp"

#include <algorithm>

#include "parallel/data_parallel_method.hpp"

namespace gpumem {

// A bias-free Llama-style decoder: two RMSNorms a block, before attention and before the MLP
// (per-head q/k norms allowed), a gated MLP, no mixture of experts, latent attention or soft cap:
// what unsloth's fast kernels and torchtitan's Llama run.
bool llama_style_decoder(const model_spec& spec) {
  bool llama_style = spec.norm == norm_kind::rms_norm && spec.gated_mlp && !spec.parallel_block &&
                     spec.causal && !spec.mla;
  for (const auto& layer : spec.layers) llama_style = llama_style && !layer.moe;
  // Gemma 2's extra post-norms and soft-capped attention run other kernels.
  std::vector<int> norms(spec.layers.size(), 0);
  for (const auto& t : spec.tensors) {
    llama_style = llama_style && !(t.layer >= 0 && t.is_bias);
    if (t.layer >= 0 && t.module == module_kind::norm && t.shape.size() == 1 &&
        t.shape[0] == spec.hidden_size)
      ++norms[static_cast<std::size_t>(t.layer)];
  }
  for (int n : norms) llama_style = llama_style && n == 2;
  llama_style = llama_style && spec.pre_norms && (!spec.qk_norm || spec.qk_norm_per_head);
  return llama_style && spec.attention_softcap <= 0;
}

std::optional<framework_profile> framework_named(const std::string& name) {
  for (const auto framework :
       {framework_profile::transformers, framework_profile::litgpt, framework_profile::torchtune,
        framework_profile::unsloth, framework_profile::torchtitan}) {
    if (name == framework_of(framework).name) return framework;
  }
  return std::nullopt;
}

std::string data_parallel_methods_text(const framework_traits& fw) {
  std::string names;
  for (const data_parallel m : fw.data_parallel_methods) {
    names += names.empty() ? "" : ", ";
    names += m == data_parallel::none ? "one GPU" : data_parallel_of(m).name;
  }
  return std::string(fw.name) + "'s training recipes run " + names;
}

std::optional<std::string> data_parallel_refusal(const framework_traits& fw, data_parallel dp) {
  const auto& runs = fw.data_parallel_methods;
  if (runs.empty() || std::find(runs.begin(), runs.end(), dp) != runs.end()) return std::nullopt;
  return data_parallel_methods_text(fw) + ": not " + data_parallel_of(dp).name;
}

const framework_traits& framework_of(framework_profile framework) {
  switch (framework) {
    case framework_profile::litgpt:
      return litgpt_framework();
    case framework_profile::torchtune:
      return torchtune_framework();
    case framework_profile::unsloth:
      return unsloth_framework();
    case framework_profile::torchtitan:
      return torchtitan_framework();
    case framework_profile::transformers:
      break;
  }
  return transformers_framework();
}

}  // namespace gpumem
