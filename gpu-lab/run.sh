#!/bin/bash
# On the device: run the QR lab (prebuilt .gpu/qr_lab if it runs, else build here).
OUT=${OUT:-/tmp/out}; mkdir -p $OUT
cd "$(dirname "$0")/.."
nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv,noheader
BIN=.gpu/qr_lab
if ! $BIN nothing >/dev/null 2>&1; then
  echo "prebuilt qr_lab did not run; building"; nvcc -O3 -arch=sm_90 -o /tmp/qr_lab gpu-lab/qr_lab.cu && BIN=/tmp/qr_lab
fi
$BIN "${1:-all}" > $OUT/qr_lab.log 2>&1; echo "qr_lab exit $?" | tee -a $OUT/qr_lab.log
