#include "gpumem/allocator.hpp"

#include <algorithm>

namespace gpumem {

namespace {

std::uint64_t round_up(std::uint64_t value, std::uint64_t step) {
  return (value + step - 1) / step * step;
}

}  // namespace

std::uint64_t allocator_round(std::uint64_t bytes) {
  return bytes == 0 ? 0 : round_up(bytes, allocator_block_round);
}

std::uint64_t allocator_segment_size(std::uint64_t bytes) {
  const std::uint64_t size = allocator_round(bytes);
  if (size <= allocator_small_size) return allocator_small_segment;
  if (size < allocator_min_large_alloc) return allocator_large_segment;
  return round_up(size, allocator_round_large);
}

int caching_allocator::take(std::uint64_t size, bool small_pool) {
  // Best fit among the free blocks of the pool (CUDACachingAllocator get_free_block).
  int best = -1;
  for (std::size_t i = 0; i < blocks_.size(); ++i) {
    const block& b = blocks_[i];
    if (!b.free || b.size == 0 || b.small_pool != small_pool || b.size < size) continue;
    if (best < 0 || b.size < blocks_[static_cast<std::size_t>(best)].size)
      best = static_cast<int>(i);
  }
  if (best < 0) {  // a new segment (cudaMalloc)
    const std::uint64_t segment = allocator_segment_size(size);
    reserved_ += segment;
    peak_reserved_ = std::max(peak_reserved_, reserved_);
    blocks_.push_back(block{segments_++, 0, segment, small_pool, true});
    best = static_cast<int>(blocks_.size() - 1);
  }
  // Split off the remainder when it is large enough to be useful (should_split).
  block& chosen = blocks_[static_cast<std::size_t>(best)];
  const std::uint64_t remaining = chosen.size - size;
  if (small_pool ? remaining >= allocator_block_round : remaining > allocator_small_size) {
    chosen.size = size;
    blocks_.push_back(block{chosen.segment, chosen.offset + size, remaining, small_pool, true});
  }
  block& used = blocks_[static_cast<std::size_t>(best)];
  used.free = false;
  allocated_ += used.size;
  peak_allocated_ = std::max(peak_allocated_, allocated_);
  return best;
}

int caching_allocator::allocate(std::uint64_t bytes) {
  const std::uint64_t size = allocator_round(std::max<std::uint64_t>(bytes, 1));
  return take(size, size <= allocator_small_size);
}

void caching_allocator::free(int handle) {
  if (handle < 0 || static_cast<std::size_t>(handle) >= blocks_.size()) return;
  block& b = blocks_[static_cast<std::size_t>(handle)];
  if (b.free) return;
  b.free = true;
  allocated_ -= b.size;
  // Merge with the free neighbours in its segment (free_block / try_merge_blocks).
  bool merged = true;
  while (merged) {
    merged = false;
    for (auto& other : blocks_) {
      if (&other == &b || !other.free || other.size == 0 || other.segment != b.segment) continue;
      if (other.offset + other.size == b.offset) {
        b.offset = other.offset;
      } else if (b.offset + b.size != other.offset) {
        continue;
      }
      b.size += other.size;
      other.size = 0;
      merged = true;
    }
  }
}

}  // namespace gpumem
