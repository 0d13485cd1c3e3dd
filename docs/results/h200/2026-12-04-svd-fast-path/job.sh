#!/bin/bash
# Device job (2026-12-04): the SVD's `bidiag` kernel with its fast path (vectors by twisted
# factorisations; few: `bidiag` against `cusolver` for a few large matrices). sweep: the planner on the shapes
# of record and beyond (float32, float64), `bidiag` against `jacobi` (an earlier run of
# this job also timed `bidiag` and `cusolver` on shapes/few.txt); variants:
# bench/gpu_variants.py (svd and svdvals beside each other); lab: gpu-lab/
# svd_bidiag_lab.py; ncu: the counters of `bidiag` at 64 and 128 columns; tests: the Rust
# SVD and reliability suites, the sanitizers on svd-bidiag and svd-jacobi, the Python
# GPU suites and the C GPU test; peers: shared/bench/peer_bench.py on the SVD shapes of
# record. PARTS picks them; run(command="PARTS=... bash .gpu-job/job.sh $OUT/rN",
# carry=[".gpu", ".gpu-job"]) after scripts/gpu-bundle and packing .gpu into
# .gpu/bundle.tar.xz.
set -u
cd "$(dirname "$0")/.."
[ -f .gpu/bundle.tar.xz ] && tar xJf .gpu/bundle.tar.xz -C .gpu
. scripts/gpu-env
O=$1; mkdir -p $O
T0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $O/device.txt
B=.gpu/bin/batchlin; J=.gpu-job
PARTS=${PARTS:-sweep tests}
want() { [[ " $PARTS " == *" $1 "* ]]; }
export XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
want sweep && {
  $B bench --op svd --shapes $J/vs.txt --shrink 64 >/dev/null 2>&1
  echo "== routed f32"; timeout 120 $B bench --op svd --shapes $J/record.txt
  echo "== routed f64"; timeout 120 $B bench --op svd --shapes $J/record.txt --dtype f64
  for k in bidiag jacobi; do echo "== $k f32"; timeout 100 $B bench --op svd --shapes $J/vs.txt --kernel $k; done
  for k in bidiag jacobi; do echo "== $k f64"; timeout 100 $B bench --op svd --shapes $J/f64.txt --kernel $k --dtype f64; done
  for k in bidiag cusolver; do echo "== $k few f32"; timeout 100 $B bench --op svd --shapes $J/few.txt --kernel $k; done
} > $O/svd-sweep.log 2>&1
echo "sweep done $(( $(date +%s) - T0 ))s" >> $O/device.txt
want variants && {
  python3 -m pip install -q --no-index --no-deps --target /tmp/site .gpu/*.whl
  PYTHONPATH=/tmp/site timeout 200 python3 bench/gpu_variants.py --ops svd
} > $O/variants.log 2>&1
echo "variants done $(( $(date +%s) - T0 ))s" >> $O/device.txt
want lab && timeout 200 python3 gpu-lab/svd_bidiag_lab.py > $O/lab.log 2>&1
echo "lab done $(( $(date +%s) - T0 ))s" >> $O/device.txt
want ncu && {
  for f in n64 n128; do
    echo "== ncu bidiag $f"
    timeout 120 ncu --clock-control none --kernel-name regex:svd_bidiag --launch-count 1 \
      --section LaunchStats --section Occupancy --section SpeedOfLight --section WarpStateStats \
      $B bench --op svd --shapes $J/$f.txt --kernel bidiag --shrink 1
  done
} > $O/ncu.log 2>&1
echo "ncu done $(( $(date +%s) - T0 ))s" >> $O/device.txt
want tests && {
  ( timeout 300 .gpu/tests/svd-test --test-threads=2 > $O/t-svd.log 2>&1; echo "rc=$?" >> $O/t-svd.log ) &
  ( timeout 300 .gpu/tests/reliability-test --test-threads=1 > $O/t-rel.log 2>&1; echo "rc=$?" >> $O/t-rel.log ) &
  SANITIZE_TIMEOUT=250 SANITIZE_JOBS=3 SANITIZE_LAUNCH_COUNT=300 SANITIZE_TOOLS="memcheck racecheck synccheck" \
    SANITIZE_KERNELS="svd-bidiag svd-jacobi" scripts/gpu-sanitize $O/san > $O/san.out 2>&1 &
  {
    python3 -m pip install -q --no-index --no-deps --target /tmp/site .gpu/*.whl
    PYTHONPATH=/tmp/site timeout 250 python3 -m pytest python/tests/test_cuda_eigh_svd.py python/tests/test_cuda.py -q -rs -p no:cacheprovider
    echo "rc=$?"
  } > $O/t-python.log 2>&1
  ( BATCHLIN_LIB_DIR=.gpu/c timeout 200 scripts/test-c cuda > $O/t-c.log 2>&1; echo "rc=$?" >> $O/t-c.log )
  wait
}
echo "tests done $(( $(date +%s) - T0 ))s" >> $O/device.txt
want peers && {
  grep -E "^svd " bench/shapes.txt > /tmp/peer-shapes.txt
  timeout 200 python3 .gpu/peer_bench.py --shapes /tmp/peer-shapes.txt --peers torch-cusolver,cupy,jax --reps 3 --out $O/peers.csv
} > $O/peers.log 2>&1
echo "all done $(( $(date +%s) - T0 ))s" >> $O/device.txt
{
  grep -H "^test result\|FAILED\|panicked\|rc=\|passed\|failed" $O/t-*.log
  cat $O/san/sanitize-summary.txt
} > $O/summary.txt 2>&1
cd $O && tar czf logs.tgz t-*.log san san.out 2>/dev/null; rm -rf t-*.log san san.out
cat summary.txt device.txt
