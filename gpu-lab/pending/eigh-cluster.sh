#!/bin/bash
# The cluster prototype (gpu-lab/eigh_cluster.cu; docs/proposals/gpu-large-matrices.md,
# step 2): its tridiagonalisation and whole eigh timed against `block`'s at few large
# matrices, both types (CuPy's NVRTC on the device, no build): what a cluster a matrix
# buys before the library's kernel is written. Writes OUT/cluster.log.
#   run(command="bash gpu-lab/pending/eigh-cluster.sh $OUT", kind="nvidia-h100-x1")
set -uo pipefail
OUT=${1:?usage: eigh-cluster.sh OUT}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/device.txt"
cd gpu-lab
LAB_SHAPES=1x1024x1024,16x1024x1024,16x512x512,1x2048x2048 LAB_CONFIGS=8x512,8x1024,4x1024,1x1024 \
  timeout 300 python3 eigh_cluster_lab.py float 2>&1 | tee -a "$OUT/cluster.log"
LAB_SHAPES=1x1024x1024,16x1024x1024,16x512x512 LAB_CONFIGS=8x512,8x1024,1x1024 \
  timeout 220 python3 eigh_cluster_lab.py double 2>&1 | tee -a "$OUT/cluster.log"
