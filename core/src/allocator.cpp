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
  free_set& free = pool(small_pool);
  const auto fit = free.lower_bound({size, -1});
  int chosen = 0;
  if (fit == free.end()) {  // a new segment (cudaMalloc)
    const std::uint64_t segment = allocator_segment_size(size);
    reserved_ += segment;
    peak_reserved_ = std::max(peak_reserved_, reserved_);
    blocks_.push_back(block{segments_++, 0, segment, small_pool, false});
    chosen = static_cast<int>(blocks_.size() - 1);
  } else {
    chosen = fit->second;
    free.erase(fit);
    blocks_[static_cast<std::size_t>(chosen)].free = false;
  }
  // Split off the remainder when it is large enough to be useful (should_split).
  block& used = blocks_[static_cast<std::size_t>(chosen)];
  const std::uint64_t remaining = used.size - size;
  if (small_pool ? remaining >= allocator_block_round : remaining > allocator_small_size) {
    used.size = size;
    const block rest{used.segment, used.offset + size, remaining, small_pool, true};
    blocks_.push_back(rest);
    free.insert({remaining, static_cast<int>(blocks_.size() - 1)});
  }
  const block& taken = blocks_[static_cast<std::size_t>(chosen)];
  allocated_ += taken.size;
  peak_allocated_ = std::max(peak_allocated_, allocated_);
  return chosen;
}

int caching_allocator::allocate(std::uint64_t bytes) {
  const std::uint64_t size = allocator_round(std::max<std::uint64_t>(bytes, 1));
  return take(size, size <= allocator_small_size);
}

void caching_allocator::free(int handle) {
  if (handle < 0 || static_cast<std::size_t>(handle) >= blocks_.size()) return;
  block& b = blocks_[static_cast<std::size_t>(handle)];
  if (b.free || b.size == 0) return;
  b.free = true;
  allocated_ -= b.size;
  // Merge with the free neighbours in its segment (free_block / try_merge_blocks).
  free_set& free = pool(b.small_pool);
  for (auto it = free.begin(); it != free.end();) {
    block& other = blocks_[static_cast<std::size_t>(it->second)];
    const bool before = other.segment == b.segment && other.offset + other.size == b.offset;
    const bool after = other.segment == b.segment && b.offset + b.size == other.offset;
    if (!before && !after) {
      ++it;
      continue;
    }
    if (before) b.offset = other.offset;
    b.size += other.size;
    other.size = 0;
    it = free.erase(it);
  }
  free.insert({b.size, handle});
}

}  // namespace gpumem
