#!/usr/bin/env bash
# Runs the GPU bundle (gpu_bundle.sh) on a machine with a GPU and prints a summary; full outputs go to $OUT (or
# ./gpu-results). Parts: tests | copy | perf (default: all three).
#   tests: device_collectives_test, every collective x type x op on device memory, 1-4 ranks on the GPUs here; one
#          test at a time, each stopped after 150 s
#   copy:  the GPU's copy bandwidth (the roofline)
#   perf:  all_reduce_perf and all_gather_perf on device memory, 2 and 4 ranks, 8 B to 1 GiB, on the GPU path over
#          the ranks' device memory (and which path the ranks took, from their INIT log line)
#   threads: the same, 8 B to 256 MiB, with the ranks as threads of one process (-t), and as one thread driving two
#          communicators in groups (-g 2): on the GPU path where each rank has a GPU of its own, staged where they
#          share one
#   staged: all_reduce_perf at 2 ranks staged through host memory (CHORUS_GPU_PEER_MEMORY=0), for comparison
#   sweep: all_reduce_perf at 2 ranks with other one-shot limits (CHORUS_GPU_ONE_SHOT) and slot sizes (CHORUS_GPU_SLOT)
#   small: all_reduce_perf and all_gather_perf at 2 and 4 ranks, 8 B to 4 MiB, each call one kernel (the default) and
#          not (CHORUS_GPU_ONE_KERNEL=0), the two interleaved, twice
#   probe: all_reduce_perf at 2 and 4 ranks, 8 B to 2 MiB, with the set-up's log: whether calls run as one kernel
#   mps:   the parts after it run under NVIDIA's MPS daemon (a private one, started here and stopped at exit), which
#          lets processes sharing one GPU run their kernels at once instead of in turns
# Usage: gpu_run.sh [tests] [copy] [perf] [threads] [staged] [sweep] [small] [probe] [mps]
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export LD_LIBRARY_PATH=$here/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
out=${OUT:-$PWD/gpu-results}
mkdir -p "$out"
parts=("$@")
[ ${#parts[@]} -eq 0 ] && parts=(tests copy perf threads staged)
status=0
under=""
echo "== $(date -u '+%Y-%m-%d %H:%M UTC') on $(hostname)"
nvidia-smi --query-gpu=index,name,memory.total,driver_version --format=csv,noheader | sed 's/^/== GPU /'
for part in "${parts[@]}"; do
  case $part in
    tests)
      # One test at a time, each with its own limit, so that a hang names its test and the others still run.
      : >"$out/tests.txt"
      passed=0 failed=()
      suite=""
      while IFS= read -r line; do
        case $line in
          [A-Za-z]*.) suite=$line ;;
          "  "*) name=${line#  }
            name=${name%% *}
            t0=$(date +%s)
            timeout 150 "$here/bin/device_collectives_test" --gtest_filter="$suite$name" >"$out/test.txt" 2>&1
            rc=$?
            cat "$out/test.txt" >>"$out/tests.txt"
            if [ $rc -ne 0 ]; then
              status=1
              verdict="FAILED ($([ $rc -eq 124 ] && echo "timed out after 150 s" || echo "exit $rc"))"
              failed+=("$suite$name")
            elif grep -q '^\[  SKIPPED \]' "$out/test.txt"; then
              verdict="skipped: $(grep -m1 -o 'no CUDA device.*' "$out/test.txt")"
            else
              verdict=passed
              passed=$((passed + 1))
            fi
            echo "   $suite$name: $verdict, $(($(date +%s) - t0)) s" ;;
        esac
      done < <("$here/bin/device_collectives_test" --gtest_list_tests)
      echo "== tests: $passed passed, ${#failed[@]} failed${failed:+: ${failed[*]}}"
      grep -E '^\[  FAILED  \]|rank [0-9]+:' "$out/tests.txt" | head -20
      ;;
    copy)
      "$here/bin/device_copy_bandwidth" -b 8 -e 1G -f 4 >"$out/copy.txt" 2>&1 || status=1
      echo "== copy bandwidth (GB/s) by size:"
      awk '!/^#/ {printf "   %s B: %s\n", $1, $3}' "$out/copy.txt"
      ;;
    perf)
      CHORUS_DEBUG=INFO CHORUS_DEBUG_SUBSYS=INIT "$here/bin/all_reduce_perf" --nprocs 2 -b 1M -e 1M -n 1 -w 0 \
        >"$out/path.txt" 2>&1 || status=1
      echo "== path: $(grep -m1 -E 'calls on device memory' "$out/path.txt" | sed 's/.*rank 0: //')"
      for n in 2 4; do
        for tool in all_reduce all_gather; do
          log=$out/${tool}_perf_${n}ranks.txt
          timeout 150 "$here/bin/${tool}_perf" --nprocs "$n" -b 8 -e 1G -f 4 -n 20 -w 5 -c 1 >"$log" 2>&1 || status=1
          echo "== ${tool}_perf, $n ranks$under, device memory: size B, out-of-place time us, busbw GB/s; $(grep -E 'Out of bounds' "$log")"
          awk '!/^#/ && NF > 8 {printf "   %12s  %10s  %8s\n", $1, $6, $8}' "$log"
        done
      done
      ;;
    threads)
      for ranks in "-t 2" "-t 4" "-g 2"; do
        for tool in all_reduce all_gather; do
          log=$out/${tool}_perf_${ranks// /}.txt
          timeout 60 "$here/bin/${tool}_perf" $ranks -b 8 -e 256M -f 4 -n 20 -w 5 -c 1 >"$log" 2>&1 || status=1
          echo "== ${tool}_perf, $ranks in one process, device memory: size B, out-of-place time us, busbw GB/s; $(grep -E 'Out of bounds' "$log")"
          awk '!/^#/ && NF > 8 {printf "   %12s  %10s  %8s\n", $1, $6, $8}' "$log"
        done
      done
      ;;
    staged)
      log=$out/all_reduce_perf_2ranks_staged.txt
      CHORUS_GPU_PEER_MEMORY=0 timeout 40 "$here/bin/all_reduce_perf" --nprocs 2 -b 8 -e 128M -f 16 -n 10 -w 3 -c 1 \
        >"$log" 2>&1 || status=1
      echo "== all_reduce_perf, 2 ranks, staged through host memory: size B, time us, busbw GB/s; $(grep -E 'Out of bounds' "$log")"
      awk '!/^#/ && NF > 8 {printf "   %12s  %10s  %8s\n", $1, $6, $8}' "$log"
      ;;
    sweep)
      for setting in CHORUS_GPU_ONE_SHOT=64K CHORUS_GPU_ONE_SHOT=1M CHORUS_GPU_ONE_SHOT=4M CHORUS_GPU_SLOT=4M \
        CHORUS_GPU_SLOT=64M; do
        log=$out/all_reduce_perf_2ranks_${setting/=/_}.txt
        env "$setting" timeout 45 "$here/bin/all_reduce_perf" --nprocs 2 -b 16K -e 256M -f 4 -n 20 -w 5 -c 1 \
          >"$log" 2>&1 || status=1
        echo "== all_reduce_perf, 2 ranks$under, $setting: size B, time us, busbw GB/s; $(grep -E 'Out of bounds' "$log")"
        awk '!/^#/ && NF > 8 {printf "   %12s  %10s  %8s\n", $1, $6, $8}' "$log"
      done
      ;;
    small)
      for round in 1 2; do
        for n in 2 4; do
          for tool in all_reduce all_gather; do
            for kernel in 4194304 0; do
              log=$out/${tool}_perf_${n}ranks_onekernel${kernel}_round${round}.txt
              CHORUS_GPU_ONE_KERNEL=$kernel timeout 30 "$here/bin/${tool}_perf" --nprocs "$n" -b 8 -e 4M -f 8 -n 50 \
                -w 10 -c 1 >"$log" 2>&1 || status=1
              echo "== ${tool}_perf, $n ranks$under, CHORUS_GPU_ONE_KERNEL=$kernel, round $round: size B, time us," \
                "busbw GB/s; $(grep -E 'Out of bounds' "$log")"
              awk '!/^#/ && NF > 8 {printf "   %12s  %10s  %8s\n", $1, $6, $8}' "$log"
            done
          done
        done
      done
      ;;
    probe)
      for n in 2 4; do
        log=$out/all_reduce_perf_${n}ranks_probe.txt
        CHORUS_DEBUG=INFO CHORUS_DEBUG_SUBSYS=INIT timeout 30 "$here/bin/all_reduce_perf" --nprocs "$n" -b 8 -e 2M -f 8 \
          -n 50 -w 10 -c 1 >"$log" 2>&1 || status=1
        echo "== all_reduce_perf, $n ranks$under: $(grep -m1 -o 'a barrier inside.*' "$log"); $(grep -E 'Out of bounds' "$log")"
        awk '!/^#/ && NF > 8 && $1 ~ /^[0-9]+$/ {printf "   %12s  %10s  %8s\n", $1, $6, $8}' "$log"
      done
      ;;
    mps)
      # Stays on for the parts after it; stopped when the script exits.
      if ! command -v nvidia-cuda-mps-control >/dev/null; then
        echo "== mps: not used, nvidia-cuda-mps-control is not on this machine"
        continue
      fi
      export CUDA_MPS_PIPE_DIRECTORY=$out/mps-pipe CUDA_MPS_LOG_DIRECTORY=$out/mps-log
      mkdir -p "$CUDA_MPS_PIPE_DIRECTORY" "$CUDA_MPS_LOG_DIRECTORY"
      if nvidia-cuda-mps-control -d; then
        trap 'echo quit | nvidia-cuda-mps-control' EXIT
        under=", under MPS"
        echo "== mps: the MPS daemon runs for the parts that follow"
      else
        echo "== mps: not used, the MPS daemon did not start"
        unset CUDA_MPS_PIPE_DIRECTORY CUDA_MPS_LOG_DIRECTORY
      fi
      ;;
    *)
      echo "gpu_run: unknown part '$part' (tests, copy, perf, threads, staged, sweep, small, probe, mps)" >&2
      exit 2
      ;;
  esac
done
exit $status
