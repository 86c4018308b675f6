#!/usr/bin/env bash
# Builds the libFuzzer targets with clang, AddressSanitizer and UndefinedBehaviorSanitizer (a tree of its own under
# the build directory) and runs them: the fuzz tier's ctest entries (tests/fuzz/CMakeLists.txt).
# Usage: run_fuzz_targets.sh <source dir> <build dir> [runs per target]
set -euo pipefail
src=$1 build=$2 runs=${3:-20000}
if ! command -v clang++ >/dev/null; then
  echo "fuzz targets: skipped, clang++ is not installed (scripts/install_deps.sh installs it)"
  exit 0
fi
source "$src/tests/sanitize/sanitized_tree.sh"
dir=$build/fuzz
CC=clang CXX=clang++ configure_sanitized_tree "$src" "$dir" address,undefined -DCHORUS_FUZZ=ON -DCHORUS_FUZZ_RUNS="$runs"
cmake --build "$dir" -j"$(nproc)" --target tier_fuzz >/dev/null
(cd "$dir" && ctest --output-on-failure -L '^fuzz$' -j"$(nproc)")
