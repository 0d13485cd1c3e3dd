#!/bin/bash
# One call: the Python GPU path's host overhead, this tree's python/batchlin (`new`: the
# third pass, docs/proposals/first-call.md) against the wheel's own Python (`old`),
# alternated, over the wheel's native library; outputs shared (the default) and apart
# (--shared-max 0); then the Python CUDA and torch suites on `new`.
#   run(command="bash gpu-lab/pending/session-i.sh $OUT", carry=[".gpu6-pack"], kind="nvidia-h100-x1")
# .gpu6-pack: a wheel whose Python files are `old` (scripts/gpu-bundle's, built at 1a7d921).
set -uo pipefail
OUT=${1:?usage: session-i.sh OUTDIR}
P=.gpu6-pack
mkdir -p "$OUT" && rm -rf /tmp/site-old /tmp/site-new
python3 -m pip install -q --no-index --no-deps --target /tmp/site-old $P/*.whl
cp -r /tmp/site-old /tmp/site-new && cp python/batchlin/*.py /tmp/site-new/batchlin/
. scripts/gpu-env > /dev/null
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/device.txt"
for rep in 1 2 3; do for v in old new; do
  echo "== $v rep $rep" >> "$OUT/overhead.log"
  PYTHONPATH=/tmp/site-$v timeout 90 python3 bench/overhead.py --calls 2000 --shapes 1x4x4,64x16x16 \
    --frameworks torch,cupy >> "$OUT/overhead.log" 2>&1
done; done
for v in old new; do
  echo "== $v apart (--shared-max 0)" >> "$OUT/overhead.log"
  PYTHONPATH=/tmp/site-$v timeout 90 python3 bench/overhead.py --calls 2000 --shapes 1x4x4,64x16x16 \
    --frameworks torch,cupy --shared-max 0 >> "$OUT/overhead.log" 2>&1
done
grep -E "^==|^\|" "$OUT/overhead.log" | head -80
echo "overhead done at $SECONDS s"
PYTHONPATH=/tmp/site-new timeout 240 python3 -m pytest python/tests/test_cuda.py python/tests/test_cuda_eigh_svd.py \
  python/tests/test_torch.py -q -rs -p no:cacheprovider > "$OUT/pytest.log" 2>&1
echo "pytest rc $?" >> "$OUT/pytest.log"; tail -5 "$OUT/pytest.log"
