#!/bin/bash
# One call: eigh `block`'s tridiagonalisation in global memory by panels (`new`, block
# version 5) against version 4 (`head`: every step reads the trailing matrix three
# times), alternated, forced, at the shapes that take the global-memory path; the eigh
# tests and the library's CUDA tests on `new`; memcheck on the structured eigh test;
# then, with RETUNE=1, eigh measured again by `new` over the tables of
# docs/results/h100/2026-12-07-block-vector-sums and checked held out.
#   run(command="RETUNE=1 bash gpu-lab/pending/session-h.sh $OUT", carry=[".gpu5-pack"], kind="nvidia-h100-x1")
# .gpu5-pack: head.xz and new.xz (the CLI, release, BATCHLIN_NVRTC=none: kernels by NVRTC
# on the device), eigh-test.xz and lib-test.xz (`new`'s test binaries), prev-tables.tar.gz
# (tune/*.toml of that folder's tune). Phases are skipped once the call nears 560 s.
set -uo pipefail
OUT=${1:?usage: session-h.sh OUTDIR}
P=.gpu5-pack
mkdir -p "$OUT" /tmp/cli
for v in head new eigh-test lib-test; do xz -dc $P/$v.xz > /tmp/cli/$v && chmod +x /tmp/cli/$v; done
. scripts/gpu-env > /dev/null
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/device.txt"
left() { [ $((560 - SECONDS)) -gt "$1" ]; }
printf 'eigh 256 256 256\neigh 64 257 257\neigh 16 512 512\neigh 4 724 724\neigh 1 1024 1024\n' > /tmp/b32.txt
printf 'eigh 1024 128 128\neigh 256 200 200\neigh 16 257 257\neigh 256 256 256\neigh 4 512 512\n' > /tmp/b64.txt
# Each CLI's kernels compiled once before timing (NVRTC, into the disk cache).
for v in head new; do for dt in f32 f64; do
  /tmp/cli/$v bench --op eigh --backend cuda --kernel block --dtype $dt --shapes /dev/stdin <<< 'eigh 2 300 300' > /dev/null 2>&1
  /tmp/cli/$v bench --op eigh --variant eigvalsh --backend cuda --kernel block --dtype $dt --shapes /dev/stdin <<< 'eigh 2 300 300' > /dev/null 2>&1
done; done
for rep in 1 2; do
  for v in head new; do
    echo "== $v rep $rep" >> "$OUT/ab.log"
    timeout 60 /tmp/cli/$v bench --op eigh --backend cuda --kernel block --shapes /tmp/b32.txt >> "$OUT/ab.log" 2>&1
    timeout 60 /tmp/cli/$v bench --op eigh --backend cuda --kernel block --dtype f64 --shapes /tmp/b64.txt >> "$OUT/ab.log" 2>&1
    timeout 60 /tmp/cli/$v bench --op eigh --variant eigvalsh --backend cuda --kernel block --shapes /tmp/b32.txt >> "$OUT/ab.log" 2>&1
  done
done
grep -E "^==|^\| eig" "$OUT/ab.log" | sed 's/|[^|]*|[^|]*$//'
echo "ab done at $SECONDS s"
timeout 120 /tmp/cli/eigh-test --test-threads=1 > "$OUT/tests.log" 2>&1
echo "eigh-test rc $?" >> "$OUT/tests.log"; grep -E "FAILED|panicked|test result|rc" "$OUT/tests.log"
left 100 && { timeout 150 /tmp/cli/lib-test --test-threads=1 cuda:: > "$OUT/lib-tests.log" 2>&1
  echo "lib-test rc $?" >> "$OUT/lib-tests.log"; grep -E "FAILED|panicked|test result|rc" "$OUT/lib-tests.log"; }
left 80 && { timeout 120 compute-sanitizer --tool memcheck --print-limit 20 /tmp/cli/eigh-test --test-threads=1 \
  eigh_structured_every_cuda_kernel > "$OUT/memcheck.log" 2>&1
  echo "memcheck rc $?" >> "$OUT/memcheck.log"; tail -3 "$OUT/memcheck.log"; }
echo "tests done at $SECONDS s"
[ "${RETUNE:-0}" = 1 ] || exit 0
bash gpu-lab/pending/retune-over.sh "$OUT" eigh /tmp/cli/new $P/prev-tables.tar.gz 2m 190 $((560 - SECONDS))
