#!/bin/bash
# One call after session-c.sh (the suites): eigh `block` version 3 (its products p and p.v
# as compensated sums) and cuSOLVER's eigh check spread over the grid, timed against two
# earlier CLIs alternated (old: before the check; head: the check a block a matrix,
# `block` version 2), each forced; then eigh measured again over the tables of
# docs/results/h100/2026-12-07-retune-eigh (retune-eigh.sh, both kernels' versions moved
# on) and checked held out; then compute-sanitizer memcheck on the structured eigh test.
#   run(command="mkdir -p .gpu-pack && cp .gpu3-pack/* .gpu-pack/ && bash gpu-lab/pending/session-f.sh $OUT",
#       carry=[".gpu3-pack"], timeout_s=600, kind="nvidia-h100-x1")
# .gpu3-pack: bundle.tar.xz (tests, bin, cache), old-batchlin.xz, head-batchlin.xz,
# prev-tables.tar.gz (that folder's tables.tar.gz).
set -uo pipefail
OUT=${1:?usage: session-f.sh OUTDIR}
mkdir -p "$OUT" .gpu /tmp/cli && tar xJf .gpu-pack/bundle.tar.xz -C .gpu
for v in old head; do xz -dc .gpu-pack/$v-batchlin.xz > /tmp/cli/$v && chmod +x /tmp/cli/$v; done
. scripts/gpu-env > /dev/null
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/device.txt"
printf 'eigh 256 256 256\neigh 64 200 200\neigh 16 1024 1024\neigh 1 1024 1024\n' > /tmp/c32.txt
printf 'eigh 1024 96 96\neigh 256 128 128\neigh 1 1024 1024\n' > /tmp/c64.txt
printf 'eigh 1024 64 64\neigh 1024 128 128\neigh 256 200 200\neigh 64 257 257\n' > /tmp/b32.txt
printf 'eigh 1024 64 64\neigh 256 128 128\neigh 64 200 200\neigh 16 257 257\n' > /tmp/b64.txt
for rep in 1 2; do
  for b in /tmp/cli/old /tmp/cli/head .gpu/bin/batchlin; do
    echo "== $b rep $rep" >> "$OUT/ab.log"
    timeout 60 $b bench --op eigh --backend cuda --kernel cusolver --shapes /tmp/c32.txt >> "$OUT/ab.log" 2>&1
    timeout 60 $b bench --op eigh --backend cuda --kernel cusolver --dtype f64 --shapes /tmp/c64.txt >> "$OUT/ab.log" 2>&1
    [ "$b" = /tmp/cli/old ] && continue  # old and head share `block` version 2
    timeout 60 $b bench --op eigh --backend cuda --kernel block --shapes /tmp/b32.txt >> "$OUT/ab.log" 2>&1
    timeout 60 $b bench --op eigh --backend cuda --kernel block --dtype f64 --shapes /tmp/b64.txt >> "$OUT/ab.log" 2>&1
  done
done
grep -E "^==|^\| eigh" "$OUT/ab.log" | sed 's/|[^|]*|[^|]*$//'
# retune-eigh.sh extracts the bundle again and writes retune.tar.gz, check.log, check.tar.gz.
RETUNE_ROUTING=0 timeout 330 bash gpu-lab/pending/retune-eigh.sh "$OUT" 3m 2m > /dev/null 2>&1
echo "retune rc $?"; tail -4 "$OUT/tune.log"; grep -iE "geometric|regret|worst" "$OUT/check.log" | head -8
timeout 120 compute-sanitizer --tool memcheck --print-limit 20 .gpu/tests/eigh-test --test-threads=1 \
  eigh_structured_every_cuda_kernel > "$OUT/memcheck.log" 2>&1
echo "memcheck rc $?" >> "$OUT/memcheck.log"; tail -6 "$OUT/memcheck.log"
