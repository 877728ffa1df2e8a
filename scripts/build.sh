#!/usr/bin/env bash
# Builds everything: the native CLI (build/native/gpumem), the wasm module and facade
# (build/wasm/wasm/), and the static site (dist/). Incremental after the first run.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup.sh
export NODE_PATH=/usr/share/nodejs  # emcc's acorn (toolchain.md Q1)
for preset in native wasm; do
  [ -f "build/$preset/build.ninja" ] || cmake --preset "$preset" >/dev/null
  cmake --build --preset "$preset"
done
node scripts/assemble_dist.mjs
