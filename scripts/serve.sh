#!/usr/bin/env bash
# Builds everything, then serves the calculator from dist/ on 127.0.0.1 (PORT, default 8080).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/build.sh
exec node scripts/serve.mjs dist "${PORT:-8080}"
