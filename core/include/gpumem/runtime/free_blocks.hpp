#pragma once
// The caching allocator's free blocks of one pool, ordered by (size, index): the best fit is the
// first at least as large, the earliest made among equals (CUDACachingAllocator get_free_block).
// While there are few (a 32-block model keeps a few hundred at most): sorted vectors, one per
// power of two of the size, so that a search and an insertion's move cover one size class, and
// a mask of the classes that hold any, whose lowest set bit above a request's class is the next
// larger class; no node to allocate per event. A balanced tree once there are many (a model of
// thousands of blocks leaves thousands of fragments, over which the vectors' insertions make the
// replay quadratic). Both orders are the same, so the answers are too.

#include <algorithm>
#include <array>
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
    if (tree_.empty() && count_ < threshold_ && packable(k)) {
      const std::uint64_t packed = pack(k);
      const unsigned c = class_of(packed);
      std::vector<std::uint64_t>& v = classes_[c];
      if (v.capacity() == 0) v.reserve(16);  // (one malloc for the class's first few blocks)
      v.insert(v.begin() + static_cast<std::ptrdiff_t>(first_not_below(v, packed)), packed);
      occupied_ |= std::uint64_t{1} << c;
      ++count_;
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
    if (!packable(k)) return;  // (never inserted into the vectors)
    const std::uint64_t packed = pack(k);
    const unsigned c = class_of(packed);
    std::vector<std::uint64_t>& v = classes_[c];
    const std::size_t at = first_not_below(v, packed);
    if (at < v.size() && v[at] == packed) remove(c, at);
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
    const auto [c, at] = find_fit(pack({size, 0}));
    if (c < 0) return -1;
    const auto cls = static_cast<unsigned>(c);
    const int index = static_cast<int>(classes_[cls][at] & index_mask);
    remove(cls, at);
    return index;
  }

  // The index of the smallest free block of at least `size` bytes (the earliest among equals),
  // or -1 when none is that large.
  int best_fit(std::uint64_t size) const {
    if (!tree_.empty() || !packable({size, 0})) {
      const auto fit = tree_.lower_bound(key{size, -1});
      return fit == tree_.end() ? -1 : static_cast<int>(fit->index);
    }
    const auto [c, at] = find_fit(pack({size, 0}));
    return c < 0 ? -1 : static_cast<int>(classes_[static_cast<unsigned>(c)][at] & index_mask);
  }

 private:
  // The vectors hold each key as one integer, size / 512 above the index's 24 bits, which sorts
  // as (size, index) does: the caching allocator's blocks are multiples of 512 bytes
  // (allocator_block_round), a replay makes fewer than 2^24 blocks and no block reaches 2^49
  // bytes. A key outside that range sends the set to the tree.
  static constexpr unsigned index_bits = 24;
  static constexpr std::uint64_t index_mask = (std::uint64_t{1} << index_bits) - 1;
  static constexpr std::uint64_t size_unit = 512;
  static constexpr unsigned size_classes = 64;  // (a packed size has at most 40 bits)
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
  // The size class of a packed key: the power of two of its size in 512-byte units (0 for a
  // zero size, which only a request asks for).
  // (GCC's and Clang's builtins, which Emscripten compiles to wasm's i64.clz and i64.ctz.)
  static unsigned class_of(std::uint64_t packed) {
    const std::uint64_t units = packed >> index_bits;
    return units == 0 ? 0 : 63U - static_cast<unsigned>(__builtin_clzll(units));
  }
  // The position of the first key not below `packed` in `v` (a branchless lower_bound).
  static std::size_t first_not_below(const std::vector<std::uint64_t>& v, std::uint64_t packed) {
    const std::uint64_t* base = v.data();
    std::size_t n = v.size();
    if (n == 0) return 0;
    while (n > 1) {
      const std::size_t half = n / 2;
      base = base[half - 1] < packed ? base + half : base;
      n -= half;
    }
    return static_cast<std::size_t>(base - v.data()) + (*base < packed ? 1 : 0);
  }
  // The class and position of the first key not below `packed` (class -1: none).
  std::pair<int, std::size_t> find_fit(std::uint64_t packed) const {
    const unsigned c = class_of(packed);
    const std::vector<std::uint64_t>& v = classes_[c];
    const std::size_t at = first_not_below(v, packed);
    if (at < v.size()) return {static_cast<int>(c), at};
    // The smallest key of the next larger class that holds any.
    const std::uint64_t above =
        c + 1 < size_classes ? occupied_ & (~std::uint64_t{0} << (c + 1)) : 0;
    if (above == 0) return {-1, 0};
    return {lowest_bit(above), 0};
  }
  static int lowest_bit(std::uint64_t bits) { return __builtin_ctzll(bits); }  // (bits != 0)
  void remove(unsigned c, std::size_t at) {
    std::vector<std::uint64_t>& v = classes_[c];
    v.erase(v.begin() + static_cast<std::ptrdiff_t>(at));
    if (v.empty()) occupied_ &= ~(std::uint64_t{1} << c);
    --count_;
  }
  void to_tree() {
    if (!tree_.empty() || count_ == 0) return;
    for (std::vector<std::uint64_t>& v : classes_) {
      for (const std::uint64_t packed : v) tree_.insert(unpack(packed));
      v.clear();
    }
    occupied_ = 0;
    count_ = 0;
  }

  std::size_t threshold_;
  std::array<std::vector<std::uint64_t>, size_classes> classes_;
  std::uint64_t occupied_ = 0;  // bit c: classes_[c] holds a key
  std::size_t count_ = 0;       // keys in the vectors
  std::set<key> tree_;
};

}  // namespace gpumem
