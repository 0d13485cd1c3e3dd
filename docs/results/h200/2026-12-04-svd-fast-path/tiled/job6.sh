#!/bin/bash
# Device job 6 (2026-12-04): the shapes of record with bidiag's products as 4 x 4 tiles
# (the CLI built from that tree; its kernels compiled by NVRTC there), then the peers.
set -u
cd "$(dirname "$0")/.."
tar xJf .gpu/bundle.tar.xz -C .gpu
. scripts/gpu-env
O=$1; mkdir -p $O
B=.gpu/blob/batchlin; J=.gpu-job
{
  $B bench --op svd --shapes $J/vs.txt --shrink 64 >/dev/null 2>&1
  echo "== routed f32"; timeout 100 $B bench --op svd --shapes $J/record.txt
  echo "== routed f64"; timeout 100 $B bench --op svd --shapes $J/record.txt --dtype f64
  echo "== bidiag f32"; timeout 60 $B bench --op svd --shapes $J/vs.txt --kernel bidiag
} > $O/sweep.log 2>&1
grep -E "^\| svd" $O/sweep.log
grep -E "^svd " bench/shapes.txt > /tmp/peer-shapes.txt
timeout 200 python3 .gpu/peer_bench.py --shapes /tmp/peer-shapes.txt --peers torch-cusolver,cupy,jax --reps 3 --out $O/peers.csv > $O/peers.log 2>&1
grep "^svd" $O/peers.log
