#!/bin/bash
# A short call: the spread check of cuSOLVER's eigh (two launches a tile of rows;
# `git apply gpu-lab/pending/eigh-check-spread.patch`, NVRTC-compiled for every
# architecture, not yet run on a GPU) under the eigh suite's forced-kernel tests, then
# timed against the CLI before any check (.gpu-pack/old-batchlin.xz: the release CLI of
# a build before 2026-12-07's check, xz'd), each result written as it comes. Bundle:
# the patched tree's tests/eigh-test, bin/batchlin and kernel cache as bundle.tar.xz.
#   run(command="mkdir -p .gpu-pack && cp .gpu3-pack/* .gpu-pack/ && bash gpu-lab/pending/session-e.sh $OUT",
#       carry=[".gpu3-pack"], kind="nvidia-h100-x1")
set -uo pipefail
OUT=${1:?usage: session-e.sh OUTDIR}
mkdir -p "$OUT" .gpu /tmp/old && tar xJf .gpu-pack/bundle.tar.xz -C .gpu
xz -dc .gpu-pack/old-batchlin.xz > /tmp/old/batchlin && chmod +x /tmp/old/batchlin
. scripts/gpu-env
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/device.txt"
timeout 100 .gpu/tests/eigh-test --test-threads=1 --nocapture eigh_structured_every_cuda_kernel eigh_every_cuda_kernel > "$OUT/tests.log" 2>&1
echo "rc $?" >> "$OUT/tests.log"
printf 'eigh 256 256 256\neigh 16 1024 1024\neigh 1 1024 1024\n' > /tmp/s32.txt
printf 'eigh 1024 96 96\neigh 1 1024 1024\n' > /tmp/s64.txt
for b in /tmp/old/batchlin .gpu/bin/batchlin /tmp/old/batchlin .gpu/bin/batchlin; do
  echo "== $b" >> "$OUT/check-cost.log"
  timeout 40 $b bench --op eigh --backend cuda --kernel cusolver --shapes /tmp/s32.txt >> "$OUT/check-cost.log" 2>&1
  timeout 40 $b bench --op eigh --backend cuda --kernel cusolver --dtype f64 --shapes /tmp/s64.txt >> "$OUT/check-cost.log" 2>&1
done
grep -E "panicked|^rc|test result" -A1 "$OUT/tests.log"
grep -E "^==|^\| eigh" "$OUT/check-cost.log"
