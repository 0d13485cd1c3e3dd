#!/bin/bash
# On the device: run lab modes on every prebuilt lab binary in .gpu-lab (variants of the
# library kernels, built here by nvcc with -D flags), interleaved, rounds times.
#   gpu-lab/variants.sh MODE [ROUNDS]   -> $OUT/variants-MODE.log
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
cd "$(dirname "$0")/.."
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader
for r in $(seq 1 ${2:-1}); do
  for b in .gpu-lab/*; do
    echo "### $(basename $b) round $r"
    $b "$1" | grep -v "^device"
  done
done > $OUT/variants-$1.log 2>&1
echo "variants exit $?"
