#!/usr/bin/env bash
# One libFuzzer target for a bounded number of inputs from a fixed seed; new inputs go to a scratch corpus, never
# into the sources. A crash, a sanitizer report or a leak fails.
# Usage: fuzz_one.sh <fuzz target> <runs> <scratch corpus dir> [seed dirs...]
set -euo pipefail
target=$1 runs=$2 scratch=$3
shift 3
rm -rf "$scratch" && mkdir -p "$scratch"
echo "== $(basename "$target"): $runs inputs"
"$target" -seed=1 -runs="$runs" -max_len=4096 -timeout=10 -print_final_stats=1 "$scratch" "$@" 2>&1 |
  grep -E "^(#[0-9]+ +DONE|stat::number_of_executed_units|==[0-9]+==ERROR|SUMMARY)|runtime error" || true
exit "${PIPESTATUS[0]}"
