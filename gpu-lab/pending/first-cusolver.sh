#!/bin/bash
# The first call of shapes the GPU's table sends to cuSOLVER, each in a fresh process
# (bench/first_call.py), with the wheel in .gpu-pack/: a cold cuSOLVER is detoured to the
# tables' next choice while that costs less than its first use (plan.rs `plan_call`).
#   run(command="bash gpu-lab/pending/first-cusolver.sh $OUT", carry=[".gpu-pack"])
set -uo pipefail
OUT=${1:?usage: first-cusolver.sh OUTDIR}
mkdir -p "$OUT" && rm -rf /tmp/site
python3 -m pip install -q --no-index --no-deps --target /tmp/site .gpu-pack/*.whl
export PYTHONPATH=/tmp/site
timeout 240 python3 bench/first_call.py --shapes ${GPU_FIRST_SHAPES:-256x256x256,64x256x256,1x1024x1024} \
  --calls eigh,eigvalsh,svd --dtypes float32,float64 2>&1 | tee "$OUT/first.log"
# Then the Python GPU suites (their cuSOLVER shapes' first calls detoured), if asked.
if [ "${GPU_PYTEST:-0}" = 1 ]; then
  timeout "${GPU_PYTEST_S:-240}" python3 -m pytest python/tests/test_cuda.py \
    python/tests/test_cuda_eigh_svd.py -q -rs -p no:cacheprovider > "$OUT/pytest.log" 2>&1
  echo "pytest rc $?" >> "$OUT/pytest.log"
  tail -3 "$OUT/pytest.log"
fi
