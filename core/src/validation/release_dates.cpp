#include "validation/release_dates.hpp"

#include <cctype>
#include <cstddef>

namespace gpumem {

namespace {

// A minor release and the day it was published (yyyymmdd).
struct release_day {
  unsigned major_number;
  unsigned minor_number;
  unsigned published;
  unsigned patch_number = 0;  // AutoAWQ's behaviour changes within 0.2.x
};

// Every minor release of a library up to `known_until` (yyyymmdd, exclusive): no release
// published before that day is missing.
struct release_table {
  const release_day* rows;
  std::size_t count;
  unsigned known_until;
};

// torch: the PyTorch wiki's "PyTorch Versions" table (release dates through 2.3; its 1.11 row
// reads 02/10/2022 where the release and its blog post are of 10 March 2022) and the PyTorch
// blog's release announcements (2.4 to 2.9).
constexpr release_day torch_rows[] = {
    {1, 0, 20181207},  {1, 1, 20190430},  {1, 2, 20190808},  {1, 3, 20191010},  {1, 4, 20200115},
    {1, 5, 20200421},  {1, 6, 20200728},  {1, 7, 20201027},  {1, 8, 20210304},  {1, 9, 20210615},
    {1, 10, 20211021}, {1, 11, 20220310}, {1, 12, 20220628}, {1, 13, 20221028}, {2, 0, 20230315},
    {2, 1, 20231004},  {2, 2, 20240130},  {2, 3, 20240424},  {2, 4, 20240724},  {2, 5, 20241017},
    {2, 6, 20250129},  {2, 7, 20250423},  {2, 8, 20250806},  {2, 9, 20251015},
};

// transformers: the v4.x.0 release tags of huggingface/transformers (GitHub releases).
constexpr release_day transformers_rows[] = {
    {4, 0, 20201130},  {4, 1, 20201217},  {4, 2, 20210113},  {4, 3, 20210208},  {4, 4, 20210316},
    {4, 5, 20210406},  {4, 6, 20210512},  {4, 7, 20210617},  {4, 8, 20210623},  {4, 9, 20210722},
    {4, 10, 20210831}, {4, 11, 20210927}, {4, 12, 20211029}, {4, 13, 20211209}, {4, 14, 20211215},
    {4, 15, 20211222}, {4, 16, 20220127}, {4, 17, 20220303}, {4, 18, 20220407}, {4, 19, 20220512},
    {4, 20, 20220616}, {4, 21, 20220727}, {4, 22, 20220914}, {4, 23, 20221010}, {4, 24, 20221101},
    {4, 25, 20221202}, {4, 26, 20230124}, {4, 27, 20230315}, {4, 28, 20230413}, {4, 29, 20230510},
    {4, 30, 20230608}, {4, 31, 20230718}, {4, 32, 20230822}, {4, 33, 20230907}, {4, 34, 20231003},
    {4, 35, 20231102}, {4, 36, 20231211}, {4, 37, 20240122}, {4, 38, 20240221}, {4, 39, 20240320},
    {4, 40, 20240418}, {4, 41, 20240517}, {4, 42, 20240626}, {4, 43, 20240723}, {4, 44, 20240806},
    {4, 45, 20240925}, {4, 46, 20241024}, {4, 47, 20241205}, {4, 48, 20250110}, {4, 49, 20250217},
    {4, 50, 20250321}, {4, 51, 20250405}, {4, 52, 20250520}, {4, 53, 20250626}, {4, 54, 20250725},
    {4, 55, 20250805}, {4, 56, 20250829}, {4, 57, 20251003},
};

// peft: the v0.x.0 tags of huggingface/peft (their dates in the repository).
constexpr release_day peft_rows[] = {
    {0, 1, 20230210},  {0, 2, 20230309},  {0, 3, 20230504},  {0, 4, 20230717},  {0, 5, 20230822},
    {0, 6, 20231102},  {0, 7, 20231206},  {0, 8, 20240130},  {0, 9, 20240228},  {0, 10, 20240321},
    {0, 11, 20240516}, {0, 12, 20240724}, {0, 13, 20240925}, {0, 14, 20241206}, {0, 15, 20250319},
    {0, 16, 20250703}, {0, 17, 20250801}, {0, 18, 20251113}, {0, 19, 20260414}, {0, 20, 20260728},
};

// bitsandbytes: the 0.x.0 tags of bitsandbytes-foundation/bitsandbytes (0.39 by its first tag,
// 0.39.1).
constexpr release_day bitsandbytes_rows[] = {
    {0, 35, 20221009}, {0, 36, 20230104}, {0, 37, 20230201}, {0, 38, 20230412},
    {0, 39, 20230619}, {0, 40, 20230711}, {0, 41, 20230722}, {0, 42, 20240107},
    {0, 43, 20240308}, {0, 44, 20240923}, {0, 45, 20241205}, {0, 46, 20250527},
    {0, 47, 20250811}, {0, 48, 20250930}, {0, 49, 20251211}, {0, 50, 20260724},
};

// AutoAWQ: every tag of casper-hansen/AutoAWQ with its date, as fetched in November 2026 (the
// repository was archived after 0.2.9); 0.2.7.post1-3 read as 0.2.7.
constexpr release_day autoawq_rows[] = {
    {0, 1, 20230921, 0}, {0, 1, 20231001, 1}, {0, 1, 20231002, 2}, {0, 1, 20231005, 3},
    {0, 1, 20231006, 4}, {0, 1, 20231028, 5}, {0, 1, 20231104, 6}, {0, 1, 20231116, 7},
    {0, 1, 20231223, 8}, {0, 2, 20240215, 0}, {0, 2, 20240216, 1}, {0, 2, 20240217, 2},
    {0, 2, 20240302, 3}, {0, 2, 20240324, 4}, {0, 2, 20240502, 5}, {0, 2, 20240723, 6},
    {0, 2, 20241116, 7}, {0, 2, 20250120, 8}, {0, 2, 20250511, 9},
};

template <std::size_t n>
constexpr release_table table_of(const release_day (&rows)[n], unsigned known_until) {
  return {rows, n, known_until};
}

// Each table's reach: torch's and transformers' rows end with the releases of October 2025 (2.9,
// 4.57), after which this table was written without the later ones; PEFT's and bitsandbytes'
// come from their repositories' tags as fetched in November 2026.
release_table table_for(dated_library library) {
  switch (library) {
    case dated_library::torch:
      return table_of(torch_rows, 20260101);
    case dated_library::transformers:
      return table_of(transformers_rows, 20251101);
    case dated_library::peft:
      return table_of(peft_rows, 20261101);
    case dated_library::bitsandbytes:
      return table_of(bitsandbytes_rows, 20261101);
    case dated_library::autoawq:
      return table_of(autoawq_rows, 20261101);
  }
  return table_of(torch_rows, 20260101);
}

// "YYYY-MM" or "YYYY" as the day before which a run's releases were published (yyyymmdd: the
// month's first day; a year's 1 July), or 0 when the text is neither.
unsigned releases_before(const std::string& date) {
  const auto digits = [&](std::size_t from, std::size_t count) {
    unsigned value = 0;
    for (std::size_t i = from; i < from + count; ++i) {
      if (!std::isdigit(static_cast<unsigned char>(date[i]))) return 0U;
      value = value * 10 + static_cast<unsigned>(date[i] - '0');
    }
    return value;
  };
  if (date.size() != 4 && !(date.size() == 7 && date[4] == '-')) return 0;
  const unsigned year = digits(0, 4);
  if (year < 2000) return 0;
  if (date.size() == 4) return year * 10000 + 701;
  const unsigned month = digits(5, 2);
  if (month < 1 || month > 12) return 0;
  return year * 10000 + month * 100 + 1;
}

}  // namespace

std::optional<library_release> release_current_at(dated_library library, const std::string& date) {
  const unsigned before = releases_before(date);
  const release_table table = table_for(library);
  if (before == 0 || before > table.known_until) return std::nullopt;
  std::optional<library_release> current;
  for (std::size_t i = 0; i < table.count && table.rows[i].published < before; ++i)
    current = library_release{table.rows[i].major_number, table.rows[i].minor_number,
                              table.rows[i].patch_number};
  return current;
}

std::string dated_reading(const char* library, const library_release& release,
                          const std::string& date) {
  return std::string("; ") + library + " release not stated: read as " + release_name(release) +
         ", current " + (date.size() == 4 ? "in mid-" + date : "at " + date);
}

}  // namespace gpumem
