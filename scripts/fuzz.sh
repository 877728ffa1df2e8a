#!/usr/bin/env bash
# Builds the JSON API's libFuzzer target with clang (ASan + UBSan) and runs it for SECONDS
# (default 60) from the seed corpus and dictionary in tests/fuzz/; new inputs it finds go to
# build/fuzz/corpus, a crash's input to build/fuzz/. Without clang's fuzzer runtime it says so and
# exits 0 (scripts/test.sh runs it when clang is there). A longer campaign:
#   scripts/fuzz.sh 3600
set -euo pipefail
cd "$(dirname "$0")/.."
seconds="${1:-60}"
if ! command -v clang++ >/dev/null || ! echo 'extern "C" int LLVMFuzzerTestOneInput(const char*, unsigned long) { return 0; }' |
    clang++ -x c++ -fsanitize=fuzzer - -o /dev/null 2>/dev/null; then
  echo "fuzz: clang++ with libFuzzer not installed (Debian: clang libclang-rt-dev); skipped"
  exit 0
fi
[ -f build/fuzz/build.ninja ] || cmake --preset fuzz >/dev/null
cmake --build --preset fuzz >/dev/null
mkdir -p build/fuzz/corpus build/fuzz/artifacts
echo "== fuzz: the JSON API for ${seconds} s"
build/fuzz/tests/fuzz/gpumem_fuzz build/fuzz/corpus tests/fuzz/seeds \
  -dict=tests/fuzz/api.dict -max_total_time="$seconds" -timeout=30 -rss_limit_mb=4096 \
  -max_len=8192 -artifact_prefix=build/fuzz/artifacts/ -print_final_stats=1 2>&1 | tail -n 12
