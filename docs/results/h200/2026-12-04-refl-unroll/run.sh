#!/bin/bash
# bl_refl_apply unrolled by 4: suites, memcheck, labs (the apply and the
# tridiagonalisation alone at more threads), routed eigh and SVD.
cd "$(dirname "$0")/.."
O=$1; mkdir -p $O/logs; L=$O/logs
. scripts/gpu-env > /dev/null
F=.gpu-final
EV=full,noun,stop2,s2t128,s2t256,apply
( LAB_COMPILE_ONLY=1 LAB_VARIANTS=$EV python3 gpu-lab/eigh_block_lab.py float > $L/labc.log 2>&1;
  LAB_COMPILE_ONLY=1 LAB_VARIANTS=full,noun python3 gpu-lab/svd_bidiag_lab.py $F/svd_head.cu float >> $L/labc.log 2>&1 ) &
( timeout 280 $F/eigh-test --test-threads=2 > $L/t-eigh.log 2>&1; echo "rc=$?" >> $L/t-eigh.log ) &
( timeout 280 $F/svd-test --test-threads=2 > $L/t-svd.log 2>&1; echo "rc=$?" >> $L/t-svd.log ) &
CS=$(command -v compute-sanitizer || ls /usr/local/cuda/bin/compute-sanitizer 2>/dev/null | head -1)
for tool in memcheck racecheck; do for fam in eigh-block svd-bidiag; do
  small=; [ $tool = racecheck ] && small=1
  ( BATCHLIN_SANITIZE_KERNELS=$fam BATCHLIN_SANITIZE_SMALL=$small timeout 220 $CS --tool $tool --launch-count 300 \
      $F/lib-test --ignored --exact cuda::tests::sanitize_every_kernel --test-threads=1 --nocapture \
      > $L/san-$tool-$fam.log 2>&1; echo "rc=$?" >> $L/san-$tool-$fam.log ) &
done; done
wait
LAB_SHAPES=4096x48x48,1024x64x64,1024x128x128 LAB_VARIANTS=$EV timeout 200 python3 gpu-lab/eigh_block_lab.py float > $L/lab-eigh.log 2>&1
LAB_VARIANTS=full,noun timeout 100 python3 gpu-lab/svd_bidiag_lab.py $F/svd_head.cu float > $L/lab-svd.log 2>&1
grep -E "^(eigh|svd) " bench/shapes.txt > /tmp/record.txt
for op in eigh svd; do for dt in f32 f64; do echo "== routed $op $dt"; timeout 100 $F/batchlin bench --op $op --shapes /tmp/record.txt --dtype $dt; done; done > $L/bench.log 2>&1
grep -H "^test result\|FAILED\|panicked\|rc=\|ERROR SUMMARY\|RACECHECK SUMMARY\|cases$" $L/t-*.log $L/san-*.log > $L/summary.txt 2>&1
tar czf $O/logs.tgz -C $O logs
cat $L/summary.txt $L/lab-eigh.log $L/lab-svd.log; grep -E "^\| (eigh|svd)" $L/bench.log
