#!/bin/bash
# ON THE DEVICE, after scripts/gpu-bundle: time instantiations of the CUDA tile QR kernel
# through the library's own harness (the plan, the launch and the timing users get), each
# result checked against float64 by `batchlin bench`:
#   gpu-lab/tile-sweep.sh SHAPES_FILE SPEC...    (DTYPE=f64 for float64)
# SPEC: ROWSxCOLS/RGxCG/bMINB/cFCxQC/sSTAGE, e.g. 64x64/4x16/b8/c8x8/s0 (`batchlin info`
# shows the plan; kernels/qr.cu BL_QR_TILE says what each field does). SHAPES_FILE lines:
# `qr batch m n`. One table a SPEC, interleaved over ROUNDS (default 1) rounds.
set -uo pipefail
cd "$(dirname "$0")/.."
SHAPES=${1:?usage: gpu-lab/tile-sweep.sh SHAPES_FILE SPEC...}
shift
. scripts/gpu-env
for r in $(seq 1 "${ROUNDS:-1}"); do
  for spec in "$@"; do
    echo "### round $r tile $spec"
    "${GPU_BUNDLE:-.gpu}"/bin/batchlin bench --kernel tile --tile "$spec" --dtype "${DTYPE:-f32}" \
      --shapes "$SHAPES" 2>/dev/null | grep '^| qr'
  done
done
