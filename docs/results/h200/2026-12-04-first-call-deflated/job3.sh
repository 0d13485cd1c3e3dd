#!/bin/bash
# Device job 3 (2026-12-04): the wheel with its CUBINs deflated: the first call of each
# operation in a fresh process with an empty cache, and the Python GPU suites.
set -u
cd "$(dirname "$0")/.."
O=$1; mkdir -p $O
python3 -m pip install -q --no-index --no-deps --target /tmp/site .gpu/blob/*.whl
export PYTHONPATH=/tmp/site PYTHONUNBUFFERED=1 XLA_PYTHON_CLIENT_PREALLOCATE=false
PYTHONPATH=/tmp/site python3 -c "import batchlin; print(batchlin.__file__)"
timeout 240 python3 bench/first_call.py > $O/first-call.log 2>&1; echo "rc=$?" >> $O/first-call.log
timeout 250 python3 -m pytest python/tests/test_cuda_eigh_svd.py python/tests/test_cuda.py -q -rs -p no:cacheprovider > $O/t-python.log 2>&1; echo "rc=$?" >> $O/t-python.log
cat $O/first-call.log; tail -3 $O/t-python.log
