#!/usr/bin/env bash
# Every nccl*/pnccl* function chorus's libnccl.so.2 exports must exist in NVIDIA's libnccl.so.2 (2.28.9, from the
# CUDA toolkit) or be one of the functions NCCL 2.29-2.32 added (nccl_2_32_functions.txt): the same names, so
# programs and profilers bind to them. Every function NVIDIA's nccl.h declares, every listed one, and every one
# chorus's own nccl.h declares must be exported.
# Usage: exported_names.sh <chorus libnccl.so.2> <NVIDIA libnccl.so.2> <NVIDIA nccl.h> <2.32 list> <chorus nccl.h>
set -euo pipefail
ours=$1 theirs=$2 header=$3 list=$4 ourHeader=$5
names() { nm -D --defined-only "$1" | awk '$2 ~ /^[TW]$/ && $3 ~ /^p?nccl/ {print $3}' | sort -u; }
declaredIn() { grep -o '\bp\?nccl[A-Za-z0-9]*(' "$1" | tr -d '(' | sort -u; }
added=$(grep -v '^#' "$list" | sed '/^$/d' | awk '{print; print "p" $0}' | sort -u)
missing=$(comm -23 <(names "$ours") <(sort -u <(names "$theirs") <(echo "$added")))
if [ -n "$missing" ]; then
  echo "exported by chorus but neither by NVIDIA's libnccl nor in $list: $missing"
  exit 1
fi
for source in "$header" "$list" "$ourHeader"; do
  if [ "$source" = "$list" ]; then wanted=$added; else wanted=$(declaredIn "$source"); fi
  absent=$(comm -23 <(echo "$wanted") <(names "$ours"))
  if [ -n "$absent" ]; then
    echo "named by $source but not exported by chorus: $absent"
    exit 1
  fi
done
soname=$(objdump -p "$ours" | awk '/SONAME/ {print $2}')
[ "$soname" = "libnccl.so.2" ] || { echo "soname is '$soname', expected libnccl.so.2"; exit 1; }
echo "$(names "$ours" | wc -l) exported names checked ($(echo "$added" | wc -l) of NCCL 2.29-2.32), soname $soname"
