#include "gpumem/runtime/memory_timeline.hpp"

#include <algorithm>

namespace gpumem {

const char* category_name(memory_category category) {
  switch (category) {
    case memory_category::cuda_workspace:
      return "cuda_workspace";
    case memory_category::weights:
      return "weights";
    case memory_category::master_weights:
      return "master_weights";
    case memory_category::gathered_params:
      return "gathered_params";
    case memory_category::communication_buffers:
      return "communication_buffers";
    case memory_category::adapters:
      return "adapters";
    case memory_category::autocast_weight_copies:
      return "autocast_weight_copies";
    case memory_category::activations:
      return "activations";
    case memory_category::logits_and_loss:
      return "logits_and_loss";
    case memory_category::gradients:
      return "gradients";
    case memory_category::optimizer_states:
      return "optimizer_states";
    case memory_category::optimizer_temporaries:
      return "optimizer_temporaries";
    case memory_category::kv_cache:
      return "kv_cache";
    case memory_category::placed_chunks:
      return "gemini_chunks_on_gpu";
    case memory_category::other:
      return "other";
  }
  return "other";
}

int memory_timeline::allocate(std::uint64_t bytes, memory_category category) {
  const std::uint64_t before = allocator_.allocated();
  const int block = allocator_.allocate(bytes);
  const std::uint64_t size = allocator_.allocated() - before;  // the block, after rounding
  live_[static_cast<std::size_t>(category)] += size;
  handles_.emplace_back(block, category);
  sizes_.push_back(size);
  if (allocator_.allocated() > peak_.allocated) {
    peak_.allocated = allocator_.allocated();
    peak_unsettled_ = true;  // (allocations only add: what is live now is the peak's until a free)
  }
  peak_.reserved = allocator_.peak_reserved();
  const std::uint64_t in_flight = live_[static_cast<std::size_t>(memory_category::activations)] +
                                  live_[static_cast<std::size_t>(memory_category::logits_and_loss)];
  if (in_flight > 0) {
    activations_high_ = std::max(activations_high_, in_flight);
    peak_with_activations_ = std::max(peak_with_activations_, allocator_.allocated());
  }
  if (recording_) note_event(category, static_cast<std::int64_t>(size));
  return static_cast<int>(handles_.size() - 1);
}

void memory_timeline::free(int handle) {
  if (handle < 0 || static_cast<std::size_t>(handle) >= handles_.size()) return;
  auto& [block, category] = handles_[static_cast<std::size_t>(handle)];
  if (block < 0) return;
  settle_peak();
  allocator_.free(block);
  live_[static_cast<std::size_t>(category)] -= sizes_[static_cast<std::size_t>(handle)];
  if (recording_)
    note_event(category, -static_cast<std::int64_t>(sizes_[static_cast<std::size_t>(handle)]));
  block = -1;
}

void memory_timeline::settle_peak() const {
  if (!peak_unsettled_) return;
  peak_.phase = phase_;
  peak_.by_category = live_;
  peak_unsettled_ = false;
}

void memory_timeline::phase(std::string name) {
  settle_peak();
  if (recording_ && (phases_.empty() || phases_.back() != name)) phases_.push_back(name);
  phase_ = std::move(name);
}

void memory_timeline::note_event(memory_category category, std::int64_t delta) {
  if (phases_.empty()) phases_.push_back(phase_);
  events_.push_back({allocator_.allocated(), allocator_.reserved(), delta,
                     static_cast<std::uint32_t>(phases_.size() - 1),
                     static_cast<std::uint8_t>(category)});
}

timeline_series memory_timeline::series(std::size_t max_samples) const {
  timeline_series out;
  out.events = events_.size();
  out.phases = phases_;
  if (events_.empty()) return out;
  max_samples = std::max<std::size_t>(max_samples, 2);
  // Stretches of equal length (the last shorter); each keeps its event of most allocated bytes,
  // the earliest on a tie, so the first maximum of the whole step is kept.
  const std::size_t n = events_.size();
  const std::size_t stretch = (n + max_samples - 1) / max_samples;
  std::vector<std::size_t> kept;
  for (std::size_t begin = 0; begin < n; begin += stretch) {
    std::size_t best = begin;
    for (std::size_t i = begin; i < std::min(n, begin + stretch); ++i) {
      if (events_[i].allocated > events_[best].allocated) best = i;
    }
    kept.push_back(best);
  }
  // Replay the category sizes to each kept event.
  std::array<std::int64_t, memory_category_count> live{};
  std::size_t next = 0;
  for (std::size_t i = 0; i < n && next < kept.size(); ++i) {
    live[events_[i].category] += events_[i].delta;
    if (i != kept[next]) continue;
    timeline_sample sample;
    sample.event = i;
    sample.allocated = events_[i].allocated;
    sample.reserved = events_[i].reserved;
    sample.phase = events_[i].phase;
    for (std::size_t c = 0; c < memory_category_count; ++c)
      sample.by_category[c] = static_cast<std::uint64_t>(std::max<std::int64_t>(live[c], 0));
    if (out.samples.empty() || sample.allocated > out.samples[out.peak_sample].allocated)
      out.peak_sample = out.samples.size();
    out.samples.push_back(sample);
    ++next;
  }
  return out;
}

}  // namespace gpumem
