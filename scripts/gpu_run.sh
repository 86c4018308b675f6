#!/usr/bin/env bash
# Runs the GPU bundle (gpu_bundle.sh) on a machine with a GPU and prints a summary; full outputs go to $OUT (or
# ./gpu-results). Parts: tests | copy | perf (default: all three).
#   tests: device_collectives_test, every collective x type x op on device memory, 1-4 ranks on the GPUs here
#   copy:  the GPU's copy bandwidth (the roofline)
#   perf:  all_reduce_perf and all_gather_perf on device memory, 2 and 4 ranks, 8 B to 1 GiB
# Usage: gpu_run.sh [tests] [copy] [perf]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH=$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
out=${OUT:-$PWD/gpu-results}
mkdir -p "$out"
parts=("$@")
[ ${#parts[@]} -eq 0 ] && parts=(tests copy perf)
status=0
echo "== $(date -u '+%Y-%m-%d %H:%M UTC') on $(hostname)"
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv,noheader | sed 's/^/== GPU /'
for part in "${parts[@]}"; do
  case $part in
    tests)
      "$here/bin/device_collectives_test" --gtest_brief=1 >"$out/tests.txt" 2>&1 || status=1
      echo "== tests: $(grep -E '^\[  (PASSED|FAILED|SKIPPED) ' "$out/tests.txt" | tr '\n' ' ')"
      grep -E '^\[  FAILED  \]|rank [0-9]+:' "$out/tests.txt" | head -20
      ;;
    copy)
      "$here/bin/device_copy_bandwidth" -b 8 -e 1G -f 4 >"$out/copy.txt" 2>&1 || status=1
      echo "== copy bandwidth (GB/s) by size:"
      awk '!/^#/ {printf "   %s B: %s\n", $1, $3}' "$out/copy.txt"
      ;;
    perf)
      for n in 2 4; do
        for tool in all_reduce all_gather; do
          log=$out/${tool}_perf_${n}ranks.txt
          "$here/bin/${tool}_perf" --nprocs "$n" -b 8 -e 1G -f 4 -n 10 -w 3 -c 1 >"$log" 2>&1 || status=1
          echo "== ${tool}_perf, $n ranks, device memory: size B, out-of-place time us, busbw GB/s; $(grep -E 'Out of bounds' "$log")"
          awk '!/^#/ && NF > 8 {printf "   %12s  %10s  %8s\n", $1, $6, $8}' "$log"
        done
      done
      ;;
    *)
      echo "gpu_run: unknown part '$part' (tests, copy, perf)" >&2
      exit 2
      ;;
  esac
done
exit $status
