#pragma once
// LLMem's Algorithm 1 made explicit: for each distributed method the largest micro-batch that
// fits, its per-GPU peak and estimated speed; the choice is the fastest method that fits, and
// when none fits at batch 1, the CPU offload that would.

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "gpumem/model/model_spec.hpp"
#include "gpumem/model/param_count.hpp"
#include "gpumem/plan/estimate.hpp"
#include "gpumem/plan/llmem.hpp"
#include "gpumem/plan/step_time.hpp"
#include "gpumem/result.hpp"
#include "gpumem/runtime/hardware.hpp"
#include "gpumem/training/training_step.hpp"

namespace gpumem {

struct plan_candidate {
  std::string method;  // what the response calls it (LLMem's or the detailed estimator's name)
  parallel_config parallel;
  bool sequence_parallel = false;  // detailed tensor_parallel: with sequence parallelism
  bool valid = true;               // false: the method cannot run here (see note)
  std::string note;                // why not, when not valid
  std::uint64_t max_micro_batch = 0;
  rank_estimate at_max;  // the estimate at max_micro_batch (at 1 when nothing fits)
  step_time speed;       // at max_micro_batch (offloaded: with the offload's time)
  bool fits = false;
  offload_placement offload;  // detailed plans: what the candidate offloads
  std::uint64_t pp = 1;       // detailed pipeline: stages, and micro-batches per step
  std::uint64_t pp_micro_batches = 0;
  std::uint64_t host_bytes_per_node = 0;
  std::uint64_t nvme_bytes_per_node = 0;
  // Gradient checkpointing as the candidate runs it; chosen by the plan where the request left
  // it open (plan_options::choose_checkpointing).
  bool grad_ckpt = false;
  bool grad_ckpt_chosen = false;
  // Micro-batches accumulated per optimizer step to make up plan_options::global_batch.
  std::uint64_t grad_accumulation = 1;
};

// A plan replays a step for every method, checkpointing choice and micro-batch it tries, and
// again for each change it weighs (a solve for every micro-batch), each replay linear in the
// model's blocks: models of up to this many blocks are planned within about two seconds natively
// even at their largest batches (a 128-block model of width 256 on 8 GPUs, tests/adversarial);
// larger ones (config.json allows 4,096) are estimated one method at a time. Published decoders
// have at most 128 (Llama-3.1-405B: 126).
inline constexpr std::size_t max_planned_blocks = 128;

// request.too_large, naming the model's blocks and the limit, for a search over a larger model.
std::optional<error> check_plan_size(const model_spec& spec, const std::string& search);

// A candidate as a person names it: "ZeRO-3 with 2-way tensor parallelism".
std::string candidate_label(const plan_candidate& c);

// What moves to host memory when nothing fits on the GPUs.
struct offload_advice {
  bool needed = false;
  bool sufficient = false;           // the GPUs fit once it moves
  std::string method;                // the method it applies to
  std::string moves;                 // which state, in words
  std::uint64_t gpu_peak_bytes = 0;  // per GPU at batch 1 after the move
  std::uint64_t host_bytes_per_gpu = 0;
  std::uint64_t host_bytes_per_node = 0;
  std::string summary;
};

struct plan_result {
  std::vector<plan_candidate> candidates;
  int choice = -1;  // index into candidates, -1 when nothing fits
  std::string reason;
  offload_advice offload;
  std::vector<std::string> warnings;
  std::vector<std::string> unmatched_targets;  // LoRA/IA3 targets naming no module (PEFT skips)
  // Layouts the plan does not offer because the framework does not run them, each in a sentence.
  std::vector<std::string> not_offered;
};

struct plan_options {
  std::uint64_t seq_len = 512;
  std::uint64_t max_micro_batch = 4096;  // search limit
  // Detailed plans: a micro-batch the request fixes, tried alone for every candidate (0: each
  // candidate's largest that fits).
  std::uint64_t fixed_micro_batch = 0;
  step_time_options speed;
  bool exact_dp_tp_fraction = false;
  // Detailed plans: the request leaves gradient checkpointing open (it changes the memory and the
  // time of a step, not what is learned), so every candidate runs with it off and with every
  // block checkpointed and keeps the faster that fits (the one that needs less memory when
  // neither does).
  bool choose_checkpointing = false;
  // Detailed plans: only these methods on the GPUs alone (no tensor-parallel groups, context
  // parallelism or offloads); empty: every method.
  std::vector<std::string> only_methods;
  // Detailed plans: the sequences of one optimizer step over every data-parallel group, which
  // the request fixes (0: not fixed). Each candidate takes the largest micro-batch that fits
  // and divides its groups' share, and accumulates gradients over the rest.
  std::uint64_t global_batch = 0;
  bool gpus_only = false;        // detailed plans: never the offloads
  std::uint64_t target_len = 0;  // encoder-decoders: the decoder's length (reported)
};

// Speeds closer than this factor are a tie: the step-time model cannot tell them apart (on the
// development set fewer than a quarter of its throughput figures are within 10 %, validate's
// step-time summary).
inline constexpr double plan_speed_tie = 1.10;

// The methods LLMem considers for `gpus` GPUs: single for one GPU; otherwise CDP, ADP, TP over
// all GPUs and DP+TP for every T dividing the GPU count with 1 < T < gpus.
std::vector<parallel_config> candidate_methods(std::uint64_t gpus);

result<plan_result> plan_llmem(const model_spec& spec, const param_count& counts,
                               const cluster_spec& cluster, const plan_options& options);

// The detailed estimator's plan: for one GPU the single run; for more, DDP, ZeRO-1/2/3, FSDP
// full / grad-op sharding, tensor + sequence parallelism (within a node) over all of them and
// ZeRO-3 over groups of 2, 4, ... tensor-parallel GPUs within a node — each method's largest
// micro-batch whose device footprint fits, and the fastest; when none fits, the offload
// configurations (docs/methodology.md, Offloading).
result<plan_result> plan_detailed(const model_spec& spec, const param_count& counts,
                                  const cluster_spec& cluster, const training_config& workload,
                                  const plan_options& options);

}  // namespace gpumem
