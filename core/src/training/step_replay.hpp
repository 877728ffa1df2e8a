#pragma once
// The replay of a training step as a schedule of allocations and frees on the caching-allocator
// model (memory_timeline), phase by phase:
//   step_setup.cpp      what the run is: dtypes, sharding, offload, pipeline stage
//   step_load.cpp       load: weights, adapters, master weights, buckets, gather sizes
//   step_forward.cpp    forward, block by block (block_activations.cpp: what each block keeps)
//   step_loss.cpp       final norm, LM head and loss, as each framework computes them
//   step_backward.cpp   backward, block by block, and where each gradient goes
//   step_optimizer.cpp  the optimizer step and what the next step inherits
// The checks that refuse a combination run before (step_checks.cpp); the caller
// (training_step.cpp estimate_step) runs the phases for every micro-batch of two steps.

#include <cstdint>
#include <string>
#include <vector>

#include "gpumem/runtime/memory_timeline.hpp"
#include "gpumem/training/training_step.hpp"
#include "parallel/data_parallel_method.hpp"
#include "training/block_activations.hpp"
#include "training/framework.hpp"

namespace gpumem {

// Whether `dp` is DeepSpeed's or Colossal-AI's engine (which converts the module to 16 bits).
bool zero_engine(data_parallel dp);
// unsloth's fused loss: how many chunks its tokens' logits are cut into.
std::uint64_t unsloth_loss_chunks(std::uint64_t tokens, std::uint64_t vocab, double target_bytes,
                                  double fixed_bytes);

// A classifier's output rows and columns (a causal or masked LM's: its tokens and vocabulary).
struct output_shape {
  std::uint64_t rows = 0;
  std::uint64_t cols = 0;
};
output_shape output_of(const model_spec& spec, const training_config& config, std::uint64_t v,
                       std::uint64_t tokens);

class step_replay {
 public:
  // `config` has passed the checks (check_training_combination).
  step_replay(const model_spec& spec, const training_config& config, const gpu_spec& gpu,
              const std::vector<std::string>& unmatched_targets);
  training_estimate run();

 private:
  using cat = memory_category;
  // A parameter the optimizer steps.
  struct trainable {
    std::uint64_t numel;
    std::uint64_t bytes;
    int layer;
    std::uint64_t cols;  // last dimension; rows = numel / cols (1-D tensors: cols = numel)
    bool matrix;
  };

  // step_setup.cpp
  void setup_stage();
  void setup_precision();
  void setup_sharding();
  void setup_framework();
  void describe_blocks();
  void release_notes(const std::vector<std::string>& unmatched_targets);
  bool on_stage(const tensor_spec& t) const;
  int gradient_block(int layer) const;
  bool stepped(const tensor_spec& t) const;
  std::uint64_t share(std::uint64_t bytes, bool sharded) const;
  std::uint64_t state_bytes(std::uint64_t param_bytes) const;
  // step_load.cpp
  void load();
  void load_weights();
  void load_adapters();
  void load_peft_extras();
  void load_llama_adapter();
  void index_params();
  void size_gathers();
  void size_deepspeed_gathers();
  std::uint64_t deepspeed_working_set(std::size_t l, bool backward, std::uint64_t next) const;
  std::vector<std::uint64_t> saved_bytes(const block_memory& b) const;
  const std::vector<const trainable*>& layer_params(int layer) const;
  // step_forward.cpp
  void start_pass(int pass);
  void forward();
  void forward_micro_batch(bool stepped_back);
  void forward_block(std::size_t l, bool stepped_back);
  void end_encoder();
  std::uint64_t bias_bytes(std::uint64_t q_len, std::uint64_t k_len) const;
  std::uint64_t next_block(std::size_t l) const;
  // step_loss.cpp
  void loss();
  void loss_unsloth();
  void loss_litgpt();
  void loss_torchtune();
  void loss_transformers();
  void end_forward();
  void drop_previous_iteration();
  // step_backward.cpp
  void backward();
  void loss_backward();
  void block_backward(std::size_t l);
  void grads_for(int layer);
  void grads_for_layer(int layer);
  bool sharded_grads_for_layer(int layer, std::vector<int>& kept);
  // step_optimizer.cpp
  void optimizer_step();
  void optimizer_in_backward();
  void fp32_gradients(std::vector<int>& fp32_grads);
  void create_states();
  void adafactor_step();
  void adamw_temporaries();

  const model_spec& spec;
  const training_config& config;
  const gpu_spec& gpu;
  const framework_traits& fw;
  const data_parallel_traits& method;  // the data-parallel method's
  training_estimate out;
  memory_timeline tl;

  // The pipeline stage this rank runs (1F1B).
  std::uint64_t tp = 1, cp = 1, pp = 1;
  stage_layers stage;
  bool first_stage = true, last_stage = true;
  std::uint64_t in_flight = 1;
  std::vector<int> last_runner;  // the last block that runs block l's parameters
  // Dtypes and what trains.
  step_context ctx;
  bool engine_16bit = false, bitsandbytes_4bit = false, pure = false;
  bool adapters_in_base_dtype = false, kbit_prepared = false;
  std::uint64_t full_bytes = 0, base_bytes = 0, kbit_head_bytes = 0, gathered_bytes = 0;
  // Data parallelism and offload.
  data_parallel dp = data_parallel::none;
  std::uint64_t n = 1;
  bool params_sharded = false, idle_tower_steps = false, grads_sharded = false;
  bool states_sharded = false, states_on_host = false, params_on_host = false;
  bool grads_to_host = false, acts_to_host = false, master = false, deepspeed3 = false;
  // Framework and loop.
  bool checkpointed = false, in_backward = false, in_place_adam = false, no_sync = false;
  bool grads_outlive_step = false, keep_outputs = false, keeps_logits = false;
  bool inputs_outlive_backward = false, inputs_to_host = false, frozen_in_flat_params = false;
  int steps = 1, micro_steps = 1;
  std::uint64_t outside = 0;  // device bytes outside the allocator: context and libraries
  // Loaded: what trains and what is gathered.
  std::vector<trainable> params;
  std::vector<std::vector<const trainable*>> params_of;  // by layer + 1
  bool quantized_head = false, embedding_lora = false, llama_adapter = false, adapter_v2 = false;
  std::uint64_t head_dequantised = 0, trainable_bytes = 0;
  std::vector<std::uint64_t> block_params, largest_module;
  std::uint64_t root_params = 0, persistent_params = 0, input_root = 0, output_root = 0;
  std::uint64_t prefetch_limit = 0, bucket_bytes = 0;
  // The blocks, and the shapes of the head.
  std::uint64_t decoder_seq = 0;  // tokens of each sequence in the decoder's blocks
  std::size_t first_decoder = 0;
  std::vector<block_memory> blocks;
  bool stage_masked = false, memory_kept = false;
  std::uint64_t memory_bytes = 0;
  // The decoder's tokens (all of them; the hidden-width tensors' share), which the head reads.
  std::uint64_t t_tokens = 0, th = 0, h = 0, v = 0, e = 0, tv = 0;
  output_shape output;
  bool plain_loss = false, shifted = false, forward_upcast = false;
  bool loss_by_release = false;  // a transformers release before 4.49 set the loss's path
  std::uint64_t logit_bytes = 0, loss_bytes = 0, shift_bytes = 0;
  // Across passes.
  std::vector<int> states, grads, previous_graph, host_copy_buffers;
  std::vector<std::vector<int>> unsynced;  // by layer + 1
  bool backward_workspace = false, grads_kept = false;
  int previous_logits = -1;
  std::uint64_t unsloth_chunks = 0;
  // This pass (one micro-batch of one step).
  int step = 1;
  bool first_micro = true, last_micro = true;
  std::vector<std::vector<int>> saved, cached;
  std::vector<bool> offloaded;
  std::vector<int> copies, gathered, waiting, encoder_bias, decoder_bias, encoder_end, head;
  int root = -1, residual = -1, memory = -1, log_softmax = -1, kept_logits = -1;
  std::uint64_t chunk_elements = 0;
};

}  // namespace gpumem
