#!/bin/bash
# Issue 20 probe (2026-12-04): the QR discard-info change, old wheel (main c51eb24's
# bundle) against new (info 0 passed to the QR kernels), alternated: per-call host split,
# overhead, first calls. run(command="bash .gpu-i20/job.sh $OUT", carry=[".gpu-i20"]).
set -u
cd "$(dirname "$0")/.."
. scripts/gpu-env >/dev/null
O=$1; mkdir -p $O/logs
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $O/logs/device.txt
export XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
for w in old new; do
  python3 -m pip install -q --no-index --no-deps --target /tmp/site-$w .gpu-i20/$w/*.whl
done
for round in 1; do
  for w in old new; do
    export PYTHONPATH=/tmp/site-$w
    echo "== $w round $round" >> $O/logs/split.log
    timeout 120 python3 bench/overhead_split.py --calls 300 >> $O/logs/split.log 2>&1
    echo "== $w round $round" >> $O/logs/overhead.log
    timeout 150 python3 bench/overhead.py --calls 2000 --frameworks torch,cupy --shapes 1x4x4,64x16x16,4x64x64 >> $O/logs/overhead.log 2>&1
    echo "== $w round $round" >> $O/logs/first.log
    timeout 150 python3 bench/first_call.py --shapes 4096x32x32,256x128x128 --dtypes float32 --calls qr,eigh >> $O/logs/first.log 2>&1
  done
done
unset PYTHONPATH
# The change's checks: the library's CUDA tests on a build with the deflated CUBINs
# embedded (gpu_loads_embedded_kernels among them), the Python GPU suites on the new wheel.
( timeout 200 .gpu-i20/lib-test cuda:: --test-threads=2 > $O/logs/lib-test.log 2>&1; echo "rc=$?" >> $O/logs/lib-test.log ) &
( PYTHONPATH=/tmp/site-new timeout 250 python3 -m pytest python/tests/test_cuda.py python/tests/test_cuda_eigh_svd.py -q -rs -p no:cacheprovider > $O/logs/pytest.log 2>&1; echo "rc=$?" >> $O/logs/pytest.log )
wait
tar czf $O/logs.tgz -C $O logs
