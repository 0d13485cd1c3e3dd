#!/bin/bash
cd "$(dirname "$0")/.."
O=$1; mkdir -p $O
NVCC=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
$NVCC -O3 -arch=sm_90 -o /tmp/cs gpu-lab/cusolver_svd.cu -lcusolver > $O/lab2.log 2>&1 || exit 1
for n in 1 2 8 16 31 32 33 48 64 65 96 127 128 129 200 256 512 1024; do
  timeout 60 /tmp/cs err $n >> $O/lab2.log 2>&1; echo "n=$n rc=$?" >> $O/lab2.log
done
cat $O/lab2.log | grep -v "^err" ; grep -c "^err" $O/lab2.log
