#!/usr/bin/env bash
# Every tool's command line: --help says what the tool does and gives examples (exit 0), --version names chorus,
# and a bad flag or value ends with a non-zero exit and a message that names it.
# Usage: command_lines.sh <build dir>
set -uo pipefail
build=$1
fail() { echo "FAILED: $*"; exit 1; }
tools=("$build/tools/chorus-info" "$build/tools/chorus-topo" "$build/tools/chorus-tune" "$build/tools/chorus-train"
       "$build/perf/all_reduce_perf")

for tool in "${tools[@]}"; do
  name=$(basename "$tool")
  help=$("$tool" --help 2>&1) || fail "$name --help exited with $?"
  grep -qi "example" <<<"$help" || fail "$name --help gives no example"
  [ "$(wc -l <<<"$help")" -ge 4 ] || fail "$name --help is too short: $help"
  "$tool" --version | grep -q "chorus [0-9]" || fail "$name --version does not name chorus"
  out=$("$tool" --no-such-flag 2>&1) && fail "$name accepted --no-such-flag"
  grep -qiE "unknown argument|invalid option|unrecognized" <<<"$out" || fail "$name --no-such-flag: $out"
done

# Refused with a message that names the flag or variable, the value and what is accepted.
expect_refused() {
  local why=$1
  shift
  out=$("$@" 2>&1) && fail "'$*' succeeded"
  grep -q -- "$why" <<<"$out" || fail "'$*' did not say '$why': $out"
}
perf=$build/perf/all_reduce_perf
expect_refused "--nprocs must be at least 1" "$perf" --nprocs 0
expect_refused "--cold_buffers takes 0 or 1" "$perf" --cold_buffers 2
expect_refused "--ranks must be at least 2" "$build/tools/chorus-tune" --choices --ranks 1
expect_refused "--nprocs must be at least 1" "$perf" --nprocs -1
expect_refused "invalid value 'abc' for -P" "$perf" --nprocs abc
expect_refused "invalid size specified for 'maxbytes'" "$perf" -e 1X
expect_refused "invalid value 'x' for -T" "$perf" -T x
expect_refused "unexpected argument 'extra'" "$perf" -b 8 extra
expect_refused "--lr needs a positive number, not 'fast'" "$build/tools/chorus-train" --lr fast
expect_refused "--mode 'px' is not one of" "$build/tools/chorus-train" --mode px
expect_refused "parameter server sync 'lazy' is not bsp, asp or ssp" "$build/tools/chorus-train" --mode ps --sync lazy
expect_refused "--servers must be at least 1 and below --ranks" "$build/tools/chorus-train" --mode ps --servers 4
expect_refused "--replicate on needs --servers 2" "$build/tools/chorus-train" --mode ps --replicate on
expect_refused "--micro-batches must be between 1 and the batch size" "$build/tools/chorus-train" --mode pp \
  --micro-batches 65
expect_refused "unknown pipeline schedule 'zb-v'" "$build/tools/chorus-train" --mode pp --schedule zb-v
expect_refused "--slow-rank goes with --mode dp or ps" "$build/tools/chorus-train" --mode pp --slow-rank 1:2
expect_refused "--balance goes with --mode dp" "$build/tools/chorus-train" --mode ps --balance on
expect_refused "--codec goes with --mode compress" "$build/tools/chorus-train" --mode ps --codec bf16
expect_refused "--slow-rank names rank 4, not one of the 4 workers" "$build/tools/chorus-train" --mode ps --ranks 5 --slow-rank 4:2
expect_refused "--slow-rank's factor must be a number of at least 1" "$build/tools/chorus-train" --slow-rank 1:0.5
expect_refused "--slow-rank needs RANK:FACTOR" "$build/tools/chorus-train" --slow-rank 1
expect_refused "--slow-rank names rank 9 of 4" "$build/tools/chorus-train" --slow-rank 9:2
expect_refused "--balance takes on or off" "$build/tools/chorus-train" --balance yes
expect_refused "--codec goes with --mode compress" "$build/tools/chorus-train" --codec bf16
expect_refused "--mode compress needs --codec" "$build/tools/chorus-train" --mode compress
expect_refused "unknown gradient codec 'zip'" "$build/tools/chorus-train" --mode compress --codec zip
expect_refused "--ranks needs a non-negative integer" "$build/tools/chorus-train" --ranks many
expect_refused "--kill-rank goes with --mode dp, zero1, zero2 or zero3" "$build/tools/chorus-train" --mode ps --kill-rank 1
expect_refused "--kill-rank names ranks below --ranks 4 and leaves at least one alive" "$build/tools/chorus-train" \
  --kill-rank 4
expect_refused "--kill-rank names ranks below --ranks 4 and leaves at least one alive" "$build/tools/chorus-train" \
  --kill-rank 0,1,2,3
expect_refused "--kill-rank needs distinct ranks R\[,R...\], not '1,1'" "$build/tools/chorus-train" --kill-rank 1,1
expect_refused "--disk-every N and --disk-dir DIR go together, with --kill-rank" "$build/tools/chorus-train" \
  --kill-rank 1 --disk-every 10
expect_refused "--kill-rank goes without --slow-rank" "$build/tools/chorus-train" --kill-rank 1 --slow-rank 2:2
expect_refused "--csv" "$build/tools/chorus-info" --csv abc
# chorus-info lists every setting: an invalid one is shown as such, with what is accepted.
info=$(CHORUS_TIMEOUT=abc "$build/tools/chorus-info" 2>&1)
grep -q "INVALID SETTING: CHORUS_TIMEOUT='abc' is invalid: a" <<<"$info" ||
  fail "chorus-info does not show CHORUS_TIMEOUT=abc as invalid"

# Sizes take K, M and G everywhere: chorus-info's table shows the bytes it read.
csv=$("$build/tools/chorus-info" --csv 1M,2G 2>&1) || fail "chorus-info --csv 1M,2G: $csv"
grep -q "AllReduce,1048576," <<<"$csv" || fail "--csv 1M was not read as 1048576 bytes: $csv"
grep -q "AllReduce,2147483648," <<<"$csv" || fail "--csv 2G was not read as 2147483648 bytes"
echo "ok"
