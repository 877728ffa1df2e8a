#pragma once
// The models torchtune builds and the configs it ships, at torchtune 0.6.1 (the release whose
// recipes the torchtune profile models: CEWithChunkedOutputLoss, fused AdamW). Builders:
// torchtune/models/<family>/_model_builders.py; configs: recipes/configs/<family>/.

#include <string>

namespace gpumem {

struct torchtune_model {
  const char* id;       // the Hub id a preset answers to (what an import names)
  const char* family;   // torchtune.models.<family>, recipes/configs/<family>/
  const char* size;     // the configs' prefix: 8B, 0.5B, mini
  const char* builder;  // the full model's builder; LoRA's is lora_<builder>
  const char* configs;  // the shipped configs of this size, space-separated, without .yaml
  bool base_instruct;   // its builder is <builder>_base or <builder>_instruct
  bool output_lora;     // its LoRA builder takes apply_lora_to_output
  bool dora;            // its LoRA builder takes use_dora
};

// The model a Hub id names (case, "-Instruct", "-hf", "-chat", "-it" aside), or nullptr.
// `instruct` says whether the id names an instruct variant.
const torchtune_model* torchtune_model_of(const std::string& hub_id, bool& instruct);
// The model a builder names (with or without lora_/qlora_, _base/_instruct), or nullptr.
const torchtune_model* torchtune_model_built_by(const std::string& builder);
// The model and kind a shipped config names ("llama3_1/8B_lora_single_device"), or nullptr.
const torchtune_model* torchtune_model_configured(const std::string& config, std::string& kind);
// Whether torchtune ships the config `name` (without its family: "8B_lora_single_device") of `m`.
bool torchtune_ships(const torchtune_model& m, const std::string& name);
// The builder name of `m` for an instruct or base checkpoint.
std::string torchtune_builder(const torchtune_model& m, bool instruct);

}  // namespace gpumem
