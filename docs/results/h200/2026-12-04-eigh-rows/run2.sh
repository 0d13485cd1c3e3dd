#!/bin/bash
# The eigh block kernel with vector rows: suites, sanitizers, lab variants, routed bench.
cd "$(dirname "$0")/.."
O=$1; mkdir -p $O/logs; L=$O/logs
. scripts/gpu-env > /dev/null
F=.gpu-final
( LAB_COMPILE_ONLY=1 LAB_VARIANTS=base,full,unroll,nb16,nb32 python3 gpu-lab/eigh_block_lab.py $F/eigh_head.cu float > $L/labc.log 2>&1;
  LAB_COMPILE_ONLY=1 LAB_VARIANTS=base,full,unroll python3 gpu-lab/eigh_block_lab.py $F/eigh_head.cu double >> $L/labc.log 2>&1 ) &
( timeout 280 $F/eigh-test --test-threads=2 > $L/t-eigh.log 2>&1; echo "rc=$?" >> $L/t-eigh.log ) &
( timeout 200 $F/reliability-test --test-threads=2 > $L/t-rel.log 2>&1; echo "rc=$?" >> $L/t-rel.log ) &
CS=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null | head -1)
for tool in memcheck racecheck synccheck; do
  small=; [ $tool != memcheck ] && small=1
  ( BATCHLIN_SANITIZE_KERNELS=eigh-block BATCHLIN_SANITIZE_SMALL=$small timeout 220 $CS --tool $tool --launch-count 300 \
      $F/lib-test --ignored --exact cuda::tests::sanitize_every_kernel --test-threads=1 --nocapture \
      > $L/san-$tool.log 2>&1; echo "rc=$?" >> $L/san-$tool.log ) &
done
wait
timeout 150 $F/lib-test cuda:: --test-threads=2 > $L/t-lib.log 2>&1; echo "rc=$?" >> $L/t-lib.log
LAB_VARIANTS=base,full,unroll,nb16,nb32 timeout 120 python3 gpu-lab/eigh_block_lab.py $F/eigh_head.cu float > $L/lab-f32.log 2>&1
LAB_VARIANTS=base,full,unroll timeout 90 python3 gpu-lab/eigh_block_lab.py $F/eigh_head.cu double > $L/lab-f64.log 2>&1
grep -E "^eigh " bench/shapes.txt > /tmp/record.txt
for dt in f32 f64; do echo "== routed eigh $dt"; timeout 100 $F/batchlin bench --op eigh --shapes /tmp/record.txt --dtype $dt; done > $L/bench.log 2>&1
grep -H "^test result\|FAILED\|panicked\|rc=\|ERROR SUMMARY\|RACECHECK SUMMARY\|cases$" $L/t-*.log $L/san-*.log > $L/summary.txt 2>&1
tar czf $O/logs.tgz -C $O logs
cat $L/summary.txt $L/lab-f32.log $L/lab-f64.log; grep "^| eigh" $L/bench.log
