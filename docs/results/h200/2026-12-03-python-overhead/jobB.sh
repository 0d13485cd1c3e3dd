#!/bin/bash
# Device job B: the Python per-call overhead (alone), the Python GPU suites, the C API's
# GPU test, peers on the SVD shapes.
set -u
cd "$(dirname "$0")/.."
. scripts/gpu-env
O=$1; mkdir -p $O
T0=$(date +%s)
export XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --target /tmp/site .gpu/*.whl
export PYTHONPATH=/tmp/site
{
  echo "== default"; timeout 200 python3 bench/overhead.py --calls 2000
  echo "== shared-max 0"; timeout 150 python3 bench/overhead.py --calls 2000 --shared-max 0
} > $O/overhead.log 2>&1
echo "overhead done $(( $(date +%s) - T0 ))s" >> $O/times.txt
printf "svd 256 2048 64\nsvd 4096 256 32\nsvd 64 4096 128\nsvd 1024 64 256\n" > /tmp/ps.txt
timeout 200 python3 .gpu/peer_bench.py --shapes /tmp/ps.txt --peers torch-cusolver,cupy,jax --out $O/peers.csv > $O/peers.log 2>&1
echo "peers done $(( $(date +%s) - T0 ))s" >> $O/times.txt
{
  timeout 300 python3 -m pytest python/tests -q -rs -p no:cacheprovider 2>&1 | tail -40
  BATCHLIN_LIB_DIR=.gpu/c timeout 120 scripts/test-c cuda 2>&1 | tail -5
} > $O/python-c.log 2>&1
echo "all done $(( $(date +%s) - T0 ))s" >> $O/times.txt
cat $O/times.txt; tail -45 $O/overhead.log; tail -12 $O/peers.log; tail -12 $O/python-c.log
