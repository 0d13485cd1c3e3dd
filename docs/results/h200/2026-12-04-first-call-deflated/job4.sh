#!/bin/bash
# Device job 4 (2026-12-04): first calls, the wheel before the blob was deflated (the
# bundle's, built from the tree just before) against the deflated one, alternated.
set -u
cd "$(dirname "$0")/.."
O=$1; mkdir -p $O /tmp/old /tmp/new
tar xJf .gpu/bundle.tar.xz -C /tmp/old --wildcards '*.whl'
python3 -m pip install -q --no-index --no-deps --target /tmp/site-old /tmp/old/*.whl
python3 -m pip install -q --no-index --no-deps --target /tmp/site-new .gpu/blob/*.whl
export PYTHONUNBUFFERED=1
for r in 1 2; do
  for w in old new; do
    echo "== $w (round $r)"
    PYTHONPATH=/tmp/site-$w timeout 100 python3 bench/first_call.py --shapes 4096x32x32,1024x64x64 --dtypes float32 --calls qr,eigh,svd
  done
done > $O/first-call-ab.log 2>&1
grep -E "^==|^\| [0-9]|worst" $O/first-call-ab.log
