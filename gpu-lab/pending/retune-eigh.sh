#!/bin/bash
# eigh measured again over an earlier tune's tables, then the held-out check of the
# result and the NumPy routing by it. The tune of 2026-12-06 timed cuSOLVER's first eigh
# in the process (its kernels' load, 0.13-0.25 s) as eigh at 1x2x2, and its pruning
# then left cuSOLVER out of most larger float32 shapes: the tables sent float32
# 4x289x289 to it at 4.1x `block`'s time. timing.rs no longer times such a first call.
#   run(command="bash gpu-lab/pending/retune-eigh.sh $OUT 3m 3m", carry=[".gpu-pack"])
# RETUNE_ROUTING=0 leaves out the NumPy routing (about 30 s).
# .gpu-pack: bundle.tar.xz, the wheel, prev-tables.tar.gz (tune/cpu-*.toml, cuda-*.toml,
# measured on this kind of machine: docs/results/h100/2026-12-06-tune-routing/tables.tar.gz
# for an H100 machine).
set -uo pipefail
OUT=${1:?usage: retune-eigh.sh OUTDIR [TUNE_BUDGET] [CHECK_BUDGET]}
rm -rf /tmp/gpu-tune /tmp/tables /tmp/prev /tmp/check
mkdir -p "$OUT" .gpu /tmp/gpu-tune/tune /tmp/tables /tmp/prev
tar xJf .gpu-pack/bundle.tar.xz -C .gpu && cp .gpu-pack/*.whl .gpu/
tar xzf .gpu-pack/prev-tables.tar.gz -C /tmp/prev
# Both tables without their eigh and eigvalsh rows: --resume measures those shapes again.
for f in /tmp/prev/tune/*.toml; do
  grep -v '^eigh/' "$f" > /tmp/gpu-tune/tune/$(basename "$f")
done
. scripts/gpu-env > /dev/null
export BATCHLIN_TABLE_DIR=/tmp/tables
nvidia-smi --query-gpu=name --format=csv,noheader | tee "$OUT/tune.log"
to_s() { python3 -c "import sys; s=sys.argv[1]; print(int(float(s[:-1]) * 60) if s.endswith('m') else int(float(s.rstrip('s'))))" "$1"; }
T=${2:-3m}; secs=$(to_s "$T")
timeout -k 10 $((secs + 60)) .gpu/bin/batchlin tune --only eigh --resume --grid-only \
  --budget "$T" --install --out /tmp/gpu-tune/tune >> "$OUT/tune.log" 2>&1
echo "tune rc $?" >> "$OUT/tune.log"
tar czf "$OUT/retune.tar.gz" -C /tmp gpu-tune/tune  # back even if the call is stopped later
C=${3:-3m}; csecs=$(to_s "$C")
timeout -k 10 $((csecs + 150)) .gpu/bin/batchlin tune --check /tmp/tables/cpu-*.toml \
  --budget "$C" --out /tmp/check > "$OUT/check.log" 2>&1
echo "tune --check rc $?" >> "$OUT/check.log"
tar czf "$OUT/check.tar.gz" -C /tmp check
if [ "${RETUNE_ROUTING:-1}" = 1 ]; then
  rm -rf .gpu/tune && cp -r /tmp/gpu-tune/tune .gpu/tune
  timeout 200 scripts/gpu-tune "$OUT/r" 0 > /dev/null 2>&1
  tar czf "$OUT/routing.tar.gz" -C "$OUT" r && rm -rf "$OUT/r"
fi
grep -A12 "^## Held out" "$OUT/check.log" | head -16
tail -3 "$OUT/tune.log"
