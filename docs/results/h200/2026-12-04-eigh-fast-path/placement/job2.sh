#!/bin/bash
# eigh `block` fast path, second cut (2026-12-04): the eigh suite; `block` with the work
# matrix in shared memory where it fits (batchlin) and always in global memory with
# vectors (batchlin-g), `cusolver` beside them, float32 and float64; the SVD's `bidiag`
# (its fast path's helpers moved to common.cu). run(command="cd .gpu-eigh && bash job2.sh
# $OUT", carry=[".gpu-eigh"]).
set -u
O=$1; mkdir -p $O
H=$(pwd)
cd ..; . scripts/gpu-env; cd "$H" || exit 1
T0=$(date +%s)
( timeout 150 ./eigh-test --test-threads=2 > $O/t-eigh.log 2>&1; echo "rc=$?" >> $O/t-eigh.log )
echo "tests $(( $(date +%s) - T0 ))s" >> $O/device.txt
{
  for b in batchlin batchlin-g; do
    echo "== $b block f32"; timeout 60 ./$b bench --op eigh --shapes f32s.txt --kernel block
    echo "== $b block f64"; timeout 60 ./$b bench --op eigh --shapes f64s.txt --kernel block --dtype f64
  done
  echo "== cusolver f32"; timeout 60 ./batchlin bench --op eigh --shapes f32s.txt --kernel cusolver
  echo "== cusolver f64"; timeout 60 ./batchlin bench --op eigh --shapes f64s.txt --kernel cusolver --dtype f64
  echo "== bidiag f32"; timeout 60 ./batchlin bench --op svd --shapes svd.txt --kernel bidiag
} > $O/bench2.log 2>&1
echo "bench $(( $(date +%s) - T0 ))s" >> $O/device.txt
grep -H "^test result\|FAILED\|panicked\|rc=" $O/t-eigh.log
cat $O/device.txt
grep "^==\|^| eigh\|^| svd" $O/bench2.log
