#!/usr/bin/env bash
# chorus-train loses rank 2 of 4 at step 5 of ZeRO-2 (on 1920 images): the survivors agree the step failed, shrink,
# rebuild from the last committed state and finish the epoch on 3 ranks.
# Usage: train_survives_a_rank.sh <build dir>
set -uo pipefail
out=$("$1/tools/chorus-train" --mode zero2 --ranks 4 --kill-rank 2 --at-step 5 --samples 1920 --epochs 1 2>&1)
status=$?
echo "$out"
[ $status -eq 0 ] || { echo "FAILED: chorus-train exited with $status"; exit 1; }
grep -q "rank 2: stops at step 5" <<<"$out" || { echo "FAILED: rank 2 did not stop"; exit 1; }
grep -q "going on with 3 ranks from step 5" <<<"$out" || { echo "FAILED: the survivors did not go on"; exit 1; }
grep -qE "epoch 1/1 .* on 3 ranks" <<<"$out" || { echo "FAILED: the epoch did not end on 3 ranks"; exit 1; }
