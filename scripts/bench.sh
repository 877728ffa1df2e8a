#!/usr/bin/env bash
# Prints the speed figures: Google Benchmark on the native core (optimised build) and the wasm
# facade under Node. Figures, not pass/fail: targets are stated in bench/wasm_bench.mjs.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh >/dev/null
[ -f build/native-release/build.ninja ] || cmake --preset native-release >/dev/null
cmake --build --preset native-release >/dev/null
if [ -x build/native-release/bench/gpumem_bench ]; then
  build/native-release/bench/gpumem_bench
else
  echo "(Google Benchmark not installed: apt-get install libbenchmark-dev for the native figures)"
fi
node bench/wasm_bench.mjs
node bench/corpus_bench.mjs
node bench/page_bench.mjs
