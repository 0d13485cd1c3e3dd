#!/bin/bash
# Validate HEAD (suites, sanitizers, routed bench) and time the eigh block kernel's steps.
cd "$(dirname "$0")/.."
O=$1; mkdir -p $O
. scripts/gpu-env > /dev/null
( LAB_COMPILE_ONLY=1 python3 gpu-lab/eigh_block_lab.py float > $O/labc.log 2>&1; LAB_COMPILE_ONLY=1 python3 gpu-lab/eigh_block_lab.py double >> $O/labc.log 2>&1 ) &
PARTS="warm tests bench" bash .gpu-final/job.sh $O/v
wait
T0=$(date +%s)
timeout 150 python3 gpu-lab/eigh_block_lab.py float > $O/lab-eigh-f32.log 2>&1
LAB_VARIANTS=full,stop2,stop3,stop4,stop5 timeout 100 python3 gpu-lab/eigh_block_lab.py double > $O/lab-eigh-f64.log 2>&1
echo "lab $(( $(date +%s) - T0 ))s" >> $O/labc.log
cat $O/lab-eigh-f32.log $O/lab-eigh-f64.log
