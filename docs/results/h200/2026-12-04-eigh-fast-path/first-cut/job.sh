#!/bin/bash
# eigh `block` fast path (2026-12-04): the eigh suite on the GPU, then `batchlin bench` on
# the eigh shapes of record, routed and `block` forced, float32 and float64, this tree
# (batchlin) and main's (batchlin-main) side by side. run(command="cd .gpu-eigh && bash
# job.sh $OUT", carry=[".gpu-eigh"]).
set -u
O=$1; mkdir -p $O
H=$(pwd)
cd ..; . scripts/gpu-env; cd "$H" || exit 1
T0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $O/device.txt
# Kernels compiled through NVRTC once (both trees' sources).
./batchlin bench --op eigh --shapes shapes.txt --shrink 64 --kernel block >/dev/null 2>&1
./batchlin-main bench --op eigh --shapes shapes.txt --shrink 64 --kernel block >/dev/null 2>&1
echo "warm $(( $(date +%s) - T0 ))s" >> $O/device.txt
{
  for dt in f32 f64; do
    echo "== after routed $dt"; timeout 60 ./batchlin bench --op eigh --shapes shapes.txt --dtype $dt
    echo "== after block $dt"; timeout 60 ./batchlin bench --op eigh --shapes shapes.txt --kernel block --dtype $dt
    echo "== before block $dt"; timeout 90 ./batchlin-main bench --op eigh --shapes shapes.txt --kernel block --dtype $dt
  done
} > $O/bench.log 2>&1
echo "bench $(( $(date +%s) - T0 ))s" >> $O/device.txt
( timeout ${TEST_S:-240} ./eigh-test --test-threads=2 > $O/t-eigh.log 2>&1; echo "rc=$?" >> $O/t-eigh.log )
echo "tests $(( $(date +%s) - T0 ))s" >> $O/device.txt
grep -H "^test result\|FAILED\|panicked\|rc=" $O/t-eigh.log > $O/summary.txt
cat $O/summary.txt $O/device.txt; cat $O/bench.log | grep -v "^\s*$" | head -80
