#!/usr/bin/env bash
# The long soak: chorus_soak for MINUTES on each of shm and tcp (4 processes) and on threads of one process, seeds
# counted up from SEED, CALLS calls a seed. Each mode prints a line per seed (time, resident memory and open fds of
# its largest rank) and stops at the first failure with the seed, the calls before it and the command that replays
# it. Point BUILD at a sanitized tree (tests/sanitize/sanitized_tree.sh) to run it under the sanitizers.
# Usage: tests/soak/long_soak.sh <build dir> [MINUTES=10] [SEED=1] [CALLS=1000] [MODES="shm tcp threads"]
set -uo pipefail
build=$1 minutes=${2:-10} seed=${3:-1} calls=${4:-1000} modes=${5:-shm tcp threads}
soak=$build/tests/chorus_soak
[ -x "$soak" ] || { echo "long_soak: $soak not built" >&2; exit 2; }
failed=0
for mode in $modes; do
  echo "== $mode: $minutes min from seed $seed, $calls calls a seed"
  case $mode in
    threads) "$soak" --threads --nranks 4 --seed "$seed" --minutes "$minutes" --calls "$calls" ;;
    *) CHORUS_TRANSPORT=$mode "$soak" --nranks 4 --seed "$seed" --minutes "$minutes" --calls "$calls" ;;
  esac || failed=1
done
exit $failed
