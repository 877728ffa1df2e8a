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
    if (!tree_.empty() || sorted_.size() >= threshold_) {
      if (tree_.empty()) {
        tree_.insert(sorted_.begin(), sorted_.end());
        sorted_.clear();
      }
      tree_.insert(k);
      return;
    }
    sorted_.insert(std::lower_bound(sorted_.begin(), sorted_.end(), k), k);
  }

  void erase(const key& k) {
    if (!tree_.empty()) {
      tree_.erase(k);
      return;
    }
    const auto at = std::lower_bound(sorted_.begin(), sorted_.end(), k);
    if (at != sorted_.end() && *at == k) sorted_.erase(at);
  }

  // best_fit, taken out of the set in the same search (-1 when none is that large).
  int take_best_fit(std::uint64_t size) {
    const key probe{size, -1};
    if (!tree_.empty()) {
      const auto fit = tree_.lower_bound(probe);
      if (fit == tree_.end()) return -1;
      const int index = static_cast<int>(fit->index);
      tree_.erase(fit);
      return index;
    }
    const auto fit = std::lower_bound(sorted_.begin(), sorted_.end(), probe);
    if (fit == sorted_.end()) return -1;
    const int index = static_cast<int>(fit->index);
    sorted_.erase(fit);
    return index;
  }

  // The index of the smallest free block of at least `size` bytes (the earliest among equals),
  // or -1 when none is that large.
  int best_fit(std::uint64_t size) const {
    const key probe{size, -1};
    if (!tree_.empty()) {
      const auto fit = tree_.lower_bound(probe);
      return fit == tree_.end() ? -1 : static_cast<int>(fit->index);
    }
    const auto fit = std::lower_bound(sorted_.begin(), sorted_.end(), probe);
    return fit == sorted_.end() ? -1 : static_cast<int>(fit->index);
  }

 private:
  std::size_t threshold_;
  std::vector<key> sorted_;
  std::set<key> tree_;
};

}  // namespace gpumem
