// The allocator's free-block index: the sorted vector and the tree answer alike.

#include "gpumem/runtime/free_blocks.hpp"

#include <doctest/doctest.h>

#include <algorithm>
#include <cstdint>
#include <random>
#include <vector>

namespace gpumem {
namespace {

TEST_CASE("free blocks: best fit is the smallest large enough, the earliest among equals") {
  for (std::size_t threshold : {std::size_t{0}, free_blocks::tree_above}) {
    free_blocks free(threshold);
    free.insert({4096, 7});
    free.insert({1024, 3});
    free.insert({4096, 2});
    CHECK(free.best_fit(512) == 3);
    CHECK(free.best_fit(2048) == 2);  // two of 4,096: the earlier made
    CHECK(free.best_fit(8192) == -1);
    free.erase({4096, 2});
    CHECK(free.best_fit(2048) == 7);
  }
}

TEST_CASE("free blocks: a vector and a tree give the same fits over a long random replay") {
  std::mt19937 random(7);
  free_blocks vector_kept(1u << 30);  // never a tree
  free_blocks tree_kept(0);           // a tree from the first block
  free_blocks switching;              // a vector, then a tree past tree_above
  std::vector<free_blocks::key> live;
  for (int event = 0; event < 20000; ++event) {
    const bool add = live.empty() || random() % 3 != 0;
    if (add) {
      const free_blocks::key k{512 * (1 + random() % 64), event};
      live.push_back(k);
      for (free_blocks* f : {&vector_kept, &tree_kept, &switching}) f->insert(k);
    } else {
      const std::size_t at = random() % live.size();
      for (free_blocks* f : {&vector_kept, &tree_kept, &switching}) f->erase(live[at]);
      live.erase(live.begin() + static_cast<std::ptrdiff_t>(at));
    }
    const std::uint64_t size = 512 * (1 + random() % 70);
    const int want = vector_kept.best_fit(size);
    REQUIRE(tree_kept.best_fit(size) == want);
    REQUIRE(switching.best_fit(size) == want);
  }
  CHECK(live.size() > free_blocks::tree_above);  // the switch happened
}

TEST_CASE("free blocks: the size classes give the tree's fits from bytes to gigabytes") {
  // Sizes over 30 powers of two, so that a fit is often in a larger class than the request's,
  // several classes up, or in none.
  std::mt19937 random(11);
  free_blocks classes(1u << 30);  // never a tree
  free_blocks tree(0);
  std::vector<free_blocks::key> live;
  const auto any_size = [&] {
    return (std::uint64_t{512} << (random() % 31)) * (1 + random() % 3);
  };
  for (int event = 0; event < 20000; ++event) {
    if (live.empty() || random() % 2 != 0) {
      const free_blocks::key k{any_size(), event};
      live.push_back(k);
      classes.insert(k);
      tree.insert(k);
    } else {
      const std::size_t at = random() % live.size();
      classes.erase(live[at]);
      tree.erase(live[at]);
      live.erase(live.begin() + static_cast<std::ptrdiff_t>(at));
    }
    const std::uint64_t size = any_size();
    REQUIRE(classes.best_fit(size) == tree.best_fit(size));
    if (event % 7 == 0) {
      const int taken = classes.take_best_fit(size);
      REQUIRE(tree.take_best_fit(size) == taken);
      if (taken >= 0)
        live.erase(std::find_if(live.begin(), live.end(),
                                [&](const free_blocks::key& k) { return k.index == taken; }));
    }
  }
}

}  // namespace
}  // namespace gpumem

namespace gpumem {
namespace {

TEST_CASE(
    "free blocks: a key the vector cannot pack (odd size, huge index) moves them to the tree") {
  free_blocks free;
  free.insert({4096, 7});
  free.insert({1024, 3});
  free.insert({1000, 1u << 25});  // not a multiple of 512, an index past 2^24
  CHECK(free.best_fit(512) == 1 << 25);
  CHECK(free.best_fit(1001) == 3);
  CHECK(free.take_best_fit(2048) == 7);
  CHECK(free.best_fit(2048) == -1);
  free_blocks huge;
  huge.insert({512, 1});
  CHECK(huge.take_best_fit(std::uint64_t{1} << 60) == -1);  // larger than any packed size
  CHECK(huge.take_best_fit(512) == 1);
}

}  // namespace
}  // namespace gpumem
