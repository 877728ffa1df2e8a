#pragma once
// A replay of the tensors a training or inference step allocates and frees, in order, through
// the caching allocator model: the peak of allocated and reserved bytes, when it happens, and
// what was alive at that moment by category. The detailed estimator describes a step as such a
// sequence (which framework allocates what, and when), so that the peak is where the real one
// is, not a sum of maxima.

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "gpumem/runtime/allocator.hpp"

namespace gpumem {

enum class memory_category {
  cuda_workspace,          // cuBLAS/cuBLASLt workspaces (allocated through PyTorch)
  weights,                 // model parameters as loaded (this rank's shard when sharded)
  master_weights,          // fp32 copies mixed-precision optimizers keep of 16-bit parameters
  gathered_params,         // unsharded parameters of the blocks being computed (ZeRO-3, FSDP)
  communication_buffers,   // DDP gradient buckets, ZeRO reduce buckets
  adapters,                // LoRA matrices
  autocast_weight_copies,  // 16-bit copies autocast caches and autograd saves
  activations,             // tensors saved for backward, and temporaries of the layer running
  logits_and_loss,         // the LM head's output and the loss computation
  gradients,
  optimizer_states,
  optimizer_temporaries,  // e.g. the foreach AdamW step's intermediate list
  kv_cache,
  placed_chunks,  // Gemini "auto": chunks its placement policy keeps on the GPU
  other,
};
inline constexpr std::size_t memory_category_count = 15;

const char* category_name(memory_category category);

struct timeline_peak {
  std::uint64_t allocated = 0;
  std::uint64_t reserved = 0;
  std::string phase;  // where the allocated peak happened
  std::array<std::uint64_t, memory_category_count> by_category{};  // live at that peak
};

// One point of a recorded step: after allocation or free number `event`, what the allocator
// holds, and by category what is allocated.
struct timeline_sample {
  std::uint64_t event = 0;
  std::uint64_t allocated = 0;
  std::uint64_t reserved = 0;
  std::size_t phase = 0;  // index into timeline_series::phases
  std::array<std::uint64_t, memory_category_count> by_category{};
};

// A recorded step downsampled to at most a given number of samples: each sample is the moment of
// most allocated bytes within its stretch of events, so the step's peak is one of them, exact.
struct timeline_series {
  std::uint64_t events = 0;         // allocations and frees replayed
  std::vector<std::string> phases;  // in the order the step enters them
  std::vector<timeline_sample> samples;
  std::size_t peak_sample = 0;  // the sample holding the allocated peak
};

class memory_timeline {
 public:
  // (Room for a typical step's handles from the start, as caching_allocator's blocks.)
  memory_timeline() {
    handles_.reserve(2048);
    sizes_.reserve(2048);
  }
  // Keep every allocation and free for series() (off by default: a plan replays thousands of
  // steps and needs only their peaks).
  void record() { recording_ = true; }
  // The recorded step in at most `max_samples` samples (at least 2).
  timeline_series series(std::size_t max_samples) const;

  int allocate(std::uint64_t bytes, memory_category category);
  void free(int handle);
  void phase(std::string name);
  // The device memory PyTorch's segments may take before cached ones are given back.
  void limit(std::uint64_t bytes) { allocator_.set_limit(bytes); }

  const timeline_peak& peak() const {
    settle_peak();
    return peak_;
  }
  std::uint64_t peak_reserved() const { return allocator_.peak_reserved(); }
  std::uint64_t allocated() const { return allocator_.allocated(); }
  // Where a step grows with its micro-batch: the most activations and logits alive at once, and
  // the most bytes allocated while any were alive (below the step's peak when that falls in an
  // optimizer step). The searches for the largest micro-batch that fits predict from them.
  std::uint64_t activations_high() const { return activations_high_; }
  std::uint64_t peak_with_activations() const { return peak_with_activations_; }
  std::uint64_t reserved() const { return allocator_.reserved(); }

 private:
  caching_allocator allocator_;
  std::vector<std::pair<int, memory_category>> handles_;  // allocator handle, category
  std::vector<std::uint64_t> sizes_;
  std::array<std::uint64_t, memory_category_count> live_{};
  std::string phase_;
  // The peak's phase and categories are copied when they are next about to change (a free, a
  // phase, a read), not at each allocation that raises the peak: in a forward pass that is
  // nearly every one, and each copy was a string and 15 counters.
  mutable timeline_peak peak_;
  mutable bool peak_unsettled_ = false;
  std::uint64_t activations_high_ = 0;
  std::uint64_t peak_with_activations_ = 0;
  void settle_peak() const;
  // Recorded events: the bytes allocated and reserved after each, its phase, and the category
  // and signed size it changed.
  struct event {
    std::uint64_t allocated;
    std::uint64_t reserved;
    std::int64_t delta;
    std::uint32_t phase;
    std::uint8_t category;
  };
  bool recording_ = false;
  std::vector<event> events_;
  std::vector<std::string> phases_;
  void note_event(memory_category category, std::int64_t delta);
};

}  // namespace gpumem
