#!/usr/bin/env bash
# Runs every test: the doctest suite natively, under ASan+UBSan, and as wasm under node (ctest),
# a minute of fuzzing of the JSON API (where clang is installed), the measurement tool's unit
# tests, then the node:test suites for the facade, the CLI, the presets, the serving script, the
# adversarial corpus and the page in Chromium.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
scripts/check_format.sh
export NODE_PATH=/usr/share/nodejs
[ -f build/native-asan/build.ninja ] || cmake --preset native-asan >/dev/null
cmake --build --preset native-asan
for preset in native native-asan wasm; do
  echo "== ctest --preset $preset"
  ctest --preset "$preset"
done
# The JSON API's libFuzzer target for a minute, where clang's fuzzer runtime is installed.
scripts/fuzz.sh 60
echo "== python3 -m unittest (tools/measure: the GPU measurement tool's mapping, without a GPU)"
python3 -m unittest tools/measure/test_measure.py
echo "== node --test"
node --test tests/js/*.test.mjs
