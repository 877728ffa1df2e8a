#pragma once
// A named part of a memory footprint in bytes: what every estimate reports its peak (or a host's
// and an NVMe's share) as.

#include <cstdint>
#include <string>

namespace gpumem {

struct component {
  std::string name;
  std::uint64_t bytes = 0;
};

}  // namespace gpumem
