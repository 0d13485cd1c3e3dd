#!/bin/bash
# bl_refl_apply's loops unrolled (eigh and SVD labs); ncu stalls of the eigh block kernel.
cd "$(dirname "$0")/.."
O=$1; mkdir -p $O/logs; L=$O/logs
. scripts/gpu-env > /dev/null
F=.gpu-final
V=full,uz,uu,uw,uall
( LAB_COMPILE_ONLY=1 LAB_VARIANTS=$V python3 gpu-lab/svd_bidiag_lab.py $F/svd_head.cu float > $L/labc.log 2>&1 ) &
LAB_VARIANTS=$V timeout 150 python3 gpu-lab/eigh_block_lab.py float > $L/lab-eigh.log 2>&1
wait
LAB_VARIANTS=$V timeout 150 python3 gpu-lab/svd_bidiag_lab.py $F/svd_head.cu float > $L/lab-svd.log 2>&1
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
for sh in 1024x64x64 1024x128x128; do
  LAB_LINEINFO=1 LAB_VARIANTS=full LAB_SHAPES=$sh timeout 150 $NCU --clock-control none -k regex:lab -c 1 \
    --section SourceCounters --section WarpStateStats --section SchedulerStats --section Occupancy -o $L/prof-$sh \
    python3 gpu-lab/eigh_block_lab.py float > $L/ncu-$sh.log 2>&1
  $NCU --import $L/prof-$sh.ncu-rep --page details > $L/details-$sh.txt 2>&1
  $NCU --import $L/prof-$sh.ncu-rep --page source --csv --print-source sass > $L/src-$sh.csv 2>&1
  $NCU --import $L/prof-$sh.ncu-rep --page source --csv --print-source cuda > $L/cuda-$sh.csv 2>&1
  python3 gpu-lab/stalls_by_loop.py $L/src-$sh.csv > $L/stalls-$sh.txt 2>&1
done
tar czf $O/logs.tgz -C $O logs
cat $L/lab-eigh.log $L/lab-svd.log; for sh in 1024x64x64 1024x128x128; do grep -iE "stall|warp cycles|eligible|issued|occupancy|registers|block limit" $L/details-$sh.txt | head -30; head -20 $L/stalls-$sh.txt; done
