#!/bin/bash
# `batchlin tune` for BUDGET (default 6m) on the device with the bundle's prebuilt kernel
# cache (NVRTC 13.0, the device's), to see how many grid shapes a minute the GPU's half
# now takes (shape-times.csv: inputs, CPU and GPU seconds a shape).
#   run(command="bash gpu-lab/pending/tune-rate.sh $OUT 6m", carry=[".gpu-pack"])
mkdir -p .gpu && tar xJf .gpu-pack/bundle.tar.xz -C .gpu && cp .gpu-pack/*.whl .gpu/
scripts/gpu-tune "$1" "${2:-6m}" > /dev/null 2>&1
tail -5 "$1/tune.log"
