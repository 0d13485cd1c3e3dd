#!/bin/bash
# Where eigh `block` (version 5) and SVD `bidiag` (version 3) spend their time at the
# shapes of record, by the labs' stopped kernels (CuPy's NVRTC on the device, no build):
# eigh stopped after the load (stop1), the tridiagonalisation (stop2), the bisection
# (stop3), the twisted factorisations (stop4), the write before the reflectors' apply
# (stop5), and whole (full); the SVD after the bidiagonalisation (stop1) and the fast
# path's vectors (stop2), and whole. And panels of 8 and 32 steps where A is in global
# memory (the library: 16; `p8`, `p32`, and stopped after the reduction `s2p*` /
# `s1p*`; both checked in the host emulator with EMU_DEFINE=BL_EIGH_PANEL=8|32 and
# BL_SVD_PANEL=8|32). Both types, at most 130 s a lab run (rows print as they come).
# Writes OUT/phases.log.
#   run(command="bash gpu-lab/pending/phases.sh $OUT", kind="nvidia-h100-x1")
set -uo pipefail
OUT=${1:?usage: phases.sh OUT}
mkdir -p "$OUT"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader | tee "$OUT/device.txt"
cd gpu-lab
for dt in float double; do
  LAB_VARIANTS=full,stop1,stop2,stop3,stop4,stop5,p8,p32,s2p8,s2p32 \
    LAB_SHAPES=4096x32x32,1024x64x64,1024x128x128,256x256x256,16x512x512 \
    timeout 130 python3 eigh_block_lab.py $dt 2>&1 | tee -a "$OUT/phases.log"
  LAB_VARIANTS=full,stop1,stop2,p8,p32,s1p8,s1p32 \
    LAB_SHAPES=1024x64x64,1024x128x128,256x256x256,8x512x512,256x400x256 \
    timeout 130 python3 svd_bidiag_lab.py "" $dt 2>&1 | tee -a "$OUT/phases.log"
done
