#!/usr/bin/env bash
# The local launcher (--nprocs) when one rank dies: the others are stopped at once and the launcher names the rank
# and how it ended, instead of leaving them to wait CHORUS_TIMEOUT (300 s by default).
# Usage: rank_failure.sh <all_reduce_perf>
set -uo pipefail
tool=$1
log=$(mktemp) out=$(mktemp)
trap 'rm -f "$log" "$out"' EXIT
# A long sweep: the ranks are busy in collectives when one of them is killed.
"$tool" --nprocs 3 -b 1K -e 1K -n 100000000 -w 0 -c 0 >"$out" 2>"$log" &
launcher=$!
# Rank 1's pid from the header ("#  Rank  1 Group  0 Pid  4901 ..."): the order of the pids says nothing once they
# wrap around.
victim=
for _ in $(seq 100); do
  victim=$(awk '$2 == "Rank" && $3 == 1 && $6 == "Pid" {print $7}' "$out")
  [ -n "$victim" ] && break
  sleep 0.1
done
[ -n "$victim" ] || { echo "the launcher's ranks printed no header"; cat "$log"; kill -9 "$launcher"; exit 1; }
sleep 1
start=$(date +%s%N)
kill -9 "$victim"
wait "$launcher"
code=$?
elapsed_ms=$((($(date +%s%N) - start) / 1000000))
cat "$log"
echo "launcher exit code $code, ${elapsed_ms} ms after the kill"
grep -q "rank 1 was killed by signal 9" "$log" || { echo "FAILED: the launcher did not name rank 1 and signal 9"; exit 1; }
[ "$code" -ne 0 ] || { echo "FAILED: exit code 0"; exit 1; }
[ "$elapsed_ms" -lt 5000 ] || { echo "FAILED: the other ranks were not stopped at once"; exit 1; }
echo "ok"
