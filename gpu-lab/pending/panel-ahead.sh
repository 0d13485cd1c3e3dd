#!/bin/bash
# The panel steps of the global-memory tridiagonalisation and bidiagonalisation loading
# their entries ahead of the sums (eigh-panel-ahead.patch, svd-panel-ahead.patch: the
# same sums in the same order, host-emulator outputs identical) against head, in the labs
# (CuPy's NVRTC, no build), head and patched alternated: eigh `block`'s tridiagonalisation
# (stop2) and whole eigh (full) beside the cluster prototype, then `bidiag`'s whole SVD
# (full) and bidiagonalisation (stop1). Why: the cluster prototype was no faster than a
# block, its steps latency-bound (docs/results/h100/2026-12-07-eigh-cluster).
#   run(command="bash gpu-lab/pending/panel-ahead.sh $OUT", kind="nvidia-h100-x1")
# About 4 minutes. Writes OUT/eigh.log and OUT/svd.log.
set -uo pipefail
OUT=${1:?usage: panel-ahead.sh OUT}
K=crates/batchlin/src/cuda/kernels
mkdir -p "$OUT" /tmp/k-head /tmp/k-new
cp $K/*.cu /tmp/k-head/ && cp $K/*.cu /tmp/k-new/
for p in eigh svd; do patch -s -d /tmp/k-new -p6 < gpu-lab/pending/$p-panel-ahead.patch || exit 1; done
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/device.txt"
cd gpu-lab
for rep in 1 2; do for v in head new; do
  echo "== $v float rep $rep"
  LAB_KERNELS=/tmp/k-$v LAB_SHAPES=1x1024x1024,16x1024x1024,16x512x512,256x256x256,64x300x300 \
    LAB_CONFIGS=8x512 timeout 100 python3 eigh_cluster_lab.py float 2>&1
done; done | tee "$OUT/eigh.log" | grep -v "^   whole"
for v in head new; do
  echo "== $v double"
  LAB_KERNELS=/tmp/k-$v LAB_SHAPES=1x1024x1024,16x512x512,64x256x256 LAB_CONFIGS=8x512 \
    timeout 100 python3 eigh_cluster_lab.py double 2>&1
done | tee -a "$OUT/eigh.log" | grep -v "^   whole"
for rep in 1 2; do for v in head new; do
  echo "== $v float rep $rep"
  LAB_KERNELS=/tmp/k-$v LAB_VARIANTS=full,stop1 LAB_SHAPES=256x256x256,64x300x300,8x512x512,1x1024x1024 \
    timeout 100 python3 svd_bidiag_lab.py "" float 2>&1
done; done | tee "$OUT/svd.log"
for v in head new; do
  echo "== $v double"
  LAB_KERNELS=/tmp/k-$v LAB_VARIANTS=full,stop1 LAB_SHAPES=256x200x200,64x256x256 \
    timeout 100 python3 svd_bidiag_lab.py "" double 2>&1
done | tee -a "$OUT/svd.log"
