#!/bin/bash
# Device job 2 (2026-12-04): the SVD suite again (the test list's jacobi exception) and the
# lab's stop variants (where the bidiag fast path's time goes).
set -u
cd "$(dirname "$0")/.."
tar xJf .gpu/bundle.tar.xz -C .gpu
. scripts/gpu-env
O=$1; mkdir -p $O
( timeout 300 .gpu/tests/svd-test --test-threads=2 > $O/t-svd.log 2>&1; echo "rc=$?" >> $O/t-svd.log ) &
timeout 250 python3 gpu-lab/svd_bidiag_lab.py > $O/lab.log 2>&1
wait
grep -H "^test result\|FAILED\|panicked\|rc=" $O/t-svd.log; cat $O/lab.log
