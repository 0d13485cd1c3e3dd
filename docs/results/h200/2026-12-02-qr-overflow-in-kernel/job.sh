#!/bin/bash
# Device job: QR bench side by side (before/after, alone on the GPU), then the GPU tests
# and the sanitizers side by side.
set -u
cd "$(dirname "$0")/.."
[ -f .gpu/tests.tar.xz ] && tar xJf .gpu/tests.tar.xz -C .gpu
. scripts/gpu-env
O=$1; mkdir -p $O
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $O/device.txt
ls .gpu/tests .gpu/bin >> $O/device.txt
NEW=.gpu/bin/batchlin; OLD=.gpu/bin/batchlin-old
printf "qr 1024 256 64\nqr 1024 256 32\nqr 2048 384 48\n" > /tmp/tall.txt
{
  for v in OLD NEW; do ${!v} bench --op qr --shrink 64 >/dev/null 2>&1; done  # compile/warm both
  for r in 1 2; do for v in OLD NEW; do echo "== $v f32 round $r"; ${!v} bench --op qr; done; done
  for r in 1 2; do for v in OLD NEW; do echo "== $v f64 round $r"; ${!v} bench --op qr --dtype f64; done; done
  for r in 1 2; do for v in OLD NEW; do for dt in f32 f64; do
    echo "== $v tall $dt round $r"; ${!v} bench --op qr --shapes /tmp/tall.txt --dtype $dt; done; done; done
} > $O/bench-side-by-side.log 2>&1
for t in qr_cuda-test reliability-test eigh-test svd-test qr-test batchlin-lib; do
  [ -x .gpu/tests/$t ] || continue
  # The device out-of-memory test takes all but a few MB of the GPU: alone, at the end.
  ( timeout 300 .gpu/tests/$t --test-threads=2 --skip device_out_of_memory_is_an_error > $O/t-$t.log 2>&1; echo "rc=$?" >> $O/t-$t.log ) &
done
CS=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null | head -1)
mkdir -p $O/ovf
for tool in memcheck racecheck synccheck; do
  lc=""; [ $tool = racecheck ] && lc="--launch-count 150"
  ( timeout 400 $CS --tool $tool $lc --error-exitcode 9 .gpu/tests/batchlin-lib --exact cuda::tests::qr_overflow_is_flagged_on_every_kernel --nocapture --test-threads=1 > $O/ovf/$tool.log 2>&1; echo "rc=$?" >> $O/ovf/$tool.log ) &
done
SANITIZE_TIMEOUT=240 SANITIZE_JOBS=4 SANITIZE_LAUNCH_COUNT=300 SANITIZE_TOOLS="racecheck memcheck" \
  SANITIZE_KERNELS="qr-cluster qr-tall qr-tile" scripts/gpu-sanitize $O/san-cluster > $O/san-cluster.out 2>&1 &
SANITIZE_TIMEOUT=240 SANITIZE_JOBS=3 SANITIZE_LAUNCH_COUNT=300 SANITIZE_TOOLS="memcheck" \
  SANITIZE_KERNELS="qr-warp qr-wy qr-smem qr-blocked" scripts/gpu-sanitize $O/san-mem > $O/san-mem.out 2>&1 &
wait
( .gpu/tests/batchlin-lib --exact cuda::tests::device_out_of_memory_is_an_error --test-threads=1 > $O/t-oom.log 2>&1; echo "rc=$?" >> $O/t-oom.log )
{
  grep -H "^test result\|FAILED\|panicked\|rc=" $O/t-*.log
  for f in $O/ovf/*.log; do echo "== $f"; grep -E "ERROR SUMMARY|RACECHECK SUMMARY|test result|rc=|Internal" $f; done
  cat $O/san-cluster/sanitize-summary.txt $O/san-mem/sanitize-summary.txt
} > $O/summary.txt 2>&1
grep -E "^==|^\| qr" $O/bench-side-by-side.log > $O/bench-table.txt
cd $O && tar czf logs.tgz t-*.log ovf san-cluster san-mem san-*.out && rm -rf t-*.log ovf san-cluster san-mem san-*.out
cat summary.txt
