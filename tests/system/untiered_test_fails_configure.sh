#!/usr/bin/env bash
# A test registered without a tier, or with two, fails the configure and is named (cmake/test_tiers.cmake); one with
# a tier configures.
# Usage: untiered_test_fails_configure.sh <source dir> <scratch dir>
set -euo pipefail
src=$1 work=$2
rm -rf "$work" && mkdir -p "$work"
project() {  # project <name> <test registration...>
  mkdir -p "$work/$1"
  cat > "$work/$1/CMakeLists.txt" <<CMAKE
cmake_minimum_required(VERSION 3.25)
project(tiers_$1 LANGUAGES NONE)
enable_testing()
include($src/cmake/test_tiers.cmake)
cmake_language(DEFER CALL chorus_check_tiers)
$2
CMAKE
  cmake -S "$work/$1" -B "$work/$1/build" > "$work/$1.log" 2>&1
}
project tiered 'chorus_add_test(NAME fine TIER unit COMMAND true)
chorus_add_test(NAME fine_and_slow TIER threads SLOW COMMAND true)'
! project untiered 'add_test(NAME lonely COMMAND true)' || { echo "a test without a tier configured"; exit 1; }
grep -q "lonely (NOTFOUND)" "$work/untiered.log" || { cat "$work/untiered.log"; exit 1; }
! project two_tiers 'add_test(NAME greedy COMMAND true)
set_tests_properties(greedy PROPERTIES LABELS "unit;system")' || { echo "a test with two tiers configured"; exit 1; }
grep -q "greedy" "$work/two_tiers.log" || { cat "$work/two_tiers.log"; exit 1; }
! project unknown_tier 'chorus_add_test(NAME odd TIER nightly COMMAND true)' || { echo "an unknown tier configured"; exit 1; }
grep -q "'nightly' is no tier" "$work/unknown_tier.log" || { cat "$work/unknown_tier.log"; exit 1; }
echo "untiered, doubly tiered and unknown tiers fail the configure; tiered tests configure"
