#!/usr/bin/env bash
# The abort and nonblocking tests (tests/capi/abort_test.cc), built with a sanitizer and run for thousands of
# watchdog rounds: any data race (thread) or use after free (address) is a failure.
# Usage: abort_under_sanitizer.sh <source dir> <build dir> <thread|address,undefined> [rounds]
set -euo pipefail
src=$1 build=$2 sanitizer=$3 rounds=${4:-2000}
source "$src/tests/sanitize/sanitized_tree.sh"
dir=$build/sanitize-${sanitizer//,/-}
configure_sanitized_tree "$src" "$dir" "$sanitizer"
cmake --build "$dir" -j"$(nproc)" --target capi_abort_test >/dev/null
CHORUS_ABORT_ITERATIONS=$rounds "$dir/tests/capi_abort_test"
