#!/usr/bin/env bash
# The suite in a tree built with AddressSanitizer + UndefinedBehaviorSanitizer, then the tests that run ranks as
# threads of one process (the selection below) in a tree built with ThreadSanitizer, in each the watchdog pattern (a
# call waiting, another thread aborting it) for many rounds, and last the libFuzzer targets in a clang tree of their
# own (tests/fuzz/run_fuzz_targets.sh). Any report fails the run.
# Left to the plain suite: the install test, the format check, the plan simulator above 16 ranks and the device
# plans' simulator (single-threaded plan logic whose code paths 2 to 16 ranks already cover: 40% and 154 s of the
# suite's time under the sanitizers), the thread collectives at 7 and 8 ranks (3 and 4 ranks take the same paths,
# odd and even: 4 minutes under AddressSanitizer), and the
# run of every algorithm forced at every size (220 s of the plain suite by itself; the plan simulator runs every
# algorithm's plans through the real engine here, and the thread and process suites run the selected ones), and
# chorus-tune's end-to-end check (timing runs of every algorithm: 100 s under the sanitizers, its tuning file's
# parsing covered by the unit tests).
# Usage: suite_under_sanitizers.sh <source dir> <build dir>     (`make test-sanitized`; CI runs it after `make test`)
set -euo pipefail
src=$(cd "$1" && pwd) build=$2
source "$src/tests/sanitize/sanitized_tree.sh"
jobs=$(nproc)

tree=$build/sanitize-address-undefined
echo "== AddressSanitizer + UndefinedBehaviorSanitizer: building $tree"
configure_sanitized_tree "$src" "$tree" address,undefined
cmake --build "$tree" -j"$jobs" >/dev/null
echo "== AddressSanitizer + UndefinedBehaviorSanitizer: the suite"
(cd "$tree" && ctest --output-on-failure -j"$jobs" --timeout 1800 \
  -E '^(CapiAbort\.WatchdogAbortsAWaitingCall|install_and_consume|clang_format|tune_choices|ThreadCommunicator/ForcedAlgorithm\..*|Ranks/PlanSimulator\..*/(1[7-9]|[2-9][0-9])|PeerPlanSimulator\.EveryAlgorithmAtOneToSixtyFourRanks|Loopback/ThreadCollectives\..*_[78]ranks( .*)?)$')
# The watchdog pattern, each round aborting a waiting call at a random moment: a use after free or a leak in the
# abort path shows up in some rounds only.
echo "== AddressSanitizer + UndefinedBehaviorSanitizer: 1000 rounds of an abort of a waiting call"
CHORUS_ABORT_ITERATIONS=1000 "$tree/tests/capi_abort_test" --gtest_brief=1 --gtest_filter=CapiAbort.WatchdogAbortsAWaitingCall

# ThreadSanitizer makes collectives 10-30x slower: the threaded tests run at 3 ranks (odd, so rings pipeline
# unevenly) plus every other thread test, and the training tests' thread variants (their forked variants test no
# threading, and ThreadSanitizer cannot follow a fork of a threaded process).
tree=$build/sanitize-thread
declare -A threaded=(
  [collectives_threads_test]='ThreadCommunicator.*:Loopback/*_3ranks:-ThreadCommunicator/ForcedAlgorithm.*'
  [fifo_test]='*' [capi_abort_test]='*' [capi_split_test]='*'
  [capi_one_sided_test]='OneSided.SignalsCountPerIndexAndContext:OneSided.InvalidCallsNameTheirCause'
  [data_parallel_test]='-*processes*' [zero_test]='-*processes*' [tensor_parallel_test]='-*processes*'
  [moe_test]='-*processes*' [pipeline_parallel_test]='-*Processes*' [balance_test]='-*Processes'
  [param_server_test]='-*Killed*:*Dead*' [shard_keeper_test]='*'
)
echo "== ThreadSanitizer: building ${!threaded[*]} chorus_soak in $tree"
configure_sanitized_tree "$src" "$tree" thread
cmake --build "$tree" -j"$jobs" --target "${!threaded[@]}" chorus_soak >/dev/null
# capi_abort_test's watchdog rounds: a round takes about 190 ms under ThreadSanitizer.
for test in "${!threaded[@]}"; do
  echo "== ThreadSanitizer: $test ${threaded[$test]}"
  CHORUS_ABORT_ITERATIONS=300 timeout 1200 "$tree/tests/$test" --gtest_brief=1 --gtest_filter="${threaded[$test]}"
done
# The soak's random mix on 4 thread ranks (the suite above ran its process runs under the other sanitizers).
echo "== ThreadSanitizer: chorus_soak, 4 thread ranks"
timeout 1200 "$tree/tests/chorus_soak" --threads --nranks 4 --seed 1 --seeds 2 --calls 200 --deadline 900

"$src/tests/fuzz/run_fuzz_targets.sh" "$src" "$build"
echo "== no sanitizer reports"
