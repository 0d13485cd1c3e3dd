#!/bin/bash
# The GPU run the `warp-ql` and `warp-bisect` eigh kernels wait for, in one device call
# (about 6 minutes).
# Here (about 15 minutes on 2 cores): .gpu/tests/{eigh-test,batchlin-lib} and
# .gpu/bin/batchlin from BATCHLIN_NVRTC=none builds (cargo test --release -p batchlin
# --no-run; cargo build --release -p batchlin-cli), stripped, and .gpu/cache made by
# NVRTC 13.0, the device's (pip download --no-deps "nvidia-cuda-nvrtc==13.0.*", unzip;
# LD_LIBRARY_PATH=<its nvidia/cu13/lib> BATCHLIN_PREBUILD_DIR=.gpu/cache
# .gpu/tests/batchlin-lib --ignored nvrtc_compiles_every_kernel): 33 MB. On the device:
#   run(command="bash gpu-lab/pending/eigh-warp-check.sh $OUT", carry=[".gpu"])
# The eigh suite (every CUDA kernel forced, the warp kernels included) beside racecheck
# and memcheck on eigh-warp-ql and eigh-warp-bisect (racecheck logs' heads kept), then
# `batchlin bench --kernel warp|warp-ql|warp-bisect|block` for eigh and eigvalsh, float32
# and float64, at n = 4..32, and ncu's stall samples of warp-bisect at 4096x32x32 by
# SASS line (src.csv.gz). Every log into OUTDIR/logs.tgz, packed after each phase.
OUT=${1:?}
O=/tmp/o  # every log here, packed into OUTDIR/logs.tgz after each phase (8 files come back)
mkdir -p "$O" "$OUT"
pack() { tar czf "$OUT/logs.tgz" -C "$O" .; }
{
  . scripts/gpu-env
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
  echo "cache files carried: $(ls .gpu/cache | wc -l)"
} > "$O/env.txt" 2>&1
. scripts/gpu-env >/dev/null 2>&1
(SANITIZE_KERNELS="eigh-warp-ql eigh-warp-bisect" SANITIZE_TOOLS="racecheck memcheck" \
  SANITIZE_JOBS=4 SANITIZE_TIMEOUT=240 scripts/gpu-sanitize /tmp/san >/tmp/san.log 2>&1;
  cp /tmp/san/sanitize-summary.txt "$O/sanitize-summary.txt"
  for k in eigh-warp-ql eigh-warp-bisect; do echo "== $k"
    tar xzf /tmp/san/sanitize.tar.gz -O sanitize/racecheck-$k.log | head -60; done > "$O/racecheck-head.log") &
timeout 280 .gpu/tests/eigh-test --test-threads=1 > "$O/eigh-test.log" 2>&1; echo "rc=$?" >> "$O/eigh-test.log"
wait
pack
echo "cache files after: $(ls "$BATCHLIN_CACHE_DIR" | wc -l)" >> "$O/env.txt"
for n in 4 8 12 16 17 20 24 28 32; do echo "eigh 4096 $n $n"; done >/tmp/s.txt
printf 'eigh 128 32 32\n' >>/tmp/s.txt
for dt in f32 f64; do
  for v in eigh eigvalsh; do
    for k in warp warp-ql warp-bisect block; do
      echo "== $dt $v $k"
      timeout 60 .gpu/bin/batchlin bench --variant "$v" --kernel "$k" --dtype "$dt" --shapes /tmp/s.txt 2>&1 | grep -E '^\| eig'
    done
  done
done > "$O/ab.log" 2>&1
pack
echo "eigh 4096 32 32" > /tmp/one.txt
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
timeout 120 "$NCU" --clock-control none -k regex:eigh_wbis -c 1 --section SourceCounters --section WarpStateStats \
  --section LaunchStats --section Occupancy -o /tmp/prof -f .gpu/bin/batchlin bench --kernel warp-bisect --shapes /tmp/one.txt > "$O/ncu.log" 2>&1
"$NCU" --import /tmp/prof.ncu-rep --page details >> "$O/ncu.log" 2>&1
"$NCU" --import /tmp/prof.ncu-rep --page source --csv --print-source sass > /tmp/src.csv 2>&1 && gzip -c /tmp/src.csv > "$O/src.csv.gz"
pack
grep -hE "^test result|FAILED|panicked|^rc=" "$O"/eigh-test.log; cat "$O/sanitize-summary.txt" "$O/ab.log"
