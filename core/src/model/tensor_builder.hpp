#pragma once
// Appends parameter tensors to a model_spec under the current module path, in the order the
// Hugging Face modules register them (torch registers a Linear's weight before its bias, a
// LayerNorm's weight before its bias).

#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "gpumem/model/model_spec.hpp"

namespace gpumem {

class tensor_builder {
 public:
  explicit tensor_builder(model_spec& spec) : spec_(spec) {}

  // Module path prefix for the following tensors, and the block they belong to (-1: none).
  void scope(std::string prefix, int layer = -1) {
    prefix_ = std::move(prefix);
    layer_ = layer;
  }

  // torch.nn.Linear(in, out): weight [out, in], bias [out].
  void linear(std::string_view name, std::uint64_t in, std::uint64_t out, bool bias,
              tensor_role role) {
    add(name, ".weight", {out, in}, role, module_kind::linear, false);
    if (bias) add(name, ".bias", {out}, role, module_kind::linear, true);
  }
  // transformers' GPT-2 Conv1D(out, in): weight [in, out], bias [out] (always).
  void conv1d(std::string_view name, std::uint64_t in, std::uint64_t out, tensor_role role) {
    add(name, ".weight", {in, out}, role, module_kind::conv1d, false);
    add(name, ".bias", {out}, role, module_kind::conv1d, true);
  }
  void embedding(std::string_view name, std::uint64_t rows, std::uint64_t dim, tensor_role role) {
    add(name, ".weight", {rows, dim}, role, module_kind::embedding, false);
  }
  void layer_norm(std::string_view name, std::uint64_t dim, bool bias = true) {
    add(name, ".weight", {dim}, tensor_role::norm, module_kind::norm, false);
    if (bias) add(name, ".bias", {dim}, tensor_role::norm, module_kind::norm, true);
  }
  void rms_norm(std::string_view name, std::uint64_t dim) {
    add(name, ".weight", {dim}, tensor_role::norm, module_kind::norm, false);
  }
  // A bare nn.Parameter (fused MoE expert weights, BERT's MLM output bias).
  void parameter(std::string_view name, tensor_shape shape, tensor_role role,
                 bool is_bias = false) {
    add(name, "", shape, role, module_kind::parameter, is_bias);
  }

 private:
  // One allocation per name: prefix + module + suffix.
  void add(std::string_view module, std::string_view suffix, tensor_shape shape, tensor_role role,
           module_kind kind, bool is_bias) {
    std::string name;
    name.reserve(prefix_.size() + module.size() + suffix.size());
    name.append(prefix_).append(module).append(suffix);
    spec_.tensors.push_back(tensor_spec{std::move(name), role, kind, shape, layer_, is_bias});
  }

  model_spec& spec_;
  std::string prefix_;
  int layer_ = -1;
};

}  // namespace gpumem
