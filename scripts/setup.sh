#!/usr/bin/env bash
# Installs what gpumem needs to build and test, only where it is missing (safe to re-run).
# On Debian/Ubuntu it uses apt-get; elsewhere it names the packages to install by hand:
#   CMake >= 3.25, Ninja, a C++17 compiler, clang-format, Emscripten 3.1.x, doctest 2.4, nlohmann/json 3.10+,
#   libyaml (the CLI's YAML launch files),
#   Node.js >= 18 with npm, Python 3 (the measurement tool's tests), and Chromium (page tests);
#   clang's libFuzzer runtime where clang is there (scripts/fuzz.sh).
set -euo pipefail
cd "$(dirname "$0")/.."

missing=()
command -v cmake >/dev/null || missing+=(cmake)
command -v ninja >/dev/null || missing+=(ninja-build)
command -v git >/dev/null || missing+=(git)
command -v g++ >/dev/null || missing+=(g++)
command -v clang-format >/dev/null || missing+=(clang-format)
command -v emcc >/dev/null || missing+=(emscripten)
[ -f /usr/include/doctest/doctest.h ] || missing+=(doctest-dev)
[ -f /usr/include/nlohmann/json.hpp ] || missing+=(nlohmann-json3-dev)
[ -f /usr/include/yaml.h ] || missing+=(libyaml-dev)
command -v python3 >/dev/null || missing+=(python3)
command -v node >/dev/null || missing+=(nodejs)
command -v npm >/dev/null || missing+=(npm)
[ -x /usr/bin/chromium ] || missing+=(chromium)
[ -f /usr/include/benchmark/benchmark.h ] || missing+=(libbenchmark-dev)
# clang's libFuzzer runtime, for scripts/fuzz.sh (emscripten brings clang-14 itself).
if command -v clang++-14 >/dev/null && ! ls /usr/lib/llvm-14/lib/clang/*/lib/linux/libclang_rt.fuzzer-x86_64.a >/dev/null 2>&1; then
  missing+=(libclang-rt-14-dev)
fi

if [ ${#missing[@]} -gt 0 ]; then
  if ! command -v apt-get >/dev/null; then
    echo "gpumem: please install: ${missing[*]} (Debian package names; see the comment in $0)" >&2
    exit 1
  fi
  sudo=""
  [ "$(id -u)" = 0 ] || sudo="sudo"
  echo "gpumem: installing ${missing[*]}"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq "${missing[@]}" >/dev/null
fi

# Node modules exactly as locked (playwright-core drives Debian's Chromium; it never downloads
# a browser of its own).
if [ ! -f node_modules/.package-lock.json ] || [ package-lock.json -nt node_modules/.package-lock.json ]; then
  npm ci --no-audit --no-fund --loglevel=error
fi
