#!/bin/bash
# One call: the GPU suites alone (session-b.sh without the drift experiment), the Rust test
# binaries and the C API's GPU test first, then the Python suites, each part under its
# own limit so that a slow one cannot take the others' time.
#   run(command="mkdir -p .gpu-pack && cp .gpu3-pack/* .gpu-pack/ && bash gpu-lab/pending/session-c.sh $OUT",
#       carry=[".gpu3-pack"], timeout_s=600)
set -uo pipefail
OUT=${1:?usage: session-c.sh OUTDIR}
mkdir -p "$OUT" .gpu && tar xJf .gpu-pack/bundle.tar.xz -C .gpu && { cp .gpu-pack/*.whl .gpu/ 2>/dev/null || echo "no wheel carried: the Python part skips"; }
GPU_RUN_PARTS="tests c" timeout 330 scripts/gpu-run /tmp/run > "$OUT/gpu-run.txt" 2>&1
GPU_RUN_PARTS="python" timeout 220 scripts/gpu-run /tmp/run >> "$OUT/gpu-run.txt" 2>&1
tar czf "$OUT/run.tar.gz" -C /tmp run
grep -E "^test .*FAILED|^---- |panicked|orthogonality|kernel" /tmp/run/tests.log | head -60
tail -30 "$OUT/gpu-run.txt"
