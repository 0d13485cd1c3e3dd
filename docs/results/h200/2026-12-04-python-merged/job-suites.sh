#!/bin/bash
# Python and C GPU suites on the merged tree (2026-12-04): the wheel and libbatchlin.so
# built with BATCHLIN_NVRTC=none (kernels compiled by NVRTC on the device, into one disk
# cache the processes share), then the per-call overhead with the torch ops registered
# below custom_op. run(command="bash .gpu-py/job.sh $OUT", carry=[".gpu-py"]).
set -u
cd "$(dirname "$0")/.."
. scripts/gpu-env > /dev/null
O=$1; L=$O/logs; mkdir -p $L
T0=$(date +%s)
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $L/device.txt
python3 -c "import torch; print('torch', torch.__version__)" >> $L/device.txt
export XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --target /tmp/site .gpu-py/*.whl
export PYTHONPATH=/tmp/site
for f in test_cuda test_cuda_eigh_svd test_torch; do
  ( timeout 300 python3 -m pytest python/tests/$f.py -q -rs -p no:cacheprovider > $L/py-$f.log 2>&1; echo "rc=$?" >> $L/py-$f.log ) &
done
( BATCHLIN_LIB_DIR=.gpu-py timeout 300 scripts/test-c cuda > $L/c.log 2>&1; echo "rc=$?" >> $L/c.log ) &
wait
echo "tests done $(( $(date +%s) - T0 ))s" >> $L/device.txt
python3 -c "import batchlin.torch as bt; print('own autograd kernel:', bt._OWN_AUTOGRAD)" >> $L/device.txt 2>&1
timeout 100 python3 bench/overhead.py --calls 2000 --frameworks torch,cupy --shapes 1x4x4,64x16x16,4x64x64 > $L/overhead.log 2>&1
timeout 60 python3 bench/overhead_ops.py > $L/overhead_ops.log 2>&1
echo "all done $(( $(date +%s) - T0 ))s" >> $L/device.txt
grep -H "passed\|failed\|rc=\|error" $L/py-*.log $L/c.log | tail -n 20 > $L/summary.txt
tar czf $O/logs.tgz -C $O logs
cat $L/summary.txt $L/device.txt
