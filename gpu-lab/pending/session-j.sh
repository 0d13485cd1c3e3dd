#!/bin/bash
# One call: the SVD `bidiag` kernel's bidiagonalisation in global memory by panels (`new`:
# `bidiag` version 3, landed with docs/results/h100/2026-12-07-svd-panels) against the
# tree without it (`head`: version 2), alternated, forced, at shapes whose A is in global memory
# (place 2); the SVD tests and the library's CUDA tests on `new`; memcheck on the SVD's
# float32 every-kernel test (place 2 at 256x256; it needed more than 125 s); then, with
# RETUNE=1, the SVD measured again by `new` over the tables of
# docs/results/h100/2026-12-07-eigh-panels (tables.tar.gz) and checked held out
# (retune-over.sh).
# REPS (2), LIMIT (560: the call's seconds), TEST_S (150) trim it for a short budget.
#   run(command="RETUNE=1 bash gpu-lab/pending/session-j.sh $OUT", carry=[".gpu7-pack"], kind="nvidia-h100-x1")
# .gpu7-pack: head.xz and new.xz (the CLI, release, BATCHLIN_NVRTC=none), svd-test.xz and
# lib-test.xz (`new`'s test binaries: `cargo test --release -p batchlin --test svd
# --no-run`, `--lib --no-run`), prev-tables.tar.gz (that folder's tables.tar.gz). Phases
# are skipped once the call nears LIMIT.
set -uo pipefail
OUT=${1:?usage: session-j.sh OUTDIR}
P=.gpu7-pack
mkdir -p "$OUT" /tmp/cli
for v in head new svd-test lib-test; do xz -dc $P/$v.xz > /tmp/cli/$v && chmod +x /tmp/cli/$v; done
. scripts/gpu-env > /dev/null
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/device.txt"
left() { [ $((${LIMIT:-560} - SECONDS)) -gt "$1" ]; }
printf 'svd 256 256 256\nsvd 64 300 300\nsvd 8 512 512\nsvd 256 400 256\n' > /tmp/s32.txt
printf 'svd 256 200 200\nsvd 64 256 256\nsvd 16 400 300\n' > /tmp/s64.txt
for v in head new; do for dt in f32 f64; do
  /tmp/cli/$v bench --op svd --backend cuda --kernel bidiag --dtype $dt --shapes /dev/stdin <<< 'svd 2 300 300' > /dev/null 2>&1
  /tmp/cli/$v bench --op svd --variant svdvals --backend cuda --kernel bidiag --dtype $dt --shapes /dev/stdin <<< 'svd 2 300 300' > /dev/null 2>&1
done; done
for rep in $(seq 1 "${REPS:-2}"); do
  for v in head new; do
    echo "== $v rep $rep" >> "$OUT/ab.log"
    timeout 60 /tmp/cli/$v bench --op svd --backend cuda --kernel bidiag --shapes /tmp/s32.txt >> "$OUT/ab.log" 2>&1
    timeout 60 /tmp/cli/$v bench --op svd --backend cuda --kernel bidiag --dtype f64 --shapes /tmp/s64.txt >> "$OUT/ab.log" 2>&1
    timeout 60 /tmp/cli/$v bench --op svd --variant svdvals --backend cuda --kernel bidiag --shapes /tmp/s32.txt >> "$OUT/ab.log" 2>&1
  done
done
grep -E "^==|^\| svd" "$OUT/ab.log" | sed 's/|[^|]*|[^|]*$//'
echo "ab done at $SECONDS s"
timeout ${TEST_S:-150} /tmp/cli/svd-test --test-threads=1 > "$OUT/tests.log" 2>&1
echo "svd-test rc $?" >> "$OUT/tests.log"; grep -E "FAILED|panicked|test result|rc" "$OUT/tests.log"
left 100 && { timeout 150 /tmp/cli/lib-test --test-threads=1 cuda:: > "$OUT/lib-tests.log" 2>&1
  echo "lib-test rc $?" >> "$OUT/lib-tests.log"; grep -E "FAILED|panicked|test result|rc" "$OUT/lib-tests.log"; }
ms=$((${LIMIT:-560} - SECONDS - 20)); [ $ms -gt 150 ] && ms=150
left 80 && { timeout $ms compute-sanitizer --tool memcheck --print-limit 20 /tmp/cli/svd-test --test-threads=1 \
  svd_every_cuda_kernel_f32 > "$OUT/memcheck.log" 2>&1
  echo "memcheck rc $?" >> "$OUT/memcheck.log"; tail -3 "$OUT/memcheck.log"; }
echo "tests done at $SECONDS s"
[ "${RETUNE:-0}" = 1 ] || exit 0
bash gpu-lab/pending/retune-over.sh "$OUT" svd /tmp/cli/new $P/prev-tables.tar.gz 3m 220 $((${LIMIT:-560} - SECONDS))
