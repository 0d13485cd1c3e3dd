#!/bin/bash
# Device job (2026-12-04, svd-apply): the `bidiag` SVD with the fast path's reflectors
# applied to u and v (kernels/svd.cu bl_gk_apply) in place of forming Q and P.
# tests: the Rust SVD suite (every CUDA SVD kernel forced), beside it the lab's variants
# compiled into CuPy's cache (CPU only); bench: the CLI routed and --kernel bidiag,
# float32 and float64, on shapes.txt; lab: gpu-lab/svd_bidiag_lab.py with main's svd.cu
# as the base. PARTS picks them.
# cache/: the NVRTC disk cache made ahead here (the SVD modules by /tmp prebuild, the
# rest from .gpu/bundle.tar.xz).
# run(command="bash .gpu-svd/job.sh $OUT", carry=[".gpu-svd"])
set -u
cd "$(dirname "$0")/.."
GPU_BUNDLE=.gpu-svd . scripts/gpu-env
O=$1; mkdir -p $O
D=.gpu-svd; B=$D/batchlin
T0=$(date +%s)
PARTS=${PARTS:-tests bench lab}
want() { [[ " $PARTS " == *" $1 "* ]]; }
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $O/device.txt
cp $D/svd_bidiag_lab.py gpu-lab/svd_bidiag_lab.py 2>/dev/null
cp $D/svd.cu crates/batchlin/src/cuda/kernels/svd.cu 2>/dev/null
want tests && {
  ( timeout 300 $D/svd-test --test-threads=2 > $O/t-svd.log 2>&1; echo "rc=$?" >> $O/t-svd.log ) &
  want lab && LAB_COMPILE_ONLY=1 timeout 200 python3 gpu-lab/svd_bidiag_lab.py $D/svd_main.cu > $O/lab-compile.log 2>&1
  wait
}
echo "tests done $(( $(date +%s) - T0 ))s" >> $O/device.txt
want bench && {
  for dt in f32 f64; do
    echo "== routed $dt"; timeout 100 $B bench --op svd --shapes $D/shapes.txt --dtype $dt
    echo "== bidiag $dt"; timeout 100 $B bench --op svd --shapes $D/shapes.txt --dtype $dt --kernel bidiag
  done
} > $O/bench.log 2>&1
echo "bench done $(( $(date +%s) - T0 ))s" >> $O/device.txt
want lab && timeout 200 python3 gpu-lab/svd_bidiag_lab.py $D/svd_main.cu > $O/lab.log 2>&1
echo "lab done $(( $(date +%s) - T0 ))s" >> $O/device.txt
grep -h "^test \|test result\|rc=\|panicked" $O/t-svd.log > $O/tests-summary.txt 2>&1
cat $O/tests-summary.txt $O/device.txt
