#pragma once
// Numbers in the API's sentences as the page and the CLI print them: thousands grouped with
// commas, fixed decimals ("6,843.2 GiB", "1,594 tokens/s").

#include <cstdint>
#include <string>

namespace gpumem {

std::string grouped_number(double value, int decimals);

// Bytes in GiB (2^30 bytes) with one decimal.
std::string gib_text(std::uint64_t bytes);

}  // namespace gpumem
