#include "gpumem/estimate.hpp"

namespace gpumem {

const char* method_name(parallel_method method) {
  switch (method) {
    case parallel_method::single:
      return "single";
    case parallel_method::cdp:
      return "cdp";
    case parallel_method::adp:
      return "adp";
    case parallel_method::tp:
      return "tp";
    case parallel_method::dp_tp:
      return "dp_tp";
  }
  return "single";
}

}  // namespace gpumem
