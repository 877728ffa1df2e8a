// The planner's micro-batch search (plan/boundary_search.hpp) against an exhaustive scan.

#include "plan/boundary_search.hpp"

#include <doctest/doctest.h>

#include <cstdint>
#include <vector>

namespace gpumem {
namespace {

// A footprint of `fixed` + `per_unit` x b bytes against `limit`; each probe counted.
struct linear_footprint {
  std::uint64_t fixed;
  std::uint64_t per_unit;
  std::uint64_t limit;
  int probes = 0;
  boundary_probe operator()(std::uint64_t b) {
    ++probes;
    const std::uint64_t bytes = fixed + per_unit * b;
    return {bytes <= limit, bytes};
  }
};

TEST_CASE("the search finds the largest value that fits, whatever the first slope says") {
  for (std::uint64_t limit : {1'000ULL, 5'000ULL, 77'777ULL, 1'000'000ULL}) {
    for (std::uint64_t hint : {1ULL, 10ULL, 97ULL, 100ULL, 1'000ULL, 1'000'000ULL}) {
      linear_footprint f{500, 97, limit};
      const std::uint64_t bad = 4097;
      if (!f(1).holds) continue;
      std::uint64_t expected = 1;
      while (expected + 1 < bad && f(expected + 1).holds) ++expected;
      f.probes = 0;
      const boundary_start start{1, 597, bad, limit, hint};
      CHECK(search_boundary(start, [&](std::uint64_t b) { return f(b); }) == expected);
      // Doubling and bisecting to 4,096 costs up to 24 probes; a run on one side doubles.
      CHECK(f.probes <= 26);
    }
  }
}

TEST_CASE("a right prediction costs two probes") {
  linear_footprint f{500, 97, 77'777};
  const boundary_start start{1, 597, 4097, 77'777, 97};
  CHECK(search_boundary(start, [&](std::uint64_t b) { return f(b); }) == (77'777 - 500) / 97);
  CHECK(f.probes == 2);
}

TEST_CASE("the range's end is never probed and a range of one value is not searched") {
  linear_footprint f{0, 1, 1'000'000};
  std::vector<std::uint64_t> probed;
  const auto probe = [&](std::uint64_t b) {
    probed.push_back(b);
    return f(b);
  };
  CHECK(search_boundary({1, 1, 65, 1'000'000, 1}, probe) == 64);
  for (std::uint64_t b : probed) CHECK(b < 65);
  probed.clear();
  CHECK(search_boundary({1, 1, 2, 1'000'000, 1}, probe) == 1);
  CHECK(probed.empty());
}

TEST_CASE("where the fit is not monotone the answer is still a boundary") {
  // Fits at 1-40, 45-60 and 70; the answer fits and the next value does not.
  const auto fits = [](std::uint64_t b) { return b <= 40 || (b >= 45 && b <= 60) || b == 70; };
  for (std::uint64_t hint : {1ULL, 3ULL, 50ULL, 5'000ULL}) {
    const auto probe = [&](std::uint64_t b) { return boundary_probe{fits(b), 100 * b}; };
    const std::uint64_t found = search_boundary({1, 100, 101, 5'000, hint}, probe);
    CHECK(fits(found));
    CHECK_FALSE(fits(found + 1));
  }
}

TEST_CASE("footprints that do not grow or are unknown still end the search") {
  // Failed probes report no footprint (all bits set), as a refused estimate does.
  const auto probe = [](std::uint64_t b) {
    return b <= 12 ? boundary_probe{true, 1'000} : boundary_probe{false, ~0ULL};
  };
  CHECK(search_boundary({1, 1'000, 4097, 2'000, 0}, probe) == 12);
  CHECK(search_boundary({1, 1'000, ~0ULL, 2'000, 1}, probe) == 12);
  // A limit other than the footprint's (host memory): failures with a smaller footprint.
  const auto host_bound = [](std::uint64_t b) { return boundary_probe{b <= 7, 10}; };
  CHECK(search_boundary({1, 10, 4097, 2'000, 0}, host_bound) == 7);
}

}  // namespace
}  // namespace gpumem
