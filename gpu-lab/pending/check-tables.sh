#!/bin/bash
# The held-out check of an earlier tune's tables on the machine they were measured on:
# .gpu-pack/prev-tables.tar.gz holds tune/cpu-*.toml and tune/cuda-*.toml; both are
# installed (BATCHLIN_TABLE_DIR) so that the check prices host data by both, as a user's
# process would. The CPU table's key does not tell the H100 machine's CPU from the H200
# machine's, so this runs only where the GPU is the one the GPU table names.
#   run(command="bash gpu-lab/pending/check-tables.sh $OUT 4.5m", carry=[".gpu-pack"])
# (a held-out shape begun near the budget's end may run on: killed 150 s past it)
# GPU_TUNE_TESTS=1 runs tune-rate.sh's GPU tests first (lib-tests.log).
set -uo pipefail
OUT=${1:?usage: check-tables.sh OUTDIR [BUDGET]}
BUDGET=${2:-5m}
mkdir -p "$OUT" .gpu /tmp/prev /tmp/tables && tar xJf .gpu-pack/bundle.tar.xz -C .gpu
tar xzf .gpu-pack/prev-tables.tar.gz -C /tmp/prev && cp /tmp/prev/tune/*.toml /tmp/tables/
. scripts/gpu-env > /dev/null
export BATCHLIN_TABLE_DIR=/tmp/tables
if [ "${GPU_TUNE_TESTS:-0}" = 1 ]; then
  timeout 120 .gpu/tests/batchlin-lib --test-threads=1 host_data_crosses_the_staging_steps \
    every_kernel_writes_every_device_output staging_steps_are_pages_and_few > "$OUT/lib-tests.log" 2>&1
  tail -4 "$OUT/lib-tests.log"
fi
gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader | head -1)
stem=$(echo "$gpu" | tr 'A-Z' 'a-z' | tr -c 'a-z0-9\n' '-')
ls /tmp/tables/cuda-*"$stem"* > /dev/null 2>&1 ||
  { echo "check-tables: this GPU ($gpu) is not the tables' ($(ls /tmp/tables))" | tee "$OUT/check.log"; exit 3; }
secs=$(python3 -c "import sys; s=sys.argv[1]; print(int(float(s[:-1]) * 60) if s.endswith('m') else int(s.rstrip('s')))" "$BUDGET")
timeout -k 10 $((secs + 150)) .gpu/bin/batchlin tune --check /tmp/tables/cpu-*.toml \
  --budget "$BUDGET" --out /tmp/check > "$OUT/check.log" 2>&1
echo "tune --check rc $?" >> "$OUT/check.log"
tar czf "$OUT/check.tar.gz" -C /tmp check
grep -A12 "^## Held out" "$OUT/check.log" | head -20
