#include "text/number_text.hpp"

#include <cmath>
#include <cstdio>

namespace gpumem {

std::string grouped_number(double value, int decimals) {
  if (!std::isfinite(value)) return "?";
  char text[64];
  std::snprintf(text, sizeof text, "%.*f", decimals, std::fabs(value));
  std::string digits = text;
  const std::size_t point = digits.find('.');
  std::string whole = digits.substr(0, point);
  const std::string fraction = point == std::string::npos ? "" : digits.substr(point);
  for (std::size_t i = whole.size(); i > 3; i -= 3) whole.insert(i - 3, ",");
  const bool zero = digits.find_first_of("123456789") == std::string::npos;
  return (value < 0 && !zero ? "-" : "") + whole + fraction;
}

std::string gib_text(std::uint64_t bytes) {
  return grouped_number(static_cast<double>(bytes) / (1ULL << 30), 1) + " GiB";
}

}  // namespace gpumem
