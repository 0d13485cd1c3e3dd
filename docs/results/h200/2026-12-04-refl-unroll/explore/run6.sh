#!/bin/bash
# The fast paths' serial loops over global scratch unrolled (lab variants, eigh and SVD).
cd "$(dirname "$0")/.."
O=$1; mkdir -p $O/logs; L=$O/logs
. scripts/gpu-env > /dev/null
F=.gpu-final
( LAB_COMPILE_ONLY=1 LAB_VARIANTS=full,tw4,tw8,lw4,twlw4 python3 gpu-lab/svd_bidiag_lab.py $F/svd_head.cu float > $L/labc.log 2>&1 ) &
LAB_VARIANTS=full,tw4,tw8,lw4,twlw4,fx4,all4 timeout 200 python3 gpu-lab/eigh_block_lab.py float > $L/lab-eigh.log 2>&1
wait
LAB_VARIANTS=full,tw4,tw8,lw4,twlw4 timeout 150 python3 gpu-lab/svd_bidiag_lab.py $F/svd_head.cu float > $L/lab-svd.log 2>&1
LAB_VARIANTS=full,all4 timeout 100 python3 gpu-lab/eigh_block_lab.py double > $L/lab-eigh-f64.log 2>&1
cat $L/lab-eigh.log $L/lab-svd.log $L/lab-eigh-f64.log
