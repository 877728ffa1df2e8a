// PyTorch's caching allocator rules, on hand-worked sequences (CUDACachingAllocator.cpp).

#include "gpumem/runtime/allocator.hpp"

#include <doctest/doctest.h>

namespace gpumem {
namespace {

TEST_CASE("request rounding and segment sizes") {
  CHECK(allocator_round(1) == 512);
  CHECK(allocator_round(512) == 512);
  CHECK(allocator_round(513) == 1024);
  CHECK(allocator_segment_size(4) == 2 * mib);             // small pool
  CHECK(allocator_segment_size(1 * mib) == 2 * mib);       // still small (<= 1 MiB)
  CHECK(allocator_segment_size(1 * mib + 1) == 20 * mib);  // large pool, under 10 MiB
  CHECK(allocator_segment_size(10 * mib - 512) == 20 * mib);
  CHECK(allocator_segment_size(10 * mib) == 10 * mib);  // rounded to 2 MiB
  CHECK(allocator_segment_size(11 * mib) == 12 * mib);
}

TEST_CASE("small blocks share 2 MiB segments") {
  caching_allocator a;
  for (int i = 0; i < 4; ++i) a.allocate(512 * kib);  // four fill one 2 MiB segment
  CHECK(a.reserved() == 2 * mib);
  CHECK(a.allocated() == 2 * mib);
  a.allocate(1);  // a fifth needs a new segment
  CHECK(a.reserved() == 4 * mib);
  CHECK(a.allocated() == 2 * mib + 512);
}

TEST_CASE("medium blocks share 20 MiB segments; the unsplittable remainder stays allocated") {
  caching_allocator a;
  a.allocate(6 * mib);  // 20 MiB segment, 14 MiB left
  a.allocate(6 * mib);  // same segment, 8 MiB left
  a.allocate(7 * mib);  // same segment, 1 MiB left: not split (<= 1 MiB), block is 8 MiB
  CHECK(a.reserved() == 20 * mib);
  CHECK(a.allocated() == 20 * mib);
  a.allocate(2 * mib);
  CHECK(a.reserved() == 40 * mib);
}

TEST_CASE("a full device gives back wholly free segments before a new one (cudaMalloc retry)") {
  caching_allocator a;
  a.set_limit(100 * mib);
  const int first = a.allocate(40 * mib);
  const int second = a.allocate(30 * mib);
  a.allocate(12 * mib);
  a.free(first);   // its segment is wholly free
  a.free(second);  // so is this one
  CHECK(a.reserved() == 82 * mib);
  // 50 MiB fits no free block; a new segment would make 132 MiB: both free segments go first.
  a.allocate(50 * mib);
  CHECK(a.reserved() == 62 * mib);
  CHECK(a.peak_reserved() == 82 * mib);
  // Without a limit the cache keeps them.
  caching_allocator unbounded;
  unbounded.free(unbounded.allocate(40 * mib));
  unbounded.allocate(50 * mib);
  CHECK(unbounded.reserved() == 90 * mib);
}

TEST_CASE("freed blocks are reused best-fit and merge with free neighbours") {
  caching_allocator a;
  const int x = a.allocate(30 * mib);
  const int y = a.allocate(30 * mib);
  CHECK(a.reserved() == 60 * mib);
  a.free(x);
  a.free(y);
  CHECK(a.allocated() == 0);
  a.allocate(25 * mib);  // fits in the first freed 30 MiB segment: no new segment
  CHECK(a.reserved() == 60 * mib);
  CHECK(a.peak_allocated() == 60 * mib);
  // Within one segment, two freed halves merge back into one block.
  caching_allocator b;
  const int big = b.allocate(40 * mib);
  b.free(big);
  const int p = b.allocate(20 * mib);
  const int q = b.allocate(20 * mib);
  CHECK(b.reserved() == 40 * mib);
  b.free(p);
  b.free(q);
  b.allocate(40 * mib);
  CHECK(b.reserved() == 40 * mib);
  CHECK(b.peak_reserved() == 40 * mib);
}

}  // namespace
}  // namespace gpumem
