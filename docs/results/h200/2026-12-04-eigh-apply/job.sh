#!/bin/bash
# Device job (2026-12-04, eigh-apply): the `block` eigh's fast path with the
# tridiagonalisation's reflectors applied to X in the output (common.cu bl_refl_apply,
# shared with the `bidiag` SVD) in place of forming Q and multiplying by it.
# tests: the Rust eigh and SVD suites side by side; bench: eigh --kernel block f32/f64,
# svd routed f32/f64.
# run(command="bash .gpu-eapply/job.sh $OUT", carry=[".gpu-eapply"], timeout_s=240)
set -u
cd "$(dirname "$0")/.."
. scripts/gpu-env >/dev/null
O=$1; mkdir -p $O
D=.gpu-eapply; B=$D/batchlin
T0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $O/device.txt
( timeout 150 $D/eigh-test --test-threads=2 > $O/t-eigh.log 2>&1; echo "rc=$?" >> $O/t-eigh.log ) &
( timeout 150 $D/svd-test --test-threads=2 > $O/t-svd.log 2>&1; echo "rc=$?" >> $O/t-svd.log ) &
wait
echo "tests done $(( $(date +%s) - T0 ))s" >> $O/device.txt
{
  for dt in f32 f64; do
    echo "== eigh block $dt"; timeout 30 $B bench --op eigh --shapes $D/shapes-eigh.txt --dtype $dt --kernel block
  done
  for dt in f32 f64; do
    echo "== svd routed $dt"; timeout 25 $B bench --op svd --shapes $D/shapes-svd.txt --dtype $dt
  done
} > $O/bench.log 2>&1
echo "bench done $(( $(date +%s) - T0 ))s" >> $O/device.txt
grep -h "^test \|test result\|rc=\|panicked" $O/t-eigh.log $O/t-svd.log > $O/tests-summary.txt 2>&1
cat $O/tests-summary.txt $O/device.txt $O/bench.log
