#!/usr/bin/env bash
# Fails when a C++ file differs from .clang-format (Google base, 100 columns).
set -euo pipefail
cd "$(dirname "$0")/.."
files=$(git ls-files --cached --others --exclude-standard '*.cpp' '*.hpp' 2>/dev/null || find core cli wasm tests -name '*.[ch]pp')
clang-format --dry-run -Werror $files
echo "clang-format: $(echo "$files" | wc -w) files formatted"
