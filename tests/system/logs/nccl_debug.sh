#!/usr/bin/env bash
# NCCL_DEBUG logs: one file per rank for %r and %p; the first INFO line gives chorus's version, the NCCL API level,
# rank, host and pid; each peer's transport with the reason; the topology summary; the ranks on the machine and the
# cores they may run on; with COLL one line per call, group members included; TRACE adds per-step lines, and a
# subsystem filter keeps other subsystems out.
# Usage: nccl_debug.sh <build dir>
set -uo pipefail
build=$1
dir=$(mktemp -d)
trap 'rm -rf "$dir"' EXIT
fail() { echo "FAILED: $*"; exit 1; }

NCCL_DEBUG=INFO NCCL_DEBUG_FILE="$dir/rank%r.log" "$build/perf/all_reduce_perf" --nprocs 2 -b 8 -e 8 -n 2 -w 0 \
  -c 0 >/dev/null || fail "all_reduce_perf failed"
for r in 0 1; do
  log=$dir/rank$r.log
  [ -s "$log" ] || fail "no log file for rank $r"
  head -1 "$log" | grep -qE "chorus INFO chorus [0-9.]+ \(NCCL API [0-9.]+\): rank $r of 2, host .*, pid [0-9]+" ||
    fail "rank $r's first line: $(head -1 "$log")"
  grep -qE "peer rank $((1 - r)) \(host .*\): shm, it is on the same host" "$log" || fail "rank $r's log names no peer transport"
  grep -q "AllReduce seq [0-9]* count 2 float sum root 0 algorithm [a-z_]* bytes 8 time [0-9.]* us" "$log" ||
    fail "rank $r's log has no COLL line for the AllReduce"
  grep -q "TRACE" "$log" && fail "TRACE lines at NCCL_DEBUG=INFO"
done
grep -q "topology of .*cores" "$dir/rank0.log" || fail "rank 0's log has no topology summary"

# The ready line counts this machine's ranks and the cores they may run on (their CPU sets together), so two ranks
# confined to one CPU know they share it.
grep -qE "ready: .*2 rank\(s\) on $(nproc) core\(s\) of this machine" "$dir/rank0.log" ||
  fail "rank 0's ready line does not count 2 ranks on $(nproc) cores: $(grep ready: "$dir/rank0.log")"
cpu=$(awk '/^Cpus_allowed_list/ {print $2}' /proc/self/status | cut -d, -f1 | cut -d- -f1)
NCCL_DEBUG=INFO NCCL_DEBUG_FILE="$dir/bound%r.log" taskset -c "$cpu" "$build/perf/all_reduce_perf" --nprocs 2 -b 8 \
  -e 8 -n 2 -w 0 -c 0 >/dev/null || fail "all_reduce_perf under taskset failed"
grep -qE "ready: .*2 rank\(s\) on 1 core\(s\) of this machine: ranks share cores" "$dir/bound1.log" ||
  fail "two ranks on CPU $cpu not seen sharing it: $(grep ready: "$dir/bound1.log")"

# %p: one file per process, launcher included.
NCCL_DEBUG=INFO NCCL_DEBUG_FILE="$dir/pid%p.log" "$build/perf/all_reduce_perf" --nprocs 2 -b 8 -e 8 -n 1 -w 0 \
  -c 0 >/dev/null || fail "all_reduce_perf failed"
[ "$(grep -l "chorus INFO chorus " "$dir"/pid*.log | wc -l)" -eq 2 ] || fail "%p did not give each rank its own file"

# Grouped Send/Recv: one COLL line per member of the group.
NCCL_DEBUG=INFO NCCL_DEBUG_SUBSYS=COLL "$build/perf/sendrecv_perf" --nprocs 2 -b 8 -e 8 -n 1 -w 0 -c 0 \
  >"$dir/group.out" 2>&1 || fail "sendrecv_perf failed"
grep -q "Send seq [0-9]* count 2 float .* (group op 1 of 2)" "$dir/group.out" || fail "no COLL line for a grouped Send"
grep -q "Recv seq [0-9]* count 2 float .* (group op 2 of 2)" "$dir/group.out" || fail "no COLL line for a grouped Recv"
grep -q "peer rank" "$dir/group.out" && fail "NCCL_DEBUG_SUBSYS=COLL let INIT lines through"

# TRACE: a line per finished step.
NCCL_DEBUG=TRACE "$build/perf/all_reduce_perf" --nprocs 2 -b 8K -e 8K -n 1 -w 0 -c 0 >"$dir/trace.out" 2>&1 ||
  fail "all_reduce_perf failed"
grep -qE "TRACE AllReduce seq [0-9]+: step (send|recv|copy|reduce)" "$dir/trace.out" || fail "no per-step TRACE line"
echo "ok"
