#include "gpumem/parallel/gemini_chunks.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

namespace gpumem {

namespace {

std::uint64_t round_up(std::uint64_t value, std::uint64_t step) {
  return (value + step - 1) / step * step;
}

// Next-fit packing: the number of chunks, and the smallest growth of the chunk size that would
// change the packing (some parameter that closed a chunk would then fit).
struct packing {
  std::uint64_t chunks = 0;
  std::uint64_t growth_to_change = std::numeric_limits<std::uint64_t>::max();
};

packing pack(const std::vector<std::uint64_t>& sizes, std::uint64_t chunk_size) {
  packing p;
  std::uint64_t fill = 0;
  bool open = false;
  for (std::uint64_t s : sizes) {
    if (open && fill + s <= chunk_size) {
      fill += s;
      continue;
    }
    if (open) p.growth_to_change = std::min(p.growth_to_change, fill + s - chunk_size);
    ++p.chunks;
    fill = s;
    open = true;
  }
  return p;
}

}  // namespace

std::uint64_t gemini_unused_elements(const std::vector<std::uint64_t>& sizes,
                                     std::uint64_t chunk_size) {
  // _get_unused_byte: acc collects the tail of every closed chunk, left is the open chunk's.
  std::uint64_t acc = 0;
  std::uint64_t left = 0;
  for (std::uint64_t s : sizes) {
    if (s > left) {
      acc += left;
      left = chunk_size;
    }
    left -= std::min(left, s);
  }
  return left + acc;
}

gemini_layout gemini_chunk_layout(const std::vector<std::uint64_t>& numels, std::uint64_t dp_degree,
                                  const gemini_search_options& options) {
  gemini_layout layout;
  const std::uint64_t dp = std::max<std::uint64_t>(dp_degree, 1);
  const std::uint64_t total = std::accumulate(numels.begin(), numels.end(), std::uint64_t{0});
  if (numels.empty()) return layout;

  if (total < options.min_chunk_elements) {
    // search_chunk_configuration: a group smaller than the minimum chunk is one chunk that
    // stays gathered on every rank.
    layout.chunk_size = total;
    layout.keep_gathered = true;
    layout.chunks.push_back(total);
    return layout;
  }

  std::vector<std::uint64_t> sizes = numels;
  if (options.filter_exlarge_params) {
    // _filter_exlarge_params: population mean and standard deviation of all parameter sizes.
    double mean = static_cast<double>(total) / static_cast<double>(numels.size());
    double variance = 0.0;
    for (auto n : numels)
      variance += (static_cast<double>(n) - mean) * (static_cast<double>(n) - mean);
    const double upper = mean + 3.0 * std::sqrt(variance / static_cast<double>(numels.size()));
    sizes.erase(std::remove_if(sizes.begin(), sizes.end(),
                               [upper](std::uint64_t n) { return static_cast<double>(n) > upper; }),
                sizes.end());
  }
  std::uint64_t max_size = options.min_chunk_elements;
  for (auto n : sizes) max_size = std::max(max_size, n);
  const std::uint64_t interval = std::max<std::uint64_t>(options.search_interval, 1);
  const std::uint64_t start = round_up(max_size, interval);
  const std::uint64_t stop = start + options.search_range_elements;

  // The scan over [start, stop] in steps of `interval` keeps the first size with the least
  // waste. Waste is chunks x size - total, and the packing only changes where a parameter that
  // closed a chunk starts to fit, so only those sizes need evaluating: between two of them the
  // waste grows with the size.
  std::uint64_t best = start;
  std::uint64_t best_waste = std::numeric_limits<std::uint64_t>::max();
  const std::uint64_t packed = std::accumulate(sizes.begin(), sizes.end(), std::uint64_t{0});
  for (std::uint64_t size = start; size <= stop;) {
    const packing p = pack(sizes, size);
    const std::uint64_t waste = p.chunks * size - packed;
    if (waste < best_waste) {
      best_waste = waste;
      best = size;
    }
    if (p.growth_to_change == std::numeric_limits<std::uint64_t>::max()) break;
    size = start + round_up(size + p.growth_to_change - start, interval);
  }
  layout.wasted = best_waste;
  layout.chunk_size = best + (dp - best % dp) % dp;  // divisible by the DP degree

  // ChunkManager.register_tensor: append to the open chunk while it fits, else open a new one;
  // a tensor larger than the chunk size gets a chunk of its own size, rounded to the DP degree.
  std::uint64_t fill = 0;
  for (std::uint64_t n : numels) {
    if (!layout.chunks.empty() && fill + n <= layout.chunks.back()) {
      fill += n;
      continue;
    }
    layout.chunks.push_back(n > layout.chunk_size ? round_up(n, dp) : layout.chunk_size);
    fill = n;
  }
  return layout;
}

}  // namespace gpumem
