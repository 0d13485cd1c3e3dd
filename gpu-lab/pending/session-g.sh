#!/bin/bash
# One call: eigh `block` v5 (landed as version 4; it was a patch then: the matrix-vector
# product's 16-byte vectors summed plainly and carried by TwoSum; p.v by each warp, a lane
# every 32nd vector, summed by shuffles) against v3 (every product compensated, each
# thread summing p.v itself: the bundle's CLI) and head (`block` version 2, plain sums),
# alternated, forced; the eigh tests on v5 (kernels by NVRTC on the device); then, with
# RETUNE=1, eigh measured again by v5 over docs/results/h100/2026-12-07-retune-eigh's
# tables and checked held out (as retune-eigh.sh; budgets TUNE and CHECK).
#   run(command="RETUNE=1 bash gpu-lab/pending/session-g.sh $OUT", carry=[".gpu4-pack"], kind="nvidia-h100-x1")
# VERS (default "head v3 v5") and REPS (default 2) trim the timing for a short budget.
# .gpu4-pack: bundle.tar.xz (the v3 tree's scripts/gpu-bundle), head-batchlin.xz,
# v5-batchlin.xz and v5-eigh-test.xz (release, BATCHLIN_NVRTC=none, stripped),
# prev-tables.tar.gz (that folder's tables.tar.gz).
set -uo pipefail
OUT=${1:?usage: session-g.sh OUTDIR}
P=.gpu4-pack
mkdir -p "$OUT" .gpu /tmp/cli && tar xJf $P/bundle.tar.xz -C .gpu
for v in head v5; do xz -dc $P/$v-batchlin.xz > /tmp/cli/$v && chmod +x /tmp/cli/$v; done
cp .gpu/bin/batchlin /tmp/cli/v3
xz -dc $P/v5-eigh-test.xz > /tmp/cli/eigh-test && chmod +x /tmp/cli/eigh-test
. scripts/gpu-env > /dev/null
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/device.txt"
printf 'eigh 1024 64 64\neigh 1024 128 128\neigh 256 200 200\neigh 64 257 257\n' > /tmp/b32.txt
printf 'eigh 1024 64 64\neigh 256 128 128\neigh 64 200 200\neigh 16 257 257\n' > /tmp/b64.txt
# v5's kernels compiled once before timing (NVRTC, into the disk cache).
/tmp/cli/v5 bench --op eigh --backend cuda --kernel block --shapes /dev/stdin <<< 'eigh 2 64 64' > /dev/null 2>&1
/tmp/cli/v5 bench --op eigh --backend cuda --kernel block --dtype f64 --shapes /dev/stdin <<< 'eigh 2 64 64' > /dev/null 2>&1
for rep in $(seq 1 "${REPS:-2}"); do
  for v in ${VERS:-head v3 v5}; do
    echo "== $v rep $rep" >> "$OUT/ab.log"
    timeout 60 /tmp/cli/$v bench --op eigh --backend cuda --kernel block --shapes /tmp/b32.txt >> "$OUT/ab.log" 2>&1
    timeout 60 /tmp/cli/$v bench --op eigh --backend cuda --kernel block --dtype f64 --shapes /tmp/b64.txt >> "$OUT/ab.log" 2>&1
  done
done
grep -E "^==|^\| eigh" "$OUT/ab.log" | sed 's/|[^|]*|[^|]*$//'
timeout 120 /tmp/cli/eigh-test --test-threads=1 > "$OUT/tests.log" 2>&1
echo "eigh-test rc $?" >> "$OUT/tests.log"; grep -E "FAILED|panicked|test result|rc" "$OUT/tests.log"
[ "${RETUNE:-0}" = 1 ] || exit 0
rm -rf /tmp/gpu-tune /tmp/tables /tmp/prev /tmp/check && mkdir -p /tmp/gpu-tune/tune /tmp/tables /tmp/prev
tar xzf $P/prev-tables.tar.gz -C /tmp/prev
for f in /tmp/prev/tune/*.toml; do grep -v '^eigh/' "$f" > /tmp/gpu-tune/tune/$(basename "$f"); done
export BATCHLIN_TABLE_DIR=/tmp/tables
timeout -k 10 200 /tmp/cli/v5 tune --only eigh --resume --grid-only --budget "${TUNE:-2m}" --install \
  --out /tmp/gpu-tune/tune > "$OUT/tune.log" 2>&1
echo "tune rc $?" >> "$OUT/tune.log"
tar czf "$OUT/retune.tar.gz" -C /tmp gpu-tune/tune
[ "${CHECK:-90s}" = 0 ] && exit 0  # CHECK=0: no held-out check
timeout -k 10 220 /tmp/cli/v5 tune --check /tmp/tables/cpu-*.toml --budget "${CHECK:-90s}" --out /tmp/check > "$OUT/check.log" 2>&1
echo "check rc $?" >> "$OUT/check.log"
tar czf "$OUT/check.tar.gz" -C /tmp check
tail -2 "$OUT/tune.log"; grep -E "^\| the|rc" "$OUT/check.log"
