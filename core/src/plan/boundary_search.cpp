#include "plan/boundary_search.hpp"

#include <algorithm>

namespace gpumem {

namespace {

struct point {
  std::uint64_t at = 0;
  std::uint64_t bytes = 0;
  bool known = false;
};

// The bytes one more unit adds between two points, or `fallback` when they do not grow.
std::uint64_t slope(const point& lo, const point& hi, std::uint64_t fallback) {
  if (!lo.known || !hi.known || hi.at <= lo.at || hi.bytes <= lo.bytes) return fallback;
  const std::uint64_t span = hi.at - lo.at;
  return std::max<std::uint64_t>((hi.bytes - lo.bytes + span - 1) / span, 1);
}

}  // namespace

std::uint64_t search_boundary(const boundary_start& start,
                              const std::function<boundary_probe(std::uint64_t)>& probe) {
  point good{start.good, start.good_bytes, true};
  point bad{start.bad, 0, false};
  point before_good;  // the fitting probe before `good`
  std::uint64_t step = 1;
  int last_side = 0;
  while (bad.at - good.at > 1) {
    const std::uint64_t hint = std::max<std::uint64_t>(start.per_unit, 1);
    const std::uint64_t per_unit =
        bad.known ? slope(good, bad, hint) : slope(before_good, good, hint);
    const std::uint64_t room = start.limit > good.bytes ? start.limit - good.bytes : 0;
    const std::uint64_t ahead = room / per_unit;
    std::uint64_t guess = ahead >= bad.at - good.at ? bad.at - 1 : good.at + ahead;
    // A run on one side: at least twice as far as the last step.
    if (last_side > 0) guess = std::max(guess, good.at + std::min(step, bad.at - good.at - 1));
    if (last_side < 0) guess = std::min(guess, bad.at - std::min(step, bad.at - good.at - 1));
    const std::uint64_t at = std::clamp(guess, good.at + 1, bad.at - 1);
    const boundary_probe result = probe(at);
    const int side = result.holds ? 1 : -1;
    step = side == last_side ? (step > UINT64_MAX / 2 ? step : step * 2) : 1;
    last_side = side;
    if (result.holds) {
      before_good = good;
      good = {at, result.bytes, true};
    } else {
      bad = {at, result.bytes, true};
    }
  }
  return good.at;
}

}  // namespace gpumem
