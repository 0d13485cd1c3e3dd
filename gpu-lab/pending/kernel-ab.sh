#!/bin/bash
# One device call comparing a kernel's change: `new` against `head` (two CLIs), forced,
# alternated for REPS rounds (2) at float32 shapes S32 (also values alone, VALUES) and
# float64 shapes S64; then `new`'s test binary TEST and the library's `cuda::` tests;
# memcheck on TEST's test MEMCHECK; then, with RETUNE=1, OP measured again by `new` over
# the pack's prev-tables.tar.gz and checked held out (retune-over.sh, budget TUNE_BUDGET
# killed after TUNE_TIMEOUT s). Phases are skipped once the call nears LIMIT (560 s);
# TEST_S (150) bounds the test binary. Written once for session-h.sh (eigh) and
# session-j.sh (svd), which set:
#   P (the pack: head.xz, new.xz, TEST.xz, lib-test.xz, prev-tables.tar.gz), OP, KERNEL,
#   VALUES, S32, S64 (the bench's shape lines), TEST, MEMCHECK, TUNE_BUDGET, TUNE_TIMEOUT;
#   optionally a second kernel changed in `new`, AB2_KERNEL, timed alike in each round
#   with AB2_VARIANT (the bench's --variant) at AB2_S32 and AB2_S64.
#   kernel-ab.sh OUTDIR
set -uo pipefail
OUT=${1:?usage: kernel-ab.sh OUTDIR}
LIMIT=${LIMIT:-560}
mkdir -p "$OUT" /tmp/cli
for v in head new "$TEST" lib-test; do xz -dc "$P/$v.xz" > "/tmp/cli/$v" && chmod +x "/tmp/cli/$v"; done
. scripts/gpu-env > /dev/null
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$OUT/device.txt"
left() { [ $((LIMIT - SECONDS)) -gt "$1" ]; }
printf '%s' "$S32" > /tmp/ab32.txt
printf '%s' "$S64" > /tmp/ab64.txt
B=(bench --op "$OP" --backend cuda --kernel "$KERNEL")  # a CLI's forced bench
# Each CLI's kernels compiled once before timing (NVRTC, into the disk cache).
for v in head new; do for dt in f32 f64; do
  /tmp/cli/$v "${B[@]}" --dtype $dt --shapes /dev/stdin <<< "$OP 2 300 300" > /dev/null 2>&1
  /tmp/cli/$v "${B[@]}" --variant "$VALUES" --dtype $dt --shapes /dev/stdin <<< "$OP 2 300 300" > /dev/null 2>&1
done; done
for rep in $(seq 1 "${REPS:-2}"); do
  for v in head new; do
    echo "== $v rep $rep" >> "$OUT/ab.log"
    timeout 60 /tmp/cli/$v "${B[@]}" --shapes /tmp/ab32.txt >> "$OUT/ab.log" 2>&1
    timeout 60 /tmp/cli/$v "${B[@]}" --dtype f64 --shapes /tmp/ab64.txt >> "$OUT/ab.log" 2>&1
    timeout 60 /tmp/cli/$v "${B[@]}" --variant "$VALUES" --shapes /tmp/ab32.txt >> "$OUT/ab.log" 2>&1
    [ -n "${AB2_KERNEL:-}" ] || continue
    B2=(bench --op "$OP" --backend cuda --kernel "$AB2_KERNEL" --variant "$AB2_VARIANT")
    timeout 60 /tmp/cli/$v "${B2[@]}" --shapes /dev/stdin <<< "$AB2_S32" >> "$OUT/ab.log" 2>&1
    timeout 60 /tmp/cli/$v "${B2[@]}" --dtype f64 --shapes /dev/stdin <<< "$AB2_S64" >> "$OUT/ab.log" 2>&1
  done
done
grep -E "^==|^\| (svd|eig)" "$OUT/ab.log" | sed 's/|[^|]*|[^|]*$//'
echo "ab done at $SECONDS s"
timeout "${TEST_S:-150}" "/tmp/cli/$TEST" --test-threads=1 > "$OUT/tests.log" 2>&1
echo "$TEST rc $?" >> "$OUT/tests.log"; grep -E "FAILED|panicked|test result|rc" "$OUT/tests.log"
left 100 && { timeout 150 /tmp/cli/lib-test --test-threads=1 cuda:: > "$OUT/lib-tests.log" 2>&1
  echo "lib-test rc $?" >> "$OUT/lib-tests.log"; grep -E "FAILED|panicked|test result|rc" "$OUT/lib-tests.log"; }
ms=$((LIMIT - SECONDS - 20)); [ $ms -gt 150 ] && ms=150
left 80 && { timeout $ms compute-sanitizer --tool memcheck --print-limit 20 "/tmp/cli/$TEST" --test-threads=1 \
  "$MEMCHECK" > "$OUT/memcheck.log" 2>&1
  echo "memcheck rc $?" >> "$OUT/memcheck.log"; tail -3 "$OUT/memcheck.log"; }
echo "tests done at $SECONDS s"
[ "${RETUNE:-0}" = 1 ] || exit 0
bash gpu-lab/pending/retune-over.sh "$OUT" "$OP" /tmp/cli/new "$P/prev-tables.tar.gz" "$TUNE_BUDGET" "$TUNE_TIMEOUT" \
  $((LIMIT - SECONDS))
