#!/usr/bin/env bash
# Trains the Fashion-MNIST MLP under every mode of chorus-train on the same data, seed and global batch (and data
# parallelism with one rank at half speed, balanced or not), and plots the loss and accuracy curves of all of them
# on one PNG.
#   scripts/train_demo.sh [--ranks N] [--epochs E] [--samples N] [--out DIR]   (defaults: 4, 3, 60000, docs)
set -euo pipefail
cd "$(dirname "$0")/.."
ranks=4 epochs=3 samples=60000 out=docs
while [ $# -gt 0 ]; do
  case "$1" in
    --ranks) ranks=$2; shift 2 ;;
    --epochs) epochs=$2; shift 2 ;;
    --samples) samples=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "usage: $0 [--ranks N] [--epochs E] [--samples N] [--out DIR]" >&2; exit 2 ;;
  esac
done
make -s build
mkdir -p "$out"
csv="$out/training_steps.csv"
echo "mode,step,loss,accuracy,payload_bytes,wire_bytes,seconds" > "$csv"
for mode in single dp zero1 zero2 zero3 tp moe pp bf16; do
  build/tools/chorus-train --mode "$mode" --ranks "$ranks" --epochs "$epochs" --samples "$samples" --csv "$csv"
done
for codec in bf16 topk:0.01; do
  build/tools/chorus-train --mode compress --codec "$codec" --ranks "$ranks" --epochs "$epochs" --samples "$samples" \
    --csv "$csv"
done
# Rank 1 at half speed, with the equal split and with the split following throughput.
for balance in off on; do
  build/tools/chorus-train --mode dp --slow-rank 1:2 --balance "$balance" --ranks "$ranks" --epochs "$epochs" \
    --samples "$samples" --csv "$csv"
done
# A parameter server (one more rank serves, the others work) under each synchronisation, worker 1 at half speed:
# bsp waits for it every step, ssp at most 2 steps, asp never.
for sync in bsp asp ssp; do
  build/tools/chorus-train --mode ps --sync "$sync" --slow-rank 1:2 --ranks "$((ranks + 1))" --epochs "$epochs" \
    --samples "$samples" --csv "$csv"
done
/usr/bin/python3 scripts/plot_training.py "$csv" "$out/training_curves.png"
