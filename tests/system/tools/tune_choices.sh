#!/usr/bin/env bash
# Measured choices end to end: chorus-tune --choices writes a choices line for its launch shape, chorus-info shows
# it, a communicator of that shape runs what it names (and one of another shape does not), and a wrong rule in it
# fails the communicator's creation with the file's line.
# Usage: tune_choices.sh <build dir>
set -uo pipefail
build=$1
fail() { echo "FAILED: $*"; exit 1; }
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

"$build/tools/chorus-tune" --choices --ranks 3 --out "$tmp/tuning.txt" >"$tmp/out" 2>"$tmp/medians" ||
  fail "chorus-tune --choices: $(cat "$tmp/out" "$tmp/medians")"
# A choices line in CHORUS_ALGO's grammar, or the note that no algorithm beat the selector's own choice.
grep -qE '^choices\.3x1 [a-z_]+:[a-z_]+@[0-9]+-[0-9]*(,|$)' "$tmp/tuning.txt" ||
  grep -q '^# choices.3x1: .*no algorithm beat' "$tmp/tuning.txt" || fail "no choices for 3x1: $(cat "$tmp/tuning.txt")"
for coll in AllReduce ReduceScatter AllGather AlltoAll Broadcast; do
  grep -q "^$coll" "$tmp/medians" || fail "no medians for $coll: $(cat "$tmp/medians")"
done

# The cost model never takes the double binary tree for 4 MiB on 3 ranks of one host; a measured choice does.
algorithm() {
  CHORUS_DEBUG=INFO CHORUS_DEBUG_SUBSYS=COLL "$build/perf/all_reduce_perf" --nprocs 3 -b 4M -e 4M -n 1 -w 0 -c 1 2>&1 |
    grep -o "count 1048576 float sum root 0 algorithm [a-z_]*" | sort -u | awk '{print $NF}'
}
[ "$(algorithm)" != tree ] || fail "the model chose tree: the check below proves nothing"
printf 'choices.3x1 allreduce:tree@1M-\n' >"$tmp/tree.txt"
# Read the whole report first: a `grep -q` that stops reading would end chorus-info by SIGPIPE, and pipefail
# would take that for a failure.
info=$("$build/tools/chorus-info" --ranks 3 --tuning "$tmp/tree.txt") || fail "chorus-info --tuning failed: $info"
grep -q "Measured choices.*allreduce:tree@1M-" <<<"$info" || fail "chorus-info does not show the measured choices"
got=$(CHORUS_TUNING_FILE=$tmp/tree.txt algorithm)
[ "$got" = tree ] || fail "a measured choice of tree ran '$got'"
printf 'choices.4x1 allreduce:tree@1M-\n' >"$tmp/other.txt"
got=$(CHORUS_TUNING_FILE=$tmp/other.txt algorithm)
[ "$got" != tree ] || fail "the choices of 4 ranks were taken for 3"
got=$(CHORUS_ALGO=allreduce:ring CHORUS_TUNING_FILE=$tmp/tree.txt algorithm)
[ "$got" = ring ] || fail "CHORUS_ALGO did not go before the measured choice: '$got'"

printf 'intra.alpha_us 0.5\nchoices.3x1 allreduce:bogus\n' >"$tmp/bad.txt"
out=$(CHORUS_TUNING_FILE=$tmp/bad.txt "$build/perf/all_reduce_perf" --nprocs 3 -b 8 -e 8 -n 1 -w 0 2>&1) &&
  fail "a tuning file with a wrong rule was accepted"
grep -q "line 2" <<<"$out" || fail "the error does not name the line: $out"
echo "measured choices: written, shown, taken for their shape only, after CHORUS_ALGO"
