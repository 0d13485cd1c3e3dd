#!/bin/bash
# Device job: eigh warp kernel. Bench (forced warp vs block, planner, peers), GPU tests, sanitizers.
set -u
cd "$(dirname "$0")/.."
[ -f .gpu/tests.tar.xz ] && tar xJf .gpu/tests.tar.xz -C .gpu
. scripts/gpu-env
O=$1; mkdir -p $O
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $O/device.txt
B=.gpu/bin/batchlin
printf "eigh 4096 8 8\neigh 4096 16 16\neigh 4096 24 24\neigh 4096 32 32\neigh 1024 32 32\neigh 4096 33 33\n" > /tmp/small.txt
{
  $B bench --op eigh --shrink 64 >/dev/null 2>&1
  for dt in f32 f64; do for r in 1 2; do
    for k in warp block; do echo "== $k $dt round $r"; $B bench --shapes /tmp/small.txt --kernel $k --dtype $dt; done
    echo "== planner $dt round $r"; $B bench --op eigh --dtype $dt
  done; done
} > $O/bench.log 2>&1
printf "eigh 4096 16 16\neigh 4096 32 32\n" > /tmp/peer-shapes.txt
P=$(ls .gpu/peer_bench.py 2>/dev/null)
[ -n "$P" ] && timeout 240 python3 $P --shapes /tmp/peer-shapes.txt --peers torch-cusolver,cupy,jax --out $O/peers.csv > $O/peers.log 2>&1
for t in eigh-test reliability-test batchlin-lib; do
  [ -x .gpu/tests/$t ] || continue
  ( timeout 300 .gpu/tests/$t --test-threads=2 --skip device_out_of_memory_is_an_error > $O/t-$t.log 2>&1; echo "rc=$?" >> $O/t-$t.log ) &
done
SANITIZE_TIMEOUT=240 SANITIZE_JOBS=4 SANITIZE_LAUNCH_COUNT=300 SANITIZE_TOOLS="memcheck racecheck synccheck initcheck" \
  SANITIZE_KERNELS="eigh-warp" scripts/gpu-sanitize $O/san > $O/san.out 2>&1 &
wait
{
  grep -H "^test result\|FAILED\|panicked\|rc=" $O/t-*.log
  cat $O/san/sanitize-summary.txt
} > $O/summary.txt 2>&1
grep -E "^==|^\| eigh" $O/bench.log > $O/bench-table.txt
cd $O && tar czf logs.tgz t-*.log san san.out && rm -rf t-*.log san san.out
cat summary.txt
