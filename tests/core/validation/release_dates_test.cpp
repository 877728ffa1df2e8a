// The release current at a run's date: the latest published before the date's month began (a
// year alone: before its 1 July), none outside the tables.

#include "validation/release_dates.hpp"

#include <doctest/doctest.h>

namespace gpumem {
namespace {

std::string read(dated_library library, const char* date) {
  const auto release = release_current_at(library, date);
  return release ? release_name(*release) : "none";
}

TEST_CASE("a release counts from the month after it was published") {
  // torch 2.0: 15 March 2023; 2.5: 17 October 2024.
  CHECK(read(dated_library::torch, "2023-03") == "1.13");
  CHECK(read(dated_library::torch, "2023-04") == "2.0");
  CHECK(read(dated_library::torch, "2024-10") == "2.4");
  CHECK(read(dated_library::torch, "2024-11") == "2.5");
  // transformers 4.31 (18 July 2023), 4.36 (11 December 2023), 4.42 (26 June 2024).
  CHECK(read(dated_library::transformers, "2023-07") == "4.30");
  CHECK(read(dated_library::transformers, "2023-08") == "4.31");
  CHECK(read(dated_library::transformers, "2024-01") == "4.36");
  CHECK(read(dated_library::transformers, "2024-07") == "4.42");
  // PEFT 0.12 (24 July 2024), bitsandbytes 0.45 (5 December 2024).
  CHECK(read(dated_library::peft, "2024-07") == "0.11");
  CHECK(read(dated_library::peft, "2024-08") == "0.12");
  CHECK(read(dated_library::bitsandbytes, "2024-12") == "0.44");
  CHECK(read(dated_library::bitsandbytes, "2025-01") == "0.45");
}

TEST_CASE("a year alone is read at its middle") {
  CHECK(read(dated_library::torch, "2024") == "2.3");  // 2.4 came on 24 July
  CHECK(read(dated_library::transformers, "2023") == "4.30");
}

TEST_CASE("no release outside the tables or for a malformed date") {
  CHECK(read(dated_library::transformers, "2020-06") == "none");  // before 4.0
  CHECK(read(dated_library::torch, "2030-01") == "none");         // releases not tabulated yet
  for (const char* date :
       {"", "2023-13", "2023-00", "23-01", "2023/01", "2023-1", "20234", "abcd"}) {
    CAPTURE(date);
    CHECK(read(dated_library::torch, date) == "none");
  }
}

}  // namespace
}  // namespace gpumem
