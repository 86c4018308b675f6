#!/usr/bin/env bash
# Builds the GPU bundle: the device tests, the perf tools and the GPU's copy-bandwidth probe, with the shared
# libraries they need that a bare GPU machine lacks (chorus's own, hwloc, pugixml), into one folder that runs
# anywhere with a CUDA driver and glibc >= this machine's. gpu_run.sh, copied in, runs it there.
# Usage: scripts/gpu_bundle.sh [build dir]      (default build/; the bundle goes to <build dir>/gpu-bundle)
set -euo pipefail
src=$(cd "$(dirname "$0")/.." && pwd)
build=$(mkdir -p "${1:-$src/build}" && cd "${1:-$src/build}" && pwd)
out=$build/gpu-bundle
cmake -S "$src" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
grep -q '^CHORUS_CUDA:BOOL=ON' "$build/CMakeCache.txt" || {
  echo "gpu_bundle: this build has CHORUS_CUDA off (no CUDA toolkit found); nothing to bundle" >&2
  exit 1
}
programs=(tests/device_collectives_test perf/device_copy_bandwidth)
for tool in all_reduce all_gather reduce_scatter alltoall broadcast reduce sendrecv gather scatter; do
  programs+=(perf/${tool}_perf)
done
targets=()
for p in "${programs[@]}"; do targets+=("$(basename "$p")"); done
cmake --build "$build" -j"$(nproc)" --target "${targets[@]}" >/dev/null

rm -rf "$out"
mkdir -p "$out/bin" "$out/lib"
for p in "${programs[@]}"; do cp "$build/$p" "$out/bin/"; done
# Every library the programs load, but the C and C++ runtimes and CUDA's driver, which the GPU machine has.
for p in "${programs[@]}"; do ldd "$build/$p"; done | awk '$3 ~ /^\// {print $3}' | sort -u | while read -r lib; do
  case "$(basename "$lib")" in
    libc.so.* | libm.so.* | libdl.so.* | librt.so.* | libpthread.so.* | ld-linux* | libstdc++.so.* | libgcc_s.so.* | \
      libcuda.so.*) ;;
    *) cp -L "$lib" "$out/lib/" ;;
  esac
done
strip --strip-unneeded "$out"/bin/* "$out"/lib/* 2>/dev/null || true
cp "$src/scripts/gpu_run.sh" "$out/"
size=$(du -sm "$out" | cut -f1)
echo "gpu_bundle: $out, ${size} MiB: $(ls "$out/bin" | tr '\n' ' ')"
if [ "$size" -ge 64 ]; then
  echo "gpu_bundle: the bundle is ${size} MiB, over the 64 MiB a GPU machine takes" >&2
  exit 1
fi
