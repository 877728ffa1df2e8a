#pragma once
// The caching allocator's free blocks of one pool, ordered by (size, index): the best fit is the
// first at least as large, the earliest made among equals (CUDACachingAllocator get_free_block).
// A sorted vector while there are few (no node to allocate per event: a 32-block model keeps a
// few hundred at most), a balanced tree once there are many (a model of thousands of blocks
// leaves thousands of fragments, over which a vector's insertions make the replay quadratic).
// Both orders are the same, so the answers are too.

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <set>
#include <utility>
#include <vector>

namespace gpumem {

class free_blocks {
 public:
  // (size, block index); a plain struct so that the sorted vector's insertions move memory in one
  // copy (std::pair's assignment is user-provided, so its moves go element by element).
  struct key {
    std::uint64_t size;
    std::int64_t index;
    friend bool operator<(const key& a, const key& b) {
      return a.size < b.size || (a.size == b.size && a.index < b.index);
    }
    friend bool operator==(const key& a, const key& b) {
      return a.size == b.size && a.index == b.index;
    }
  };
  // Above this many free blocks the tree takes over (and keeps them until the replay ends).
  static constexpr std::size_t tree_above = 1024;

  explicit free_blocks(std::size_t tree_threshold = tree_above) : threshold_(tree_threshold) {}

  void insert(const key& k) {
    if (tree_.empty() && sorted_.size() < threshold_ && packable(k)) {
      const std::uint64_t packed = pack(k);
      sorted_.insert(sorted_.begin() + static_cast<std::ptrdiff_t>(first_not_below(packed)),
                     packed);
      return;
    }
    to_tree();
    tree_.insert(k);
  }

  void erase(const key& k) {
    if (!tree_.empty()) {
      tree_.erase(k);
      return;
    }
    if (!packable(k)) return;  // (never inserted into the vector)
    const std::uint64_t packed = pack(k);
    const std::size_t at = first_not_below(packed);
    if (at < sorted_.size() && sorted_[at] == packed)
      sorted_.erase(sorted_.begin() + static_cast<std::ptrdiff_t>(at));
  }

  // best_fit, taken out of the set in the same search (-1 when none is that large).
  int take_best_fit(std::uint64_t size) {
    if (!tree_.empty() || !packable({size, 0})) {
      to_tree();
      const auto fit = tree_.lower_bound(key{size, -1});
      if (fit == tree_.end()) return -1;
      const int index = static_cast<int>(fit->index);
      tree_.erase(fit);
      return index;
    }
    const std::size_t at = first_not_below(pack({size, 0}));
    if (at == sorted_.size()) return -1;
    const int index = static_cast<int>(sorted_[at] & index_mask);
    sorted_.erase(sorted_.begin() + static_cast<std::ptrdiff_t>(at));
    return index;
  }

  // The index of the smallest free block of at least `size` bytes (the earliest among equals),
  // or -1 when none is that large.
  int best_fit(std::uint64_t size) const {
    if (!tree_.empty() || !packable({size, 0})) {
      const auto fit = tree_.lower_bound(key{size, -1});
      return fit == tree_.end() ? -1 : static_cast<int>(fit->index);
    }
    const std::size_t at = first_not_below(pack({size, 0}));
    return at == sorted_.size() ? -1 : static_cast<int>(sorted_[at] & index_mask);
  }

 private:
  // The vector holds each key as one integer, size / 512 above the index's 24 bits, which sorts
  // as (size, index) does: the caching allocator's blocks are multiples of 512 bytes
  // (allocator_block_round), a replay makes fewer than 2^24 blocks and no block reaches 2^49
  // bytes. A key outside that range sends the set to the tree.
  static constexpr unsigned index_bits = 24;
  static constexpr std::uint64_t index_mask = (std::uint64_t{1} << index_bits) - 1;
  static constexpr std::uint64_t size_unit = 512;
  static bool packable(const key& k) {
    return k.size % size_unit == 0 && k.size / size_unit < (std::uint64_t{1} << 40) &&
           k.index >= 0 && static_cast<std::uint64_t>(k.index) <= index_mask;
  }
  static std::uint64_t pack(const key& k) {
    return (k.size / size_unit) << index_bits | static_cast<std::uint64_t>(k.index);
  }
  static key unpack(std::uint64_t packed) {
    return {(packed >> index_bits) * size_unit, static_cast<std::int64_t>(packed & index_mask)};
  }
  // The position of the first key not below `packed` (a branchless lower_bound).
  std::size_t first_not_below(std::uint64_t packed) const {
    const std::uint64_t* base = sorted_.data();
    std::size_t n = sorted_.size();
    if (n == 0) return 0;
    while (n > 1) {
      const std::size_t half = n / 2;
      base = base[half - 1] < packed ? base + half : base;
      n -= half;
    }
    return static_cast<std::size_t>(base - sorted_.data()) + (*base < packed ? 1 : 0);
  }
  void to_tree() {
    if (!tree_.empty() || sorted_.empty()) return;
    for (const std::uint64_t packed : sorted_) tree_.insert(unpack(packed));
    sorted_.clear();
  }

  std::size_t threshold_;
  std::vector<std::uint64_t> sorted_;
  std::set<key> tree_;
};

}  // namespace gpumem
