// The serving formats: `vllm serve` and llama.cpp's `llama-server` command lines.
#include <cctype>
#include <string>
#include <vector>

#include "api/launch/launch.hpp"
#include "gpumem/model/weight_format.hpp"

namespace gpumem {

namespace {

std::string model_argument(const launch_setup& s) {
  return s.model_id.empty() ? "MODEL_ID" : s.model_id;  // a pasted config: a placeholder
}

std::string number(double value) {
  std::string text = std::to_string(value);
  text.erase(text.find_last_not_of('0') + 1);
  if (!text.empty() && text.back() == '.') text.pop_back();
  return text;
}

// `vllm serve` (vllm/engine/arg_utils.py EngineArgs, vLLM 0.6): the engine's reservation, cache
// and batch limits as the estimate read them. --max-model-len is the request's length (prompt
// and new tokens): vLLM refuses to start when its cache cannot hold one sequence of it.
result<launch_output> vllm(const launch_setup& s) {
  const inference_config& c = s.serving.config;
  if (c.framework != serving_framework::vllm) {
    return launch_refusal("workload.framework",
                          "a vllm export serves with vLLM: set workload.framework "
                          "vllm and estimate again");
  }
  std::vector<std::string> words = {"vllm", "serve", model_argument(s)};
  const auto flag = [&](const std::string& name, const std::string& value) {
    words.push_back(name);
    words.push_back(value);
  };
  if (c.tp_degree > 1) flag("--tensor-parallel-size", std::to_string(c.tp_degree));
  if (c.pp_degree > 1) flag("--pipeline-parallel-size", std::to_string(c.pp_degree));
  flag("--max-model-len", std::to_string(c.prompt_tokens + c.new_tokens));
  flag("--gpu-memory-utilization", number(c.gpu_memory_utilization));
  flag("--max-num-seqs", std::to_string(c.profile_sequences));
  flag("--max-num-batched-tokens", std::to_string(c.profile_tokens));
  flag("--block-size", std::to_string(c.block_size));
  if (c.activation_bytes == 4) {
    flag("--dtype", "float32");
  } else {
    flag("--dtype", c.activation_bf16 ? "bfloat16" : "float16");
  }
  // vLLM's cache dtypes (CacheConfig): auto (the model's) or fp8; int8 is not one.
  if (s.kv_dtype == "fp8") {
    flag("--kv-cache-dtype", "fp8");
  } else if (s.kv_dtype == "int8" || (s.kv_dtype == "fp32") != (c.activation_bytes == 4)) {
    return launch_refusal("workload.kv_cache.dtype", "vLLM caches in the model's dtype or fp8");
  }
  // A quantised checkpoint's method is read from its config.json; an unquantised one is
  // quantised on load only to fp8 or bitsandbytes 4-bit.
  if (!s.spec->quantized_checkpoint) {
    const weight_format w = c.weights.format;
    if (w == weight_format::fp8) {
      flag("--quantization", "fp8");
    } else if (w == weight_format::nf4) {
      flag("--quantization", "bitsandbytes");
    } else if (w != weight_format::bf16 && w != weight_format::fp16 && w != weight_format::fp32) {
      return launch_refusal("workload.weights",
                            std::string("vLLM loads ") + weight_format_name(w) +
                                " weights from a checkpoint quantised so, not from this one");
    }
  }
  launch_output out;
  out.command = shell_line(words);
  out.not_expressed.push_back({"workload.micro_batch",
                               "how many sequences are served at once, and how long they are, "
                               "comes from the requests; --max-num-seqs caps them"});
  return out;
}

// llama.cpp's `llama-server` (common/arg.cpp, release b4000): all layers on the GPUs, the
// context of every slot together (-c is split evenly over -np slots), the cache's types.
result<launch_output> llama_cpp(const launch_setup& s) {
  const inference_config& c = s.serving.config;
  if (c.framework != serving_framework::llama_cpp) {
    return launch_refusal("workload.framework",
                          "a llama_cpp export serves with llama.cpp: set "
                          "workload.framework llama_cpp and estimate again");
  }
  if (c.tp_degree > 1) {
    return launch_refusal("parallel.method",
                          "llama.cpp splits layers over GPUs (pipeline); its row split "
                          "is not what tensor_parallel estimates");
  }
  // A 16-bit cache as llama.cpp's default type, f16 (bf16's bytes are the same).
  const char* cache_type = s.kv_dtype == "fp32" ? "f32" : "f16";
  if (s.kv_dtype == "fp8" || s.kv_dtype == "int8") {
    return launch_refusal("workload.kv_cache.dtype",
                          "llama.cpp's 8-bit cache (q8_0) keeps a scale per "
                          "32 values: not the one byte a value estimated here");
  }
  std::string file = weight_format_name(c.weights.format);  // gguf_q4_k_m
  file = file.substr(5);
  for (char& ch : file) ch = static_cast<char>(std::toupper(static_cast<unsigned char>(ch)));
  std::vector<std::string> words = {"llama-server",
                                    "-m",
                                    "model-" + file + ".gguf",
                                    "-c",
                                    std::to_string(c.batch * (c.prompt_tokens + c.new_tokens)),
                                    "-np",
                                    std::to_string(c.batch),
                                    "-ngl",
                                    "999",
                                    "-ctk",
                                    cache_type,
                                    "-ctv",
                                    cache_type};
  if (c.pp_degree > 1) {
    words.insert(words.end(), {"-sm", "layer"});
  }
  launch_output out;
  out.command = shell_line(words);
  out.not_expressed.push_back(
      {"model",
       "llama.cpp runs a GGUF file: convert the checkpoint (convert_hf_to_gguf.py) and "
       "quantise it (llama-quantize) to " +
           file});
  return out;
}

}  // namespace

result<launch_output> export_serving(const launch_setup& setup, const std::string& format) {
  if (format == "vllm") return vllm(setup);
  return llama_cpp(setup);
}

}  // namespace gpumem
