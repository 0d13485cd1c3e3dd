#!/bin/bash
# One operation measured again over an earlier tune's tables, then the result checked on
# held-out shapes: PREV's tune/*.toml kept whole (`--resume` drops the rows of kernels
# whose version moved on and measures those kernels again at the shapes kept, new shapes
# with every kernel), `CLI tune --only OP --resume --grid-only --budget BUDGET --install`
# (killed after TUNE_TIMEOUT s), then `CLI tune --check` with what is left of the
# caller's LEFT seconds (40 kept back, at most 150).
# Writes tune.log, retune.tar.gz, check.log and check.tar.gz into OUT. Called on the
# device by kernel-ab.sh (session-h.sh: eigh, session-j.sh: svd).
#   retune-over.sh OUT OP CLI PREV BUDGET TUNE_TIMEOUT LEFT
set -uo pipefail
OUT=$1 OP=$2 CLI=$3 PREV=$4 BUDGET=$5 TUNE_TIMEOUT=$6 LEFT=$7
[ "$LEFT" -gt 200 ] || { echo "no time left to tune"; exit 0; }
rm -rf /tmp/gpu-tune /tmp/tables /tmp/prev /tmp/check && mkdir -p /tmp/gpu-tune/tune /tmp/tables /tmp/prev
tar xzf "$PREV" -C /tmp/prev
cp /tmp/prev/tune/*.toml /tmp/gpu-tune/tune/
export BATCHLIN_TABLE_DIR=/tmp/tables
timeout -k 10 "$TUNE_TIMEOUT" "$CLI" tune --only "$OP" --resume --grid-only --budget "$BUDGET" --install \
  --out /tmp/gpu-tune/tune > "$OUT/tune.log" 2>&1
echo "tune rc $?" >> "$OUT/tune.log"
tar czf "$OUT/retune.tar.gz" -C /tmp gpu-tune/tune
tail -2 "$OUT/tune.log"
secs=$((LEFT - 40 - SECONDS)); [ $secs -gt 150 ] && secs=150
[ $secs -lt 40 ] && { echo "no time left to check"; exit 0; }
timeout -k 10 $((secs + 40)) "$CLI" tune --check /tmp/tables/cpu-*.toml --budget "${secs}s" --out /tmp/check > "$OUT/check.log" 2>&1
echo "check rc $?" >> "$OUT/check.log"
tar czf "$OUT/check.tar.gz" -C /tmp check
grep -E "^\| the|rc" "$OUT/check.log"
