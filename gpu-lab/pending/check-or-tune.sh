#!/bin/bash
# One call that uses whatever GPU comes: on the H100 machine the built-in tables were
# measured on, the held-out check of that tune's tables (check-tables.sh) and the NumPy
# routing by them (scripts/gpu-tune OUT 0); on any other GPU the first call of a full
# tune (tune-rate.sh, grid only). Both run the Rust GPU tests first (lib-tests.log).
#   run(command="bash gpu-lab/pending/check-or-tune.sh $OUT", carry=[".gpu-pack"])
# .gpu-pack: bundle.tar.xz, the wheel, prev-tables.tar.gz (tune/cpu-*.toml, cuda-*.toml).
OUT=${1:?usage: check-or-tune.sh OUTDIR}
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
echo "GPU: $gpu"
if [[ "$gpu" == *H100* ]]; then
  GPU_TUNE_TESTS=1 bash gpu-lab/pending/check-tables.sh "$OUT" "${CHECK_BUDGET:-3m}"
  cp .gpu-pack/*.whl .gpu/ && tar xzf .gpu-pack/prev-tables.tar.gz -C .gpu &&
    timeout 200 scripts/gpu-tune "$OUT/r" 0 > /dev/null 2>&1
  tar czf "$OUT/routing.tar.gz" -C "$OUT" r && rm -rf "$OUT/r"
else
  GPU_TUNE_TESTS=1 GPU_TUNE_ROUTING=0 GPU_TUNE_GRID_ONLY=1 \
    bash gpu-lab/pending/tune-rate.sh "$OUT" "${TUNE_BUDGET:-8m}"
fi
