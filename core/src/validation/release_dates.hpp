#pragma once
// The library releases current at a run's date (validation format, `workload.software.date`):
// what `validate` reads for a release a point leaves unstated, so that a dated point gets the
// behaviours of its era (software_stack, generate_release) instead of today's.

#include <optional>
#include <string>

#include "gpumem/runtime/software_stack.hpp"

namespace gpumem {

enum class dated_library { torch, transformers, peft, bitsandbytes, autoawq };

// The release of `library` a run dated `date` ("YYYY-MM", or "YYYY") is read as running: the
// latest published before the date's month began (a year alone: before its 1 July, the middle of
// the period it names). None when the date is malformed, comes before the library's first
// tabulated release, or comes after the months the table covers (today's behaviours stand).
std::optional<library_release> release_current_at(dated_library library, const std::string& date);

// What a point's note says of a release read from its date: "; torch release not stated: read as
// 2.3, current at 2024-05" ("in mid-2024" for a year alone).
std::string dated_reading(const char* library, const library_release& release,
                          const std::string& date);

}  // namespace gpumem
