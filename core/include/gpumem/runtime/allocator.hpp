#pragma once
// PyTorch's CUDA caching allocator, as far as memory sizes go (c10/cuda/CUDACachingAllocator.cpp):
// - every request is rounded up to a multiple of 512 bytes (kMinBlockSize);
// - requests up to 1 MiB (kSmallSize) come from the small pool, whose segments are 2 MiB
//   (kSmallBuffer); larger requests come from the large pool, whose segments are 20 MiB
//   (kLargeBuffer) for requests under 10 MiB (kMinLargeAlloc) and the request rounded up to
//   2 MiB (kRoundLarge) otherwise;
// - a free block is reused best-fit (the smallest that is large enough); what remains is split
//   off as a new free block when it is larger than 512 bytes (small pool) or 1 MiB (large pool),
//   otherwise it stays part of the allocated block.
// "allocated" counts the blocks handed out (torch.cuda.memory_allocated), "reserved" the segments
// obtained with cudaMalloc (torch.cuda.memory_reserved).

#include <cstdint>
#include <utility>
#include <vector>

#include "gpumem/runtime/free_blocks.hpp"

namespace gpumem {

inline constexpr std::uint64_t kib = 1024;
inline constexpr std::uint64_t mib = 1024 * kib;
inline constexpr std::uint64_t gib = 1024 * mib;

inline constexpr std::uint64_t allocator_block_round = 512;
inline constexpr std::uint64_t allocator_small_size = 1 * mib;
inline constexpr std::uint64_t allocator_small_segment = 2 * mib;
inline constexpr std::uint64_t allocator_large_segment = 20 * mib;
inline constexpr std::uint64_t allocator_min_large_alloc = 10 * mib;
inline constexpr std::uint64_t allocator_round_large = 2 * mib;

// The request size after the allocator's 512-byte rounding (0 stays 0).
std::uint64_t allocator_round(std::uint64_t bytes);

// The cudaMalloc size of a fresh segment for a request of `bytes`.
std::uint64_t allocator_segment_size(std::uint64_t bytes);

// Replays a sequence of allocations and frees against the caching allocator and tracks the
// allocated and reserved bytes and their peaks. Segments are not released (no empty_cache, as in
// a training loop) until a new one would not fit the device: then, as when cudaMalloc fails, every
// wholly free segment is given back before it is tried again (release_cached_blocks).
class caching_allocator {
 public:
  // Room for a 32-block model's step (a few thousand blocks) from the start: each growth is a
  // malloc and a copy, which WebAssembly's allocator makes dear.
  caching_allocator() {
    blocks_.reserve(2048);
    segment_sizes_.reserve(256);
  }
  // The device memory the segments may take (0: unbounded).
  void set_limit(std::uint64_t bytes) { limit_ = bytes; }
  // Returns a handle for free().
  int allocate(std::uint64_t bytes);
  void free(int handle);

  std::uint64_t allocated() const { return allocated_; }
  std::uint64_t reserved() const { return reserved_; }
  std::uint64_t peak_allocated() const { return peak_allocated_; }
  std::uint64_t peak_reserved() const { return peak_reserved_; }

 private:
  struct block {
    int segment = 0;
    std::uint64_t offset = 0;  // within its segment
    std::uint64_t size = 0;    // 0 once merged into a neighbour
    bool small_pool = false;
    bool free = false;
    int whole_at = -1;  // free and the whole of its segment: its place in whole_free_
    int prev = -1;      // its neighbours in its segment, by address (PyTorch's Block prev/next)
    int next = -1;
  };
  int take(std::uint64_t size, bool small_pool);
  int add_block(int segment, std::uint64_t offset, std::uint64_t size, bool small_pool, bool free);
  void release_free_segments();

  using free_list = free_blocks;
  free_list& pool(bool small_pool) { return small_pool ? free_small_ : free_large_; }

  std::vector<block> blocks_;
  free_list free_small_;
  free_list free_large_;
  // Free blocks that are a whole segment, which release_free_segments gives back (kept apart so
  // that it does not scan every free block whenever the device is full).
  std::vector<int> whole_free_;
  void insert_free(int index);
  void erase_free(int index);
  void forget_whole(int index);  // no longer a wholly free segment
  std::uint64_t allocated_ = 0;
  std::uint64_t reserved_ = 0;
  std::uint64_t peak_allocated_ = 0;
  std::uint64_t peak_reserved_ = 0;
  std::vector<std::uint64_t> segment_sizes_;  // by segment
  std::uint64_t limit_ = 0;
};

}  // namespace gpumem
