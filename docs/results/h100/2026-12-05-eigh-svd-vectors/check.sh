#!/bin/bash
# The GPU run eigh-svd-vectors.patch waits for, in one device call (about 5 minutes).
# Here: build the CLI of main into .gpu/bin/batchlin-base (BATCHLIN_NVRTC=none cargo build
# --release -p batchlin-cli; cp target/release/batchlin .gpu/bin/batchlin-base; strip),
# then on a branch `git am -3 gpu-lab/pending/eigh-svd-vectors.patch` and scripts/gpu-bundle
# (the patched tests and CLI). The whole bundle (91 MB) and the tree (15 MB) pass the 64
# MiB a device call carries: keep .gpu/tests/{eigh-test,svd-test,batchlin-lib} and
# .gpu/bin/{batchlin,batchlin-base} (41 MB), move the rest (the wheel, c/, cache/, the
# other tests) aside. Then on the device:
#   run(command="bash gpu-lab/pending/eigh-svd-vectors-check.sh $OUT", carry=[".gpu"])
# The eigh and SVD suites beside memcheck, racecheck and synccheck on eigh-block and
# svd-bidiag, then `batchlin bench --kernel block|bidiag` of main's build and the patched
# one (float32 and float64), and the planner's tests with cuSOLVER present. Every log
# goes straight into OUTDIR, so that a call stopped at its limit brings back what ran.
O=${1:?}
mkdir -p "$O"
. scripts/gpu-env > "$O/env.txt" 2>&1
(SANITIZE_KERNELS="eigh-block svd-bidiag" SANITIZE_TOOLS="memcheck racecheck synccheck" \
  SANITIZE_JOBS=6 SANITIZE_TIMEOUT=240 scripts/gpu-sanitize /tmp/san >/tmp/san.log 2>&1;
  cp /tmp/san/sanitize-summary.txt "$O/sanitize-summary.txt") &
(timeout 280 .gpu/tests/eigh-test --test-threads=1 > "$O/eigh-test.log" 2>&1; echo "rc=$?" >> "$O/eigh-test.log") &
timeout 280 .gpu/tests/svd-test --test-threads=1 > "$O/svd-test.log" 2>&1; echo "rc=$?" >> "$O/svd-test.log"
wait
printf 'eigh 4096 32 32\neigh 1024 64 64\neigh 1024 128 128\neigh 256 256 256\n' >/tmp/eigh-shapes.txt
printf 'svd 4096 48 48\nsvd 1024 64 64\nsvd 1024 128 128\nsvd 256 256 256\n' >/tmp/svd-shapes.txt
{
  timeout 40 .gpu/tests/batchlin-lib plan:: --test-threads=1 2>&1 | grep -E 'test result|FAILED|panicked'
} > "$O/probes.log" 2>&1
for which in base patched; do
  bin=.gpu/bin/batchlin; [ "$which" = base ] && bin=.gpu/bin/batchlin-base
  for dt in f32 f64; do
    echo "== $which $dt"
    timeout 60 "$bin" bench --op eigh --kernel block --dtype "$dt" --shapes /tmp/eigh-shapes.txt 2>&1 | grep -E '^\| (eigh|op)'
    timeout 60 "$bin" bench --op svd --kernel bidiag --dtype "$dt" --shapes /tmp/svd-shapes.txt 2>&1 | grep -E '^\| (svd|op)'
  done
done > "$O/ab.log" 2>&1
grep -hE '^test result|FAILED|panicked|^rc=' "$O"/eigh-test.log "$O"/svd-test.log; cat "$O/sanitize-summary.txt" "$O/probes.log" "$O/ab.log"
