#!/bin/bash
# Device job A: QR bench before/after the fused overflow check (alone), the SVD tall
# sweep against jacobi/warp (alone), then the GPU tests and the sanitizers side by side.
set -u
cd "$(dirname "$0")/.."
[ -f .gpu/tests.tar.xz ] && tar xJf .gpu/tests.tar.xz -C .gpu
. scripts/gpu-env
O=$1; mkdir -p $O
T0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $O/device.txt
NEW=.gpu/bin/batchlin; OLD=.gpu/bin/batchlin-old
printf "qr 1024 256 64\nqr 1024 256 32\nqr 2048 384 48\n" > /tmp/tall.txt
{
  for v in OLD NEW; do ${!v} bench --op qr --shrink 64 >/dev/null 2>&1; done
  for r in 1 2; do for v in OLD NEW; do for dt in f32 f64; do
    echo "== $v qr $dt round $r"; ${!v} bench --op qr --dtype $dt; done; done; done
  for r in 1 2; do for v in OLD NEW; do for dt in f32 f64; do
    echo "== $v tall $dt round $r"; ${!v} bench --op qr --shapes /tmp/tall.txt --dtype $dt; done; done; done
} > $O/qr-side-by-side.log 2>&1
echo "qr bench done $(( $(date +%s) - T0 ))s" >> $O/device.txt
{
  $NEW bench --op svd --shapes .gpu-job/sweep.txt --shrink 64 --kernel tall >/dev/null 2>&1
  for dt in f32 f64; do
    for k in tall jacobi; do echo "== svd $k $dt"; timeout 150 $NEW bench --op svd --shapes .gpu-job/sweep.txt --kernel $k --dtype $dt; done
    echo "== svd warp $dt"; printf "svd 4096 64 16\n" > /tmp/w.txt; $NEW bench --op svd --shapes /tmp/w.txt --kernel warp --dtype $dt
    echo "== svd routed $dt"; $NEW bench --op svd --dtype $dt
  done
} > $O/svd-sweep.log 2>&1
echo "svd sweep done $(( $(date +%s) - T0 ))s" >> $O/device.txt
for t in qr_cuda-test reliability-test eigh-test svd-test qr-test batchlin-lib; do
  [ -x .gpu/tests/$t ] || continue
  ( timeout 280 .gpu/tests/$t --test-threads=2 --skip device_out_of_memory_is_an_error > $O/t-$t.log 2>&1; echo "rc=$?" >> $O/t-$t.log ) &
done
CS=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null | head -1)
mkdir -p $O/ovf
for tool in memcheck synccheck; do
  ( timeout 250 $CS --tool $tool --error-exitcode 9 .gpu/tests/batchlin-lib --exact cuda::tests::qr_overflow_is_flagged_on_every_kernel --nocapture --test-threads=1 > $O/ovf/$tool.log 2>&1; echo "rc=$?" >> $O/ovf/$tool.log ) &
done
SANITIZE_TIMEOUT=230 SANITIZE_JOBS=4 SANITIZE_LAUNCH_COUNT=300 SANITIZE_TOOLS="racecheck memcheck" \
  SANITIZE_KERNELS="svd-tall qr-cluster qr-tall" scripts/gpu-sanitize $O/san-a > $O/san-a.out 2>&1 &
SANITIZE_TIMEOUT=230 SANITIZE_JOBS=2 SANITIZE_LAUNCH_COUNT=300 SANITIZE_TOOLS="synccheck" \
  SANITIZE_KERNELS="svd-tall" scripts/gpu-sanitize $O/san-b > $O/san-b.out 2>&1 &
wait
( timeout 60 .gpu/tests/batchlin-lib --exact cuda::tests::device_out_of_memory_is_an_error --test-threads=1 > $O/t-oom.log 2>&1; echo "rc=$?" >> $O/t-oom.log )
echo "all done $(( $(date +%s) - T0 ))s" >> $O/device.txt
{
  grep -H "^test result\|FAILED\|panicked\|rc=" $O/t-*.log
  for f in $O/ovf/*.log; do echo "== $f"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|test result|rc=|Internal" $f; done
  cat $O/san-a/sanitize-summary.txt $O/san-b/sanitize-summary.txt
} > $O/summary.txt 2>&1
cd $O && tar czf logs.tgz t-*.log ovf san-a san-b san-*.out && rm -rf t-*.log ovf san-a san-b san-*.out
cat summary.txt device.txt
