#pragma once
// Plain-text tables for the CLI's human-readable output: left-aligned text, right-aligned numbers.

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

namespace gpumem::cli {

// 6738415616 -> "6,738,415,616"
inline std::string group_digits(std::uint64_t value) {
  std::string digits = std::to_string(value);
  for (int at = static_cast<int>(digits.size()) - 3; at > 0; at -= 3)
    digits.insert(static_cast<std::size_t>(at), ",");
  return digits;
}

inline std::string fixed(double value, int decimals) {
  char buffer[64];
  std::snprintf(buffer, sizeof buffer, "%.*f", decimals, value);
  return buffer;
}

class table {
 public:
  explicit table(std::vector<std::string> header) : rows_{std::move(header)} {}

  void row(std::vector<std::string> cells) { rows_.push_back(std::move(cells)); }

  std::string render() const {
    std::vector<std::size_t> widths(rows_.front().size(), 0);
    for (const auto& r : rows_) {
      for (std::size_t c = 0; c < r.size() && c < widths.size(); ++c) {
        widths[c] = std::max(widths[c], r[c].size());
      }
    }
    std::string out;
    for (std::size_t i = 0; i < rows_.size(); ++i) {
      for (std::size_t c = 0; c < widths.size(); ++c) {
        const std::string cell = c < rows_[i].size() ? rows_[i][c] : "";
        const std::string pad(widths[c] - cell.size(), ' ');
        out += (c == 0 ? "" : "  ") + (numeric(cell) ? pad + cell : cell + pad);
      }
      while (!out.empty() && out.back() == ' ') out.pop_back();
      out += "\n";
      if (i == 0) {
        for (std::size_t c = 0; c < widths.size(); ++c)
          out += (c == 0 ? "" : "  ") + std::string(widths[c], '-');
        out += "\n";
      }
    }
    return out;
  }

 private:
  static bool numeric(const std::string& cell) {
    return !cell.empty() && cell.find_first_not_of("0123456789,.-") == std::string::npos;
  }

  std::vector<std::vector<std::string>> rows_;
};

}  // namespace gpumem::cli
