#pragma once
// The command line's help text.

namespace gpumem::cli {

// Every command and option, as `gpumem --help` prints it.
const char* usage_text();

}  // namespace gpumem::cli
