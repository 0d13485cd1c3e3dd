#!/bin/bash
# eigh `block` fast path, the tree that lands (2026-12-04): `batchlin bench` on the eigh
# shapes of record, routed and `block` forced, float32 and float64; then the eigh and SVD
# suites (the SVD's fast path shares the tridiagonal helpers now in common.cu).
# run(command="cd .gpu-eigh && bash job3.sh $OUT", carry=[".gpu-eigh"]).
set -u
O=$1; mkdir -p $O
H=$(pwd)
cd ..; . scripts/gpu-env; cd "$H" || exit 1
T0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $O/device.txt
./batchlin bench --op eigh --shapes shapes.txt --shrink 64 --kernel block >/dev/null 2>&1
{
  for dt in f32 f64; do
    echo "== routed $dt"; timeout 60 ./batchlin bench --op eigh --shapes shapes.txt --dtype $dt
    echo "== block $dt"; timeout 60 ./batchlin bench --op eigh --shapes shapes.txt --kernel block --dtype $dt
  done
} > $O/bench.log 2>&1
echo "bench $(( $(date +%s) - T0 ))s" >> $O/device.txt
( timeout 100 ./eigh-test --test-threads=2 > $O/t-eigh.log 2>&1; echo "rc=$?" >> $O/t-eigh.log )
echo "eigh tests $(( $(date +%s) - T0 ))s" >> $O/device.txt
( timeout ${SVD_S:-150} ./svd-test --test-threads=2 > $O/t-svd.log 2>&1; echo "rc=$?" >> $O/t-svd.log )
echo "svd tests $(( $(date +%s) - T0 ))s" >> $O/device.txt
grep -H "^test result\|FAILED\|panicked\|rc=" $O/t-*.log
cat $O/device.txt
grep "^==\|^| eigh" $O/bench.log
