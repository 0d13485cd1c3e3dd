#!/bin/bash
# eigh-panel-ahead.patch (the panel steps of the global-memory tridiagonalisation load
# their column or rows ahead of the sums: `block` at 1024 was latency-bound, the
# cluster prototype no faster, docs/results/h100/2026-12-07-eigh-cluster) against head
# in the lab (CuPy's NVRTC, no build): block's tridiagonalisation (stop2), its whole eigh
# (full) and the cluster prototype, float32 then float64, head and patched alternated.
#   run(command="bash gpu-lab/pending/eigh-panel-ahead.sh $OUT", kind="nvidia-h100-x1")
set -uo pipefail
OUT=${1:?usage: eigh-panel-ahead.sh OUT}
K=crates/batchlin/src/cuda/kernels
mkdir -p "$OUT" /tmp/k-head /tmp/k-new
cp $K/*.cu /tmp/k-head/ && cp $K/*.cu /tmp/k-new/
patch -s -d /tmp/k-new -p6 < gpu-lab/pending/eigh-panel-ahead.patch || exit 1
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/device.txt"
cd gpu-lab
for rep in 1 2; do for v in head new; do
  echo "== $v float rep $rep"
  LAB_KERNELS=/tmp/k-$v LAB_SHAPES=1x1024x1024,16x1024x1024,16x512x512,256x256x256,64x300x300 \
    LAB_CONFIGS=8x512 timeout 100 python3 eigh_cluster_lab.py float 2>&1
done; done | tee "$OUT/ab.log" | grep -v "^   whole"
for v in head new; do
  echo "== $v double"
  LAB_KERNELS=/tmp/k-$v LAB_SHAPES=1x1024x1024,16x512x512,64x256x256 LAB_CONFIGS=8x512 \
    timeout 100 python3 eigh_cluster_lab.py double 2>&1
done | tee -a "$OUT/ab.log" | grep -v "^   whole"
