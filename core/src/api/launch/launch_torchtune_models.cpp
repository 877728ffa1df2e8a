// torchtune 0.6.1's builders and shipped configs for the presets it builds (see the header).
// Qwen2.5's builders split base and instruct where the two checkpoints differ
// (qwen2_5/_model_builders.py); Gemma's LoRA builders take no apply_lora_to_output (their head
// is the tied embedding) and Llama 3.1 405B's no use_dora.
#include "api/launch/launch_torchtune_models.hpp"

#include <algorithm>
#include <cctype>
#include <sstream>

namespace gpumem {

namespace {

// clang-format off
const torchtune_model models[] = {
    {"meta-llama/Llama-2-7b-hf", "llama2", "7B", "llama2_7b",
     "7B_full 7B_full_low_memory 7B_lora 7B_lora_single_device 7B_qlora 7B_qlora_single_device",
     false, true, true},
    {"meta-llama/Llama-2-13b-hf", "llama2", "13B", "llama2_13b",
     "13B_full 13B_lora 13B_qlora_single_device", false, true, true},
    {"meta-llama/Llama-2-70b-hf", "llama2", "70B", "llama2_70b", "70B_lora 70B_qlora",
     false, true, true},
    {"meta-llama/Meta-Llama-3-8B", "llama3", "8B", "llama3_8b",
     "8B_dora 8B_dora_single_device 8B_full 8B_full_single_device 8B_lora "
     "8B_lora_single_device 8B_qdora_single_device 8B_qlora_single_device", false, true, true},
    {"meta-llama/Meta-Llama-3-70B", "llama3", "70B", "llama3_70b", "70B_full 70B_lora",
     false, true, true},
    {"meta-llama/Llama-3.1-8B", "llama3_1", "8B", "llama3_1_8b",
     "8B_full 8B_full_single_device 8B_lora 8B_lora_single_device 8B_qlora_single_device",
     false, true, true},
    {"meta-llama/Meta-Llama-3.1-8B", "llama3_1", "8B", "llama3_1_8b",
     "8B_full 8B_full_single_device 8B_lora 8B_lora_single_device 8B_qlora_single_device",
     false, true, true},
    {"meta-llama/Llama-3.1-70B", "llama3_1", "70B", "llama3_1_70b", "70B_full 70B_lora",
     false, true, true},
    {"meta-llama/Meta-Llama-3.1-70B", "llama3_1", "70B", "llama3_1_70b", "70B_full 70B_lora",
     false, true, true},
    {"meta-llama/Llama-3.1-405B", "llama3_1", "405B", "llama3_1_405b", "405B_qlora",
     false, true, false},
    {"meta-llama/Llama-3.2-1B", "llama3_2", "1B", "llama3_2_1b",
     "1B_full 1B_full_single_device 1B_lora 1B_lora_single_device 1B_qlora_single_device",
     false, true, true},
    {"meta-llama/Llama-3.2-3B", "llama3_2", "3B", "llama3_2_3b",
     "3B_full 3B_full_single_device 3B_lora 3B_lora_single_device 3B_qlora_single_device",
     false, true, true},
    {"meta-llama/Llama-3.3-70B-Instruct", "llama3_3", "70B", "llama3_3_70b",
     "70B_full 70B_lora 70B_qlora", false, true, true},
    {"mistralai/Mistral-7B-v0.1", "mistral", "7B", "mistral_7b",
     "7B_full 7B_full_low_memory 7B_lora 7B_lora_single_device 7B_qlora_single_device",
     false, true, true},
    {"google/gemma-2b", "gemma", "2B", "gemma_2b",
     "2B_full 2B_lora 2B_lora_single_device 2B_qlora_single_device", false, false, true},
    {"google/gemma-7b", "gemma", "7B", "gemma_7b",
     "7B_full 7B_lora 7B_lora_single_device 7B_qlora_single_device", false, false, true},
    {"google/gemma-2-2b", "gemma2", "2B", "gemma2_2b",
     "2B_full 2B_lora 2B_lora_single_device 2B_qlora_single_device", false, false, true},
    {"google/gemma-2-9b", "gemma2", "9B", "gemma2_9b",
     "9B_full 9B_lora 9B_lora_single_device 9B_qlora_single_device", false, false, true},
    {"google/gemma-2-27b", "gemma2", "27B", "gemma2_27b",
     "27B_full 27B_lora 27B_lora_single_device 27B_qlora_single_device", false, false, true},
    {"Qwen/Qwen2.5-0.5B", "qwen2_5", "0.5B", "qwen2_5_0_5b",
     "0.5B_full 0.5B_full_single_device 0.5B_lora 0.5B_lora_single_device", false, true, true},
    {"Qwen/Qwen2.5-1.5B", "qwen2_5", "1.5B", "qwen2_5_1_5b",
     "1.5B_full 1.5B_full_single_device 1.5B_lora 1.5B_lora_single_device", true, true, true},
    {"Qwen/Qwen2.5-3B", "qwen2_5", "3B", "qwen2_5_3b",
     "3B_full 3B_full_single_device 3B_lora 3B_lora_single_device", false, true, true},
    {"Qwen/Qwen2.5-7B", "qwen2_5", "7B", "qwen2_5_7b",
     "7B_full 7B_full_single_device 7B_lora 7B_lora_single_device", true, true, true},
    {"Qwen/Qwen2.5-14B", "qwen2_5", "14B", "qwen2_5_14b", "14B_lora_single_device",
     true, true, true},
    {"Qwen/Qwen2.5-32B", "qwen2_5", "32B", "qwen2_5_32b", "32B_lora", true, true, true},
    {"Qwen/Qwen2.5-72B", "qwen2_5", "72B", "qwen2_5_72b", "72B_lora", true, true, true},
    {"codellama/CodeLlama-7b-hf", "code_llama2", "7B", "code_llama2_7b",
     "7B_full_low_memory 7B_lora_single_device 7B_qlora_single_device", false, true, true},
};
// clang-format on

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

// Lower case, without "-instruct" and the trailing "-hf", "-chat", "-it".
std::string stem(const std::string& id, bool& instruct) {
  std::string s = id;
  std::transform(s.begin(), s.end(), s.begin(),
                 [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  instruct = false;
  for (std::size_t at = s.find("-instruct"); at != std::string::npos; at = s.find("-instruct")) {
    s.erase(at, 9);
    instruct = true;
  }
  for (bool again = true; again;) {
    again = false;
    for (const char* tail : {"-hf", "-chat", "-it"}) {
      if (ends_with(s, tail)) {
        s.resize(s.size() - std::string(tail).size());
        instruct = instruct || std::string(tail) != "-hf";
        again = true;
      }
    }
  }
  return s;
}

bool has_config(const torchtune_model& m, const std::string& name) {
  std::istringstream words(m.configs);
  for (std::string w; words >> w;) {
    if (w == name) return true;
  }
  return false;
}

}  // namespace

const torchtune_model* torchtune_model_of(const std::string& hub_id, bool& instruct) {
  const std::string wanted = stem(hub_id, instruct);
  for (const auto& m : models) {
    bool unused = false;
    if (stem(m.id, unused) == wanted) return &m;
  }
  return nullptr;
}

const torchtune_model* torchtune_model_built_by(const std::string& builder) {
  std::string name = builder;
  for (const char* head : {"qlora_", "lora_"}) {
    if (name.rfind(head, 0) == 0) name.erase(0, std::string(head).size());
  }
  for (const char* tail : {"_base", "_instruct"}) {
    if (ends_with(name, tail)) name.resize(name.size() - std::string(tail).size());
  }
  for (const auto& m : models) {
    if (name == m.builder) return &m;
  }
  return nullptr;
}

const torchtune_model* torchtune_model_configured(const std::string& config, std::string& kind) {
  const auto slash = config.find('/');
  if (slash == std::string::npos) return nullptr;
  const std::string family = config.substr(0, slash);
  const std::string name = config.substr(slash + 1);
  for (const auto& m : models) {
    if (family == m.family && has_config(m, name)) {
      kind = name.substr(std::string(m.size).size() + 1);
      return &m;
    }
  }
  return nullptr;
}

std::string torchtune_builder(const torchtune_model& m, bool instruct) {
  if (!m.base_instruct) return m.builder;
  return std::string(m.builder) + (instruct ? "_instruct" : "_base");
}

bool torchtune_ships(const torchtune_model& m, const std::string& name) {
  return has_config(m, name);
}

}  // namespace gpumem
