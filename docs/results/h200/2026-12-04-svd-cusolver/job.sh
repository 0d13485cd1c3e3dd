#!/bin/bash
# Device job: cuSOLVER's SVDs side by side (gpu-lab/cusolver_svd.cu), the `cusolver` SVD
# kernel against `jacobi` (batchlin bench --kernel), the shapes of record routed, then the
# GPU tests and memcheck on the new kernel family.
set -u
cd "$(dirname "$0")/.."
tar xJf .gpu/bundle.tar.xz -C .gpu
. scripts/gpu-env
O=$1; mkdir -p $O
T0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $O/device.txt
B=.gpu/bin/batchlin; J=.gpu-job
PARTS=${PARTS:-lab sweep tests}
want() { [[ " $PARTS " == *" $1 "* ]]; }
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
want lab && { $NVCC -O3 -arch=sm_90 -o /tmp/cusolver_svd gpu-lab/cusolver_svd.cu -lcusolver && timeout 150 /tmp/cusolver_svd; } > $O/cusolver-lab.log 2>&1
echo "lab done $(( $(date +%s) - T0 ))s" >> $O/device.txt
want sweep && {
  $B bench --op svd --shapes $J/sweep-c.txt --shrink 64 --kernel cusolver >/dev/null 2>&1
  echo "== cusolver f32"; timeout 120 $B bench --op svd --shapes $J/sweep-c.txt --kernel cusolver
  echo "== routed extra f32"; timeout 60 $B bench --op svd --shapes $J/routed-extra.txt
  echo "== cusolver f64"; timeout 60 $B bench --op svd --shapes $J/sweep-f64.txt --kernel cusolver --dtype f64
  echo "== routed f32"; timeout 80 $B bench --op svd
  echo "== routed f64"; timeout 80 $B bench --op svd --dtype f64
} > $O/svd-sweep.log 2>&1
echo "sweep done $(( $(date +%s) - T0 ))s" >> $O/device.txt
want tests && for t in svd-test reliability-test batchlin-lib; do
  [ -x .gpu/tests/$t ] || continue
  ( timeout 280 .gpu/tests/$t --test-threads=2 --skip device_out_of_memory_is_an_error > $O/t-$t.log 2>&1; echo "rc=$?" >> $O/t-$t.log ) &
done
want tests && SANITIZE_TIMEOUT=200 SANITIZE_JOBS=2 SANITIZE_LAUNCH_COUNT=300 SANITIZE_TOOLS="memcheck" \
  SANITIZE_KERNELS="svd-cusolver svd-tall" scripts/gpu-sanitize $O/san > $O/san.out 2>&1 &
wait
echo "all done $(( $(date +%s) - T0 ))s" >> $O/device.txt
{
  grep -H "^test result\|FAILED\|panicked\|rc=" $O/t-*.log
  cat $O/san/sanitize-summary.txt
} > $O/summary.txt 2>&1
cd $O && tar czf logs.tgz t-*.log san san.out 2>/dev/null; rm -rf t-*.log san san.out
cat summary.txt device.txt
