#!/bin/bash
# One call: the CPU drift experiment (cpu-drift.sh), the GPU test binaries, the Python GPU suites and the C API's GPU test
# (scripts/gpu-run's tests, python and c), then, where .gpu-pack/retune.tar.gz holds a
# retune's tables (session-a.sh), NumPy input at the shapes of record routed by them.
#   run(command="mkdir -p .gpu-pack && cp .gpu3-pack/* .gpu-pack/ && bash gpu-lab/pending/session-b.sh $OUT",
#       carry=[".gpu3-pack"], timeout_s=600)
# .gpu3-pack: the wheel and bundle.tar.xz of every test binary, the C library, the CLI and
# the kernel cache in one xz stream (`tar cf - -C .gpu tests c bin cache peer_bench.py |
# xz -9e`, 6.6 MB; the carry's 64 MiB holds the tracked tree too). The 380 s for
# scripts/gpu-run ran out before the C test on 2026-12-07: give it more where the call
# has the time (the drift part takes about 2.5 minutes).
set -uo pipefail
OUT=${1:?usage: session-b.sh OUTDIR}
mkdir -p "$OUT" .gpu && tar xJf .gpu-pack/bundle.tar.xz -C .gpu && cp .gpu-pack/*.whl .gpu/
bash gpu-lab/pending/cpu-drift.sh "$OUT"
GPU_RUN_PARTS="tests python c" timeout 380 scripts/gpu-run /tmp/run > "$OUT/gpu-run.txt" 2>&1
tar czf "$OUT/run.tar.gz" -C /tmp run
if [ -f .gpu-pack/retune.tar.gz ]; then
  rm -rf .gpu/tune /tmp/rt && mkdir -p /tmp/rt && tar xzf .gpu-pack/retune.tar.gz -C /tmp/rt
  cp -r /tmp/rt/gpu-tune/tune .gpu/tune
  timeout 150 scripts/gpu-tune "$OUT/r" 0 > /dev/null 2>&1
  tar czf "$OUT/routing.tar.gz" -C "$OUT" r && rm -rf "$OUT/r"
fi
tail -25 "$OUT/gpu-run.txt"
