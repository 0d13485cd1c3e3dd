#!/bin/bash
# The GPU run eigh-svd-vectors.patch waits for, in one device call (about 5 minutes).
# Here: build the CLI of main into .gpu/bin/batchlin-base (BATCHLIN_NVRTC=none cargo build
# --release -p batchlin-cli; cp target/release/batchlin .gpu/bin/batchlin-base), then
# `git am -3 gpu-lab/pending/eigh-svd-vectors.patch` and scripts/gpu-bundle (the patched
# tests and CLI), then on the device:
#   run(command="bash gpu-lab/pending/eigh-svd-vectors-check.sh $OUT", carry=[".gpu"])
# The eigh and SVD suites and memcheck, racecheck and synccheck on eigh-block and
# svd-bidiag side by side, then `batchlin bench --kernel block|bidiag` of main's build and
# the patched one in turn (float32 and float64). Writes OUTDIR/logs.tar.gz.
set -uo pipefail
O=${1:?usage: eigh-svd-vectors-check.sh OUTDIR}
B=${GPU_BUNDLE:-.gpu}
L=/tmp/check/logs
rm -rf /tmp/check && mkdir -p "$L" "$O"
. scripts/gpu-env >"$L/env.txt" 2>&1
S=$L/summary.txt
(SANITIZE_KERNELS="eigh-block svd-bidiag" SANITIZE_TOOLS="memcheck racecheck synccheck" \
  SANITIZE_JOBS=6 SANITIZE_TIMEOUT=240 scripts/gpu-sanitize "$L/san" >"$L/san.log" 2>&1) &
san=$!
for t in eigh-test svd-test; do
  timeout 300 "$B/tests/$t" --test-threads=1 >"$L/$t.log" 2>&1
  echo "$t rc=$? $(grep '^test result' "$L/$t.log")" >>"$S"
done
wait $san
cat "$L/san/sanitize-summary.txt" >>"$S" 2>/dev/null
printf 'eigh 4096 32 32\neigh 1024 64 64\neigh 1024 128 128\neigh 256 256 256\n' >/tmp/eigh-shapes.txt
printf 'svd 4096 48 48\nsvd 1024 64 64\nsvd 1024 128 128\nsvd 256 256 256\n' >/tmp/svd-shapes.txt
for round in 1 2; do
  for which in base patched; do
    bin=$B/bin/batchlin
    [ "$which" = base ] && bin=$B/bin/batchlin-base
    for dt in f32 f64; do
      echo "== $which round $round $dt" >>"$L/ab.log"
      timeout 120 "$bin" bench --op eigh --kernel block --dtype "$dt" --shapes /tmp/eigh-shapes.txt >>"$L/ab.log" 2>&1
      timeout 120 "$bin" bench --op svd --kernel bidiag --dtype "$dt" --shapes /tmp/svd-shapes.txt >>"$L/ab.log" 2>&1
    done
  done
done
tar czf "$O/logs.tar.gz" -C /tmp/check logs
cat "$S"
grep -E "^(==|\| (eigh|svd))" "$L/ab.log"
