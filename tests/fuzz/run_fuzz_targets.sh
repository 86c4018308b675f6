#!/usr/bin/env bash
# Builds the libFuzzer targets with clang, AddressSanitizer and UndefinedBehaviorSanitizer (a tree of its own under
# the build directory) and runs each for a bounded number of inputs from a fixed seed, so a run is repeatable; a
# crash, a sanitizer report or a leak fails. New inputs found go to a scratch corpus, never into the sources.
# Usage: run_fuzz_targets.sh <source dir> <build dir> [runs]
set -euo pipefail
src=$1 build=$2 runs=${3:-20000}
if ! command -v clang++ >/dev/null; then
  echo "fuzz targets: skipped, clang++ is not installed (scripts/install_deps.sh installs it)"
  exit 0
fi
source "$src/tests/sanitize/sanitized_tree.sh"
dir=$build/fuzz
CC=clang CXX=clang++ configure_sanitized_tree "$src" "$dir" address,undefined -DCHORUS_FUZZ=ON
targets=(topology_xml_fuzz store_values_fuzz call_header_fuzz store_messages_fuzz)
cmake --build "$dir" -j"$(nproc)" --target "${targets[@]}" >/dev/null
for target in "${targets[@]}"; do
  scratch=$dir/corpus/$target
  rm -rf "$scratch" && mkdir -p "$scratch"
  seeds=()
  [ -d "$src/tests/fuzz/seeds/$target" ] && seeds+=("$src/tests/fuzz/seeds/$target")
  [ "$target" = topology_xml_fuzz ] && seeds+=("$src/tests/data/topologies")
  # The rendezvous target opens a connection per input, and hwloc parses each topology input in about 7 ms under the
  # sanitizers (2,000 inputs took 15 s, the other targets' 0.4-1 s): fewer of them.
  n=$runs
  [ "$target" = store_messages_fuzz ] && n=$((runs / 10))
  [ "$target" = topology_xml_fuzz ] && n=$((runs / 4))
  echo "== $target: $n inputs"
  "$dir/tests/fuzz/$target" -seed=1 -runs="$n" -max_len=4096 -timeout=10 -print_final_stats=1 "$scratch" \
    "${seeds[@]}" 2>&1 | grep -E "^(#[0-9]+ +DONE|stat::number_of_executed_units|==[0-9]+==ERROR|SUMMARY)|runtime error" \
    || true
  test "${PIPESTATUS[0]}" -eq 0
done
