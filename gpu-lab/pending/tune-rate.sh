#!/bin/bash
# `batchlin tune` for BUDGET (default 6m) on the device with the bundle's prebuilt kernel
# cache (NVRTC 13.0, the device's), to see how many grid shapes a minute the GPU's half
# now takes (shape-times.csv: inputs, CPU and GPU seconds a shape).
#   run(command="bash gpu-lab/pending/tune-rate.sh $OUT 6m", carry=[".gpu-pack"])
# A tune over several calls (a call runs at most 10 minutes; the whole grid takes about
# 15): copy the tune.tar.gz a call brought back into .gpu-pack/ and the next call goes on
# from it (`tune --resume`) on the same kind of machine (the reply's `device`); set
# GPU_TUNE_ROUTING=0 GPU_TUNE_GRID_ONLY=1 for every call but the last (the last checks
# the tables on held-out shapes and runs the NumPy routing).
# GPU_TUNE_TESTS=1: first the Rust GPU tests of the staged copies and the kernels'
# outputs (the bundle's tests/batchlin-lib), into lib-tests.log.
# BUDGET 0: no tune, the NumPy routing alone by the tables in .gpu-pack/tune.tar.gz.
mkdir -p .gpu && tar xJf .gpu-pack/bundle.tar.xz -C .gpu && cp .gpu-pack/*.whl .gpu/
[ -f .gpu-pack/tune.tar.gz ] && tar xzf .gpu-pack/tune.tar.gz -C .gpu
if [ "${GPU_TUNE_TESTS:-0}" = 1 ]; then
  mkdir -p "$1"
  ( . scripts/gpu-env && timeout 120 .gpu/tests/batchlin-lib --test-threads=1 \
      host_data_crosses_the_staging_steps every_kernel_writes_every_device_output \
      staging_steps_are_pages_and_few ) > "$1/lib-tests.log" 2>&1
  tail -4 "$1/lib-tests.log"
fi
scripts/gpu-tune "$1" "${2:-6m}" > /dev/null 2>&1
tail -5 "$1/tune.log"
