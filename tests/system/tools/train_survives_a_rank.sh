#!/usr/bin/env bash
# chorus-train loses rank 2 of 4 at step 5 of ZeRO-2 (on 1920 images): the survivors agree the step failed, shrink,
# rebuild from their shards and rank 2's copy on rank 3, and finish the epoch on 3 ranks with no step lost. Then it
# loses ranks 1 and 2 together at step 7, so rank 1's shard dies with its copy: the survivors go on from the disk
# checkpoint of step 6, losing 1 step.
# Usage: train_survives_a_rank.sh <build dir>
set -uo pipefail
fail() { echo "FAILED: $*"; exit 1; }
out=$("$1/tools/chorus-train" --mode zero2 --ranks 4 --kill-rank 2 --at-step 5 --samples 1920 --epochs 1 2>&1)
status=$?
echo "$out"
[ $status -eq 0 ] || fail "chorus-train exited with $status"
grep -q "rank 2: stops at step 5" <<<"$out" || fail "rank 2 did not stop"
grep -q "going on with 3 ranks from step 5 (state from memory, 0 committed step(s) lost)" <<<"$out" ||
  fail "the survivors did not go on from their shards"
grep -qE "epoch 1/1 .* on 3 ranks" <<<"$out" || fail "the epoch did not end on 3 ranks"

dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
out=$("$1/tools/chorus-train" --mode zero2 --ranks 4 --kill-rank 1,2 --at-step 7 --disk-every 2 --disk-dir "$dir" \
  --samples 1920 --epochs 1 2>&1)
status=$?
echo "$out"
[ $status -eq 0 ] || fail "chorus-train exited with $status"
grep -q "going on with 2 ranks from step 6 (state from $dir at step 6, 1 committed step(s) lost)" <<<"$out" ||
  fail "the survivors did not go on from the disk checkpoint"
grep -qE "epoch 1/1 .* on 2 ranks" <<<"$out" || fail "the epoch did not end on 2 ranks"
