#!/usr/bin/env bash
# Collectives across simulated hosts (tests/netns/cluster: 2 hosts x 2 ranks, links capped at 1 Gbit/s): each
# collective with the selector's choice and with every algorithm that applies forced, data checked by the perf
# tools. Where network namespaces are not available the hosts are plain processes told apart by CHORUS_HOST_ID.
set -euo pipefail
build="${1:?usage: collectives.sh BUILD_DIR}"
here="$(cd "$(dirname "$0")" && pwd)"
run() {  # algorithm-forcing spec, perf tool[, largest size]
  local spec="$1" tool="$2" largest="${3:-1M}"
  echo "== $tool ${spec:-(the selector chooses)}${transport:+ over $transport}${transport:+ (UCX_TLS=$ucx_tls)}"
  local code=0
  "$here/../netns/cluster" --hosts 2 --ranks-per-host 2 --fallback -- \
    env CHORUS_ALGO="$spec" CHORUS_TRANSPORT="$transport" UCX_TLS="$ucx_tls" CHORUS_TIMEOUT=60 \
    "$build/perf/$tool" -b 8 -e "$largest" -f 16 -n 3 -w 1 -c 1 > /tmp/chorus-netns-$$.log 2>&1 || code=$?
  grep -E "^ +[0-9]|Out of bounds" /tmp/chorus-netns-$$.log || true
  if [ "$code" -ne 0 ]; then cat /tmp/chorus-netns-$$.log; echo "FAILED: $tool $spec (exit $code)"; exit 1; fi
}
transport="" ucx_tls=all  # the communicator's choice: shm inside a host, tcp between hosts
for spec in "" ring one_shot rec_doubling rabenseifner tree direct; do run "$spec" all_reduce_perf; done
run hier all_reduce_perf 8M  # 8 MiB: the hierarchical AllReduce pipelines pieces
for spec in "" ring direct rec_halving hier; do run "$spec" reduce_scatter_perf; done
for spec in "" ring direct rec_doubling hier; do run "$spec" all_gather_perf; done
for spec in "" pairwise bruck hier; do run "$spec" alltoall_perf; done
for spec in ring binomial; do run "$spec" broadcast_perf; run "$spec" reduce_perf; done
# Every peer over UCX, where it is built: over its tcp, as between real hosts, and over what UCX picks itself
# (System V shared memory: the namespaces share it).
if "$build/tools/chorus-info" | grep -E "^  ucx +(when forced|available)" >/dev/null; then
  transport=ucx ucx_tls=tcp,self
  # UCX 1.13 leaves a few allocations (about 1 KB per process) from its transport modules at worker teardown, made
  # in modules it has unloaded by then, so LeakSanitizer can neither name nor suppress them (lsan.supp names
  # libraries). Leak checking is off for these runs only; AddressSanitizer's memory-error checks stay on.
  export ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0"
  run "" all_reduce_perf; run ring all_reduce_perf; run "" reduce_scatter_perf; run "" all_gather_perf
  run "" alltoall_perf; run "" broadcast_perf; run "" reduce_perf
  ucx_tls=all
  run "" all_reduce_perf
else
  echo "== ucx: not built here, skipped"
fi
rm -f /tmp/chorus-netns-$$.log
echo "all collectives correct across the simulated hosts"
