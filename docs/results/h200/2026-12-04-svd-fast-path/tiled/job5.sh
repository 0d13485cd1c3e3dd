#!/bin/bash
# Device job 5 (2026-12-04): bidiag's products as 4 x 4 tiles: the SVD suite (its svd
# modules compiled by NVRTC there: their source changed since the bundle's cache) and the
# lab's variants.
set -u
cd "$(dirname "$0")/.."
tar xJf .gpu/bundle.tar.xz -C .gpu
cp .gpu/blob/svd-test .gpu/tests/svd-test
. scripts/gpu-env
O=$1; mkdir -p $O
timeout 250 python3 gpu-lab/svd_bidiag_lab.py > $O/lab.log 2>&1
( timeout 330 .gpu/tests/svd-test --test-threads=2 > $O/t-svd.log 2>&1; echo "rc=$?" >> $O/t-svd.log )
grep -H "^test result\|FAILED\|panicked\|rc=" $O/t-svd.log; cat $O/lab.log
