#!/usr/bin/env bash
# Starts a perf tool the way torchrun, srun and a PMI launcher would (only their environment variables, no
# launcher needed) and checks that the ranks find each other and the data is right.
set -u
tool=$1
n=3
fail=0
run() {  # $1 name; then a function that prints the env assignments of rank $r
  local name=$1 envfn=$2 pids=() r
  for r in $(seq 0 $((n - 1))); do
    env $($envfn "$r") "$tool" -b 8 -e 64K -f 64 -c 1 >"/tmp/chorus-launcher-$name-$r.log" 2>&1 &
    pids+=($!)
  done
  local ok=1
  for p in "${pids[@]}"; do wait "$p" || ok=0; done
  if [ $ok = 1 ] && grep -q "Out of bounds values : 0 OK" "/tmp/chorus-launcher-$name-0.log"; then
    echo "$name: ok"
  else
    echo "$name: FAILED"; cat "/tmp/chorus-launcher-$name-"*.log; fail=1
  fi
  rm -f "/tmp/chorus-launcher-$name-"*.log
}
port=$((20000 + RANDOM % 20000))
torchrun_env() { echo "RANK=$1 WORLD_SIZE=$n LOCAL_RANK=$1 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port"; }
slurm_env() { echo "SLURM_PROCID=$1 SLURM_NTASKS=$n SLURM_LOCALID=$1 SLURM_JOB_ID=$$ SLURM_STEP_ID=0"; }
pmi_env() { echo "PMI_RANK=$1 PMI_SIZE=$n PMI_JOBID=pmi$$"; }
explicit_env() { echo "PMI_RANK=$1 PMI_SIZE=$n CHORUS_COMM_ID=127.0.0.1:$((port + 7))"; }
run torchrun torchrun_env
run slurm slurm_env
run pmi pmi_env
run explicit explicit_env
secret_env() { echo "PMI_RANK=$1 PMI_SIZE=$n CHORUS_COMM_ID=127.0.0.1:$((port + 9)) CHORUS_COMM_SECRET=job-$port"; }
run secret secret_env

# Without CHORUS_COMM_SECRET the run says the address alone admits anyone; a rank with another secret is refused
# (its init fails with an error, the others' too, well before the default timeout).
explicit_log=$(NCCL_DEBUG=WARN PMI_RANK=0 PMI_SIZE=1 CHORUS_COMM_ID=127.0.0.1:$((port + 11)) "$tool" -b 8 -e 8 -c 0 2>&1)
grep -q "without CHORUS_COMM_SECRET" <<<"$explicit_log" || { echo "secret warning: FAILED"; echo "$explicit_log"; fail=1; }
pids=()
for r in 0 1; do
  PMI_RANK=$r PMI_SIZE=2 CHORUS_COMM_ID=127.0.0.1:$((port + 13)) CHORUS_COMM_SECRET=job-$r CHORUS_TIMEOUT=5 \
    "$tool" -b 8 -e 8 -c 0 >"/tmp/chorus-launcher-wrongsecret-$r.log" 2>&1 &
  pids+=($!)
done
refused=1
for p in "${pids[@]}"; do wait "$p" && refused=0; done
if [ $refused = 1 ]; then echo "wrong secret: ok (refused)"; else echo "wrong secret: FAILED (a rank joined)"; fail=1; fi
rm -f /tmp/chorus-launcher-wrongsecret-*.log
exit $fail
