#include "gpumem/runtime/allocator.hpp"

#include <algorithm>
#include <cstdint>

namespace gpumem {

namespace {

std::uint64_t round_up(std::uint64_t value, std::uint64_t step) {
  // Sizes near 2^64 (no request comes close) saturate instead of wrapping to 0.
  if (value > UINT64_MAX - step) return UINT64_MAX / step * step;
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

void caching_allocator::insert_free(int index) {
  const block& b = blocks_[static_cast<std::size_t>(index)];
  pool(b.small_pool).insert({b.size, index});
  free_at_[{b.segment, b.offset}] = index;
  if (b.offset == 0 && b.size == segment_sizes_[static_cast<std::size_t>(b.segment)])
    whole_free_.insert(index);
}

void caching_allocator::erase_free(int index) {
  const block& b = blocks_[static_cast<std::size_t>(index)];
  pool(b.small_pool).erase({b.size, index});
  free_at_.erase({b.segment, b.offset});
  whole_free_.erase(index);
}

int caching_allocator::take(std::uint64_t size, bool small_pool) {
  // Best fit among the free blocks of the pool (CUDACachingAllocator get_free_block).
  free_set& free = pool(small_pool);
  const auto fit = free.lower_bound({size, -1});
  int chosen = 0;
  if (fit == free.end()) {  // a new segment (cudaMalloc)
    const std::uint64_t segment = allocator_segment_size(size);
    if (limit_ > 0 && reserved_ + segment > limit_) release_free_segments();
    reserved_ += segment;
    peak_reserved_ = std::max(peak_reserved_, reserved_);
    const int id = static_cast<int>(segment_sizes_.size());
    segment_sizes_.push_back(segment);
    blocks_.push_back(block{id, 0, segment, small_pool, false});
    chosen = static_cast<int>(blocks_.size() - 1);
  } else {
    chosen = fit->second;
    erase_free(chosen);
    blocks_[static_cast<std::size_t>(chosen)].free = false;
  }
  // Split off the remainder when it is large enough to be useful (should_split).
  block& used = blocks_[static_cast<std::size_t>(chosen)];
  const std::uint64_t remaining = used.size - size;
  if (small_pool ? remaining >= allocator_block_round : remaining > allocator_small_size) {
    used.size = size;
    const block rest{used.segment, used.offset + size, remaining, small_pool, true};
    blocks_.push_back(rest);
    insert_free(static_cast<int>(blocks_.size() - 1));
  }
  const block& taken = blocks_[static_cast<std::size_t>(chosen)];
  allocated_ += taken.size;
  peak_allocated_ = std::max(peak_allocated_, allocated_);
  return chosen;
}

void caching_allocator::release_free_segments() {
  // A wholly free segment is one free block at its start as large as the segment. (In the order
  // of their segments, as a scan of the free blocks would give them back.)
  std::vector<int> whole(whole_free_.begin(), whole_free_.end());
  std::sort(whole.begin(), whole.end(), [&](int a, int b) {
    return blocks_[static_cast<std::size_t>(a)].segment <
           blocks_[static_cast<std::size_t>(b)].segment;
  });
  for (int index : whole) {
    erase_free(index);
    block& b = blocks_[static_cast<std::size_t>(index)];
    reserved_ -= b.size;
    b.size = 0;  // gone with its segment (cudaFree)
  }
}

int caching_allocator::allocate(std::uint64_t bytes) {
  const std::uint64_t size = allocator_round(std::max<std::uint64_t>(bytes, 1));
  return take(size, size <= allocator_small_size);
}

void caching_allocator::free(int handle) {
  if (handle < 0 || static_cast<std::size_t>(handle) >= blocks_.size()) return;
  if (blocks_[static_cast<std::size_t>(handle)].free ||
      blocks_[static_cast<std::size_t>(handle)].size == 0)
    return;
  allocated_ -= blocks_[static_cast<std::size_t>(handle)].size;
  blocks_[static_cast<std::size_t>(handle)].free = true;
  // Merge with the free neighbours in its segment (free_block / try_merge_blocks).
  block& b = blocks_[static_cast<std::size_t>(handle)];
  auto after = free_at_.find({b.segment, b.offset + b.size});
  if (after != free_at_.end()) {
    const int other = after->second;
    erase_free(other);
    b.size += blocks_[static_cast<std::size_t>(other)].size;
    blocks_[static_cast<std::size_t>(other)].size = 0;
  }
  auto before = free_at_.lower_bound({b.segment, b.offset});
  if (before != free_at_.begin()) {
    --before;
    const block& prev = blocks_[static_cast<std::size_t>(before->second)];
    if (before->first.first == b.segment && prev.offset + prev.size == b.offset) {
      const int other = before->second;
      erase_free(other);
      b.offset = blocks_[static_cast<std::size_t>(other)].offset;
      b.size += blocks_[static_cast<std::size_t>(other)].size;
      blocks_[static_cast<std::size_t>(other)].size = 0;
    }
  }
  insert_free(handle);
}

}  // namespace gpumem
