#include "gpumem/runtime/software_stack.hpp"

#include <cctype>
#include <cstddef>

namespace gpumem {

namespace {

// The suffixes PEP 440 allows after the release numbers: a pre-release (a, b, rc), a
// post-release, a dev release (each optionally after a separator), or a +local part.
bool release_suffix(const std::string& rest) {
  if (rest.empty() || rest[0] == '+') return true;
  std::size_t at = rest[0] == '.' || rest[0] == '-' || rest[0] == '_' ? 1 : 0;
  for (const char* tag : {"a", "b", "rc", "post", "dev", "alpha", "beta", "pre"}) {
    if (rest.compare(at, std::string(tag).size(), tag) == 0) return true;
  }
  return false;
}

}  // namespace

std::optional<library_release> parse_library_release(const std::string& text) {
  std::size_t at = text.size() > 0 && (text[0] == 'v' || text[0] == 'V') ? 1 : 0;
  unsigned parts[3] = {0, 0, 0};
  int read = 0;
  while (at < text.size() && std::isdigit(static_cast<unsigned char>(text[at]))) {
    unsigned value = 0;
    std::size_t digits = 0;
    while (at < text.size() && std::isdigit(static_cast<unsigned char>(text[at]))) {
      if (++digits > 6) return std::nullopt;  // no release number is that long
      value = value * 10 + static_cast<unsigned>(text[at++] - '0');
    }
    if (read < 3) parts[read] = value;
    ++read;
    // Another number follows a dot; anything else ends the release numbers.
    if (at + 1 < text.size() && text[at] == '.' &&
        std::isdigit(static_cast<unsigned char>(text[at + 1]))) {
      ++at;
      continue;
    }
    break;
  }
  if (read == 0 || !release_suffix(text.substr(at))) return std::nullopt;
  return library_release{parts[0], parts[1], parts[2]};
}

bool transformers_llama_code(const std::string& model_type) {
  for (const char* type : {"llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "gemma", "phi3"}) {
    if (model_type == type) return true;
  }
  return false;
}

std::string release_name_with_patch(const library_release& release) {
  return release_name(release) + "." + std::to_string(release.patch_number);
}

std::string release_name(const library_release& release) {
  return std::to_string(release.major_number) + "." + std::to_string(release.minor_number);
}

}  // namespace gpumem
