#!/bin/bash
out=$1; mkdir -p $out; cd gpu-lab
nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm --format=csv > $out/lab.txt
nvcc -O3 -arch=sm_90 -Xptxas -v -o /tmp/ew eigh_warp.cu 2> $out/ptxas.txt
nvcc -O3 -arch=sm_90 -Xptxas -v -DVALUES_ONLY=1 -o /tmp/ewv eigh_warp.cu 2> $out/ptxas-v.txt
nvcc -O3 -arch=sm_90 -DCS_SMEM=1 -o /tmp/ewc eigh_warp.cu 2>> $out/ptxas.txt
for b in 4096 1024; do echo "== full batch $b" >> $out/lab.txt; /tmp/ew $b >> $out/lab.txt 2>&1; done
echo "== values only (V checks fail by design)" >> $out/lab.txt; /tmp/ewv 4096 >> $out/lab.txt 2>/dev/null
echo "== CS_SMEM" >> $out/lab.txt; /tmp/ewc 4096 >> $out/lab.txt 2>&1
