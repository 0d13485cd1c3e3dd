#!/bin/bash
# The rules (no cost table) against the kernels they choose between, at the shapes the
# 2026-12-07 rules changed: eigh / eigvalsh batches past 256 and at 192-256 (`block`
# or `cusolver`), QR beyond 128 rows (`blocked` or `smem`). Each shape routed, then
# each kernel forced (`batchlin bench`, data on the GPU, checked against float64).
#   run(command="bash gpu-lab/pending/rules-check.sh $OUT", carry=[".gpu-pack"])
OUT=${1:?usage: rules-check.sh OUTDIR}
mkdir -p "$OUT" .gpu && tar xJf .gpu-pack/bundle.tar.xz -C .gpu
. scripts/gpu-env > /dev/null
export BATCHLIN_TABLE=off
printf 'eigh 4 289 289\neigh 2 204 204\neigh 64 256 256\neigh 4 672 672\n' > /tmp/eigh.txt
printf 'qr 20 283 99\nqr 62 159 26\nqr 4 182 91\nqr 8 23 736\n' > /tmp/qr.txt
{
  nvidia-smi --query-gpu=name --format=csv,noheader
  for v in eigh eigvalsh; do for k in "" block cusolver; do
    echo "== eigh $v ${k:-routed}"
    timeout 60 .gpu/bin/batchlin bench --shapes /tmp/eigh.txt --variant "$v" ${k:+--kernel $k} 2>&1
  done; done
  for v in qr qr-r; do for dt in f32 f64; do for k in "" blocked smem; do
    echo "== qr $v $dt ${k:-routed}"
    timeout 60 .gpu/bin/batchlin bench --shapes /tmp/qr.txt --variant "$v" --dtype $dt ${k:+--kernel $k} 2>&1
  done; done; done
} > "$OUT/rules-check.log" 2>&1
grep -c "^==" "$OUT/rules-check.log"
