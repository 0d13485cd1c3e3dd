#!/bin/bash
# The cluster tridiagonalisation prototype (gpu-lab/eigh_cluster.cu;
# docs/proposals/gpu-large-matrices.md, step 2) timed against `block`'s tridiagonalisation
# at few large matrices, both types (CuPy's NVRTC on the device, no build): what a
# cluster a matrix buys before the rest of eigh is written for it. Writes OUT/cluster.log.
#   run(command="bash gpu-lab/pending/eigh-cluster.sh $OUT", kind="nvidia-h100-x1")
set -uo pipefail
OUT=${1:?usage: eigh-cluster.sh OUT}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/device.txt"
cd gpu-lab
timeout 280 python3 eigh_cluster_lab.py float 2>&1 | tee -a "$OUT/cluster.log"
LAB_SHAPES=1x1024x1024,16x1024x1024,16x512x512 LAB_CONFIGS=8x512,8x1024,1x1024 \
  timeout 200 python3 eigh_cluster_lab.py double 2>&1 | tee -a "$OUT/cluster.log"
