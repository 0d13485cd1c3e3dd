#!/bin/bash
# One short call: eigh's GPU tests (cuSOLVER's checked output, every kernel forced on
# structured input), then cuSOLVER's eigh timed with and without the check: the CLI
# before it (.gpu-pack/old-batchlin.xz: a release CLI built before 2026-12-07's check,
# xz'd) and the bundle's, alternated, `--kernel cusolver`; each result written as it comes.
#   run(command="mkdir -p .gpu-pack && cp .gpu3-pack/* .gpu-pack/ && bash gpu-lab/pending/session-d.sh $OUT",
#       carry=[".gpu3-pack"], timeout_s=600, kind="nvidia-h100-x1")
# bundle.tar.xz: tests/<TESTS>, bin/batchlin and the kernel cache of the tree to test.
# TESTS (default "eigh-test batchlin-lib"), FILTER (test names; default all) and REPS
# (default 2) trim it for a short budget, e.g. TESTS=eigh-test
# FILTER="eigh_structured_every_cuda_kernel eigh_every_cuda_kernel" REPS=1.
set -uo pipefail
OUT=${1:?usage: session-d.sh OUTDIR}
mkdir -p "$OUT" .gpu /tmp/old && tar xJf .gpu-pack/bundle.tar.xz -C .gpu
xz -dc .gpu-pack/old-batchlin.xz > /tmp/old/batchlin && chmod +x /tmp/old/batchlin
. scripts/gpu-env
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/device.txt"
for t in ${TESTS:-eigh-test batchlin-lib}; do
  echo "== $t" >> "$OUT/tests.log"
  # shellcheck disable=SC2086 # FILTER: test names, split on purpose
  timeout 200 .gpu/tests/$t --test-threads=1 --nocapture ${FILTER:-} >> "$OUT/tests.log" 2>&1
  echo "rc $?" >> "$OUT/tests.log"
done
printf 'eigh 256 256 256\neigh 64 200 200\neigh 16 1024 1024\neigh 1 1024 1024\n' > /tmp/s32.txt
printf 'eigh 1024 96 96\neigh 256 128 128\neigh 16 1024 1024\neigh 1 1024 1024\n' > /tmp/s64.txt
for rep in $(seq 1 "${REPS:-2}"); do
  for b in /tmp/old/batchlin .gpu/bin/batchlin; do
    echo "== $b rep $rep" >> "$OUT/check-cost.log"
    timeout 60 $b bench --op eigh --backend cuda --kernel cusolver --shapes /tmp/s32.txt >> "$OUT/check-cost.log" 2>&1
    timeout 60 $b bench --op eigh --backend cuda --kernel cusolver --dtype f64 --shapes /tmp/s64.txt >> "$OUT/check-cost.log" 2>&1
  done
done
grep -E "^test .*FAILED|panicked|^rc|test result" "$OUT/tests.log"
grep -E "^==|^\| eigh" "$OUT/check-cost.log"
