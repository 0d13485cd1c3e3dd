#!/bin/bash
set -u
cd "$(dirname "$0")/.."
[ -f .gpu2/tests.tar.xz ] && tar xJf .gpu2/tests.tar.xz -C .gpu2
export GPU_BUNDLE=.gpu2; . scripts/gpu-env
O=$1; mkdir -p $O
for t in eigh-test reliability-test batchlin-lib; do
  ( timeout 300 .gpu2/tests/$t --test-threads=2 --skip device_out_of_memory_is_an_error > $O/t-$t.log 2>&1; echo "rc=$?" >> $O/t-$t.log ) &
done
wait
grep -H "^test result\|FAILED\|panicked\|rc=" $O/t-*.log > $O/summary.txt
grep -h "eigh_every_cuda\|eigh_" $O/t-eigh-test.log | head -30 >> $O/summary.txt
cat $O/summary.txt
