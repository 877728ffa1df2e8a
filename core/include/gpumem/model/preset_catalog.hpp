#pragma once
// The presets that ship inside the core: model config.json files (presets/models/) and the GPU
// table (presets/gpus.json), embedded at build time by cmake/embed_presets.cmake.

#include <cstddef>
#include <nlohmann/json_fwd.hpp>
#include <string>

#include "gpumem/result.hpp"

namespace gpumem {

struct embedded_file {
  const char* name;
  const char* text;
};

struct embedded_files {
  const embedded_file* data;
  std::size_t size;
  const embedded_file* begin() const { return data; }
  const embedded_file* end() const { return data + size; }
};

// Defined in the generated presets_data.cpp.
embedded_files embedded_model_presets();
embedded_files embedded_gpu_presets();  // one entry per GPU of presets/gpus.json, named by id
// A preset's aliases (other Hub ids with the same architecture): name = the alias, text = the
// preset's file name.
embedded_files embedded_model_aliases();
// Where each preset's config.json and each GPU's figures come from (name = the id, text = the
// preset's `source` array or the GPU's `sources` object): kept apart from the presets, which the
// estimates read, since only the `sources` command reads them.
embedded_files embedded_model_sources();
embedded_files embedded_gpu_sources();

// A model preset by Hugging Face id (e.g. meta-llama/Llama-2-7b-hf) or by one of its aliases
// (meta-llama/Llama-2-7b-chat-hf): the preset file's object with `id`, `family`, `config`,
// `published_params`, `aliases` (its `source` is preset_sources').
// `supplied`: presets a request brings (an array in the same format, each with an `id` string and
// a `config` object; null for none), looked up before the embedded ones.
result<nlohmann::ordered_json> find_model_preset(const std::string& id, const std::string& field,
                                                 const nlohmann::ordered_json& supplied);

// Every model preset: the supplied ones in their order, then the embedded ones in file-name order
// that no supplied preset replaces (same id).
nlohmann::ordered_json all_model_presets(const nlohmann::ordered_json& supplied);

// presets/gpus.json as an object with `gpus` (each without its `sources`: preset_sources').
nlohmann::ordered_json gpu_presets();

// Where the presets come from: {"models": [{"id", "source"}], "gpus": [{"id", "sources"}]}.
nlohmann::ordered_json preset_sources();

// One GPU preset by id; a discarded value when there is none.
nlohmann::ordered_json find_gpu_preset(const std::string& id);

}  // namespace gpumem
