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
  block& b = blocks_[static_cast<std::size_t>(index)];
  free_list& free = pool(b.small_pool);
  free.insert({b.size, index});
  if (b.offset == 0 && b.size == segment_sizes_[static_cast<std::size_t>(b.segment)]) {
    b.whole_at = static_cast<int>(whole_free_.size());
    whole_free_.push_back(index);
  }
}

void caching_allocator::erase_free(int index) {
  block& b = blocks_[static_cast<std::size_t>(index)];
  pool(b.small_pool).erase({b.size, index});
  forget_whole(index);
}

void caching_allocator::forget_whole(int index) {
  block& b = blocks_[static_cast<std::size_t>(index)];
  if (b.whole_at < 0) return;
  // The last moves into its place (release_free_segments orders them by segment itself).
  const int last = whole_free_.back();
  whole_free_[static_cast<std::size_t>(b.whole_at)] = last;
  blocks_[static_cast<std::size_t>(last)].whole_at = b.whole_at;
  whole_free_.pop_back();
  b.whole_at = -1;
}

int caching_allocator::add_block(int segment, std::uint64_t offset, std::uint64_t size,
                                 bool small_pool, bool free) {
  // Written member by member into its place: a block built aside and copied in is read back
  // before its narrow stores have landed (a store-forwarding stall: a fifth of take's time in an
  // inference replay).
  block& b = blocks_.emplace_back();
  b.segment = segment;
  b.offset = offset;
  b.size = size;
  b.small_pool = small_pool;
  b.free = free;
  return static_cast<int>(blocks_.size() - 1);
}

int caching_allocator::take(std::uint64_t size, bool small_pool) {
  // Best fit among the free blocks of the pool (CUDACachingAllocator get_free_block): the
  // smallest at least as large, the earliest made among equals.
  free_list& free = pool(small_pool);
  const int fit = free.take_best_fit(size);
  int chosen = 0;
  if (fit < 0) {  // a new segment (cudaMalloc)
    const std::uint64_t segment = allocator_segment_size(size);
    if (limit_ > 0 && reserved_ + segment > limit_) release_free_segments();
    reserved_ += segment;
    peak_reserved_ = std::max(peak_reserved_, reserved_);
    const int id = static_cast<int>(segment_sizes_.size());
    segment_sizes_.push_back(segment);
    chosen = add_block(id, 0, segment, small_pool, false);
  } else {
    chosen = fit;  // (already out of the free set)
    forget_whole(chosen);
    blocks_[static_cast<std::size_t>(chosen)].free = false;
  }
  // Split off the remainder when it is large enough to be useful (should_split): a free block
  // right after it in its segment.
  const std::uint64_t remaining = blocks_[static_cast<std::size_t>(chosen)].size - size;
  if (small_pool ? remaining >= allocator_block_round : remaining > allocator_small_size) {
    // (Field by field: a copy of the whole block would read back the flag just stored, another
    // store-forwarding stall.)
    const block& used = blocks_[static_cast<std::size_t>(chosen)];
    const int segment = used.segment;
    const std::uint64_t offset = used.offset;
    const int next = used.next;
    const int rest_index = add_block(segment, offset + size, remaining, small_pool, true);
    blocks_[static_cast<std::size_t>(rest_index)].prev = chosen;
    blocks_[static_cast<std::size_t>(rest_index)].next = next;
    if (next >= 0) blocks_[static_cast<std::size_t>(next)].prev = rest_index;
    block& again = blocks_[static_cast<std::size_t>(chosen)];
    again.size = size;
    again.next = rest_index;
    insert_free(rest_index);
  }
  const block& taken = blocks_[static_cast<std::size_t>(chosen)];
  allocated_ += taken.size;
  peak_allocated_ = std::max(peak_allocated_, allocated_);
  return chosen;
}

void caching_allocator::release_free_segments() {
  // A wholly free segment is one free block at its start as large as the segment; they are given
  // back in the order of their segments.
  std::vector<int> whole = whole_free_;
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
  block& b = blocks_[static_cast<std::size_t>(handle)];
  if (b.free || b.size == 0) return;
  allocated_ -= b.size;
  b.free = true;
  // Merge with the free neighbours in its segment (free_block / try_merge_blocks); the merged
  // block keeps the freed one's index.
  if (b.next >= 0 && blocks_[static_cast<std::size_t>(b.next)].free) {
    const int other = b.next;
    block& after = blocks_[static_cast<std::size_t>(other)];
    erase_free(other);
    b.size += after.size;
    after.size = 0;
    b.next = after.next;
    if (b.next >= 0) blocks_[static_cast<std::size_t>(b.next)].prev = handle;
  }
  if (b.prev >= 0 && blocks_[static_cast<std::size_t>(b.prev)].free) {
    const int other = b.prev;
    block& before = blocks_[static_cast<std::size_t>(other)];
    erase_free(other);
    b.offset = before.offset;
    b.size += before.size;
    before.size = 0;
    b.prev = before.prev;
    if (b.prev >= 0) blocks_[static_cast<std::size_t>(b.prev)].next = handle;
  }
  insert_free(handle);
}

}  // namespace gpumem
