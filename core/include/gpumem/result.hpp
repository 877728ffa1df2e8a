#pragma once
// A value or an error, never both: the core reports bad input this way instead of throwing
// (the wasm build cannot catch C++ exceptions; see ../shared/design/architecture.md "Errors").

#include <string>
#include <utility>
#include <variant>

namespace gpumem {

// A stable, machine-readable code (documented in docs/api.md), the request field it concerns
// and a message that names the field and the accepted range.
struct error {
  std::string code;
  std::string field;
  std::string message;
  // A numeric field out of its range: the range, in the field's own unit, so that a form can say
  // it in its units (the page's GiB for a byte count).
  bool has_range = false;
  double range_min = 0;
  double range_max = 0;
};

template <class T>
class result {
 public:
  result(T value) : state_(std::move(value)) {}          // NOLINT(google-explicit-constructor)
  result(error failure) : state_(std::move(failure)) {}  // NOLINT(google-explicit-constructor)

  bool ok() const { return std::holds_alternative<T>(state_); }
  const T& value() const { return std::get<T>(state_); }
  T& value() { return std::get<T>(state_); }
  const error& failure() const { return std::get<error>(state_); }

 private:
  std::variant<T, error> state_;
};

}  // namespace gpumem
