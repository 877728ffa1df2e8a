#pragma once
// The largest micro-batch that fits, with few replays: each probe goes where the footprints seen
// so far say the footprint reaches its limit (a secant across the bracket, or along the last two
// that fitted), and a run of probes on the same side steps twice as far each time, so that a bad
// prediction costs about what doubling and bisecting would. The answer is a boundary: the value
// fits and the next one does not (or is past the range). The fit need not be monotone (the
// caching allocator's rounding can make a larger micro-batch fit where a smaller one does not);
// then it is one of the boundaries, as bisection's is.

#include <cstdint>
#include <functional>

namespace gpumem {

struct boundary_probe {
  bool holds = false;
  std::uint64_t bytes = 0;  // the footprint measured against the limit
};

struct boundary_start {
  std::uint64_t good = 1;  // holds there
  // Its footprint; or the part of it that grows, where a part that will not lies above it (a
  // full fine-tuning's optimizer step): only the predictions read it.
  std::uint64_t good_bytes = 0;
  std::uint64_t bad = 2;       // does not hold there, or lies past the range (never probed)
  std::uint64_t limit = 0;     // the footprint allowed
  std::uint64_t per_unit = 1;  // bytes one more unit is expected to add, until probes tell
};

// The largest value in [start.good, start.bad) found to hold with the next one not holding.
std::uint64_t search_boundary(const boundary_start& start,
                              const std::function<boundary_probe(std::uint64_t)>& probe);

}  // namespace gpumem
