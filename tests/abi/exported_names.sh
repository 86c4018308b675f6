#!/usr/bin/env bash
# Every nccl*/pnccl* function chorus's libnccl.so.2 exports must exist in NVIDIA's libnccl.so.2 too (same
# names, so programs and profilers bind to them), and every function NVIDIA's nccl.h declares must be exported.
set -euo pipefail
ours=$1 theirs=$2 header=$3
names() { nm -D --defined-only "$1" | awk '$2 ~ /^[TW]$/ && $3 ~ /^p?nccl/ {print $3}' | sort -u; }
missing=$(comm -23 <(names "$ours") <(names "$theirs"))
if [ -n "$missing" ]; then
  echo "exported by chorus but not by NVIDIA's libnccl: $missing"
  exit 1
fi
declared=$(grep -o '\bp\?nccl[A-Za-z]*(' "$header" | tr -d '(' | sort -u)
absent=$(comm -23 <(echo "$declared") <(names "$ours"))
if [ -n "$absent" ]; then
  echo "declared by NVIDIA's nccl.h but not exported by chorus: $absent"
  exit 1
fi
soname=$(objdump -p "$ours" | awk '/SONAME/ {print $2}')
[ "$soname" = "libnccl.so.2" ] || { echo "soname is '$soname', expected libnccl.so.2"; exit 1; }
echo "$(names "$ours" | wc -l) exported names checked, soname $soname"
