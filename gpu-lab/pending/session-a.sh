#!/bin/bash
# One call: the rules' check (rules-check.sh), then on an H100 machine eigh measured again
# over the kept H100 tables and their held-out check (retune-eigh.sh, no NumPy routing);
# on another GPU the GPU test binaries instead (the tables are an H100 machine's).
#   run(command="bash gpu-lab/pending/session-a.sh $OUT", carry=[".gpu-pack"], timeout_s=600)
set -uo pipefail
OUT=${1:?usage: session-a.sh OUTDIR}
mkdir -p "$OUT"
bash gpu-lab/pending/rules-check.sh "$OUT/rc"
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
case "$gpu" in
  *H100*) RETUNE_ROUTING=0 bash gpu-lab/pending/retune-eigh.sh "$OUT" 3m 2m ;;
  *)
    . scripts/gpu-env > /dev/null
    for t in .gpu/tests/*; do
      echo "== $(basename "$t")"
      timeout 200 "$t" --test-threads=1 2>&1 | grep -E "^test result|FAILED|panicked|skipped"
    done > "$OUT/tests.log" 2>&1
    cat "$OUT/tests.log" ;;
esac
