#!/bin/bash
# Integration run (2026-12-04): the merged tree's GPU suites and the eigh / SVD shapes of
# record beside the peers. Binaries built here with BATCHLIN_NVRTC=none (kernels compiled
# through NVRTC on the device, a few seconds each), stripped, in .gpu-final/.
# run(command="bash .gpu-final/job.sh $OUT", carry=[".gpu-final"]); PARTS picks parts.
set -u
cd "$(dirname "$0")/.."
. scripts/gpu-env > /dev/null
O=$1; mkdir -p $O/logs; L=$O/logs
F=.gpu-final; B=$F/batchlin
T0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $L/device.txt
PARTS=${PARTS:-warm tests bench peers}
want() { [[ " $PARTS " == *" $1 "* ]]; }
export XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
grep -E "^(eigh|svd) " bench/shapes.txt > /tmp/record.txt
# Compile every kernel the benches and suites touch once, in parallel, before timing.
want warm && {
  ( $B bench --op eigh --shapes /tmp/record.txt --shrink 64 >/dev/null 2>&1 ) &
  ( $B bench --op svd --shapes /tmp/record.txt --shrink 64 >/dev/null 2>&1 ) &
  ( $B bench --op eigh --shapes /tmp/record.txt --shrink 64 --dtype f64 >/dev/null 2>&1 ) &
  ( $B bench --op svd --shapes /tmp/record.txt --shrink 64 --dtype f64 >/dev/null 2>&1 ) &
  wait
}
echo "warm done $(( $(date +%s) - T0 ))s" >> $L/device.txt
want tests && {
  for t in eigh-test svd-test reliability-test; do
    [ -x $F/$t ] && ( timeout 280 $F/$t --test-threads=2 > $L/t-$t.log 2>&1; echo "rc=$?" >> $L/t-$t.log ) &
  done
  [ -x $F/lib-test ] && ( timeout 220 $F/lib-test cuda:: --test-threads=2 > $L/t-lib.log 2>&1; echo "rc=$?" >> $L/t-lib.log ) &
  # The sanitizers on the two kernels this tree changed (racecheck on the small cases:
  # it tracks every shared-memory access).
  CS=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null | head -1)
  for tool in memcheck racecheck; do
    for fam in eigh-block svd-bidiag; do
      small=; [ $tool = racecheck ] && small=1
      ( BATCHLIN_SANITIZE_KERNELS=$fam BATCHLIN_SANITIZE_SMALL=$small timeout 220 $CS --tool $tool --launch-count 300 \
          $F/lib-test --ignored --exact cuda::tests::sanitize_every_kernel --test-threads=1 --nocapture \
          > $L/san-$tool-$fam.log 2>&1; echo "rc=$?" >> $L/san-$tool-$fam.log ) &
    done
  done
  wait
}
echo "tests done $(( $(date +%s) - T0 ))s" >> $L/device.txt
want bench && for op in eigh svd; do
  for dt in f32 f64; do
    echo "== routed $op $dt"; timeout 150 $B bench --op $op --shapes /tmp/record.txt --dtype $dt
  done
  [ -f $F/$op-kernels.txt ] && while read k file dt; do
    echo "== $op --kernel $k $file $dt"; timeout 100 $B bench --op $op --shapes $F/$file --kernel $k --dtype $dt
  done < $F/$op-kernels.txt
done > $L/bench.log 2>&1
echo "bench done $(( $(date +%s) - T0 ))s" >> $L/device.txt
want peers && timeout 120 python3 $F/peer_bench.py --shapes /tmp/record.txt --peers torch-cusolver,cupy,jax --reps 3 --out $L/peers.csv > $L/peers.log 2>&1
echo "all done $(( $(date +%s) - T0 ))s" >> $L/device.txt
grep -H "^test result\|FAILED\|panicked\|rc=\|ERROR SUMMARY\|cases$" $L/t-*.log $L/san-*.log > $L/summary.txt 2>&1
tar czf $O/logs.tgz -C $O logs
cat $L/summary.txt $L/device.txt
