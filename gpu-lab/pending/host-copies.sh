#!/bin/bash
# gpu-lab/pending/host_copies.py as is and with glibc keeping freed memory, the wheel of
# .gpu-pack (no tables: BATCHLIN_TABLE=off, the calls forced by backend=).
#   run(command="bash gpu-lab/pending/host-copies.sh $OUT", carry=[".gpu-pack"])
OUT=${1:?usage: host-copies.sh OUT}
mkdir -p "$OUT" /tmp/site .gpu && tar xJf .gpu-pack/bundle.tar.xz -C .gpu
. scripts/gpu-env >/dev/null
python3 -m pip install -q --no-index --no-deps --target /tmp/site .gpu-pack/*.whl
export PYTHONPATH=/tmp/site BATCHLIN_TABLE=off
{
  timeout 100 python3 gpu-lab/pending/host_copies.py
  LABEL=keep MALLOC_MMAP_THRESHOLD_=4294967296 MALLOC_TRIM_THRESHOLD_=8589934592 MALLOC_TOP_PAD_=1073741824 \
    timeout 100 python3 gpu-lab/pending/host_copies.py | grep -v '^label'
} > "$OUT/host-copies.csv" 2>&1
cat "$OUT/host-copies.csv"
