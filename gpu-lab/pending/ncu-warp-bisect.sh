#!/bin/bash
# ncu's stall samples of `warp-bisect` at 4096x32x32 float32 by SASS line, and the
# launch's registers, shared memory and occupancy, in one device call (about a minute).
# Here: .gpu/bin/batchlin and .gpu/cache (see eigh-warp-check.sh). On the device:
#   run(command="bash gpu-lab/pending/ncu-warp-bisect.sh $OUT", carry=[".gpu"])
# Reduce src.csv.gz with gpu-lab/stalls_by_loop.py.
OUT=${1:?}; . scripts/gpu-env >/dev/null 2>&1
echo "eigh 4096 32 32" > /tmp/one.txt
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
timeout 150 "$NCU" --clock-control none -k regex:eigh_wbis -c 1 --section SourceCounters --section WarpStateStats \
  --section LaunchStats --section Occupancy --section SpeedOfLight -o /tmp/prof -f .gpu/bin/batchlin bench --kernel warp-bisect --shapes /tmp/one.txt > "$OUT/ncu.log" 2>&1
"$NCU" --import /tmp/prof.ncu-rep --page details >> "$OUT/ncu.log" 2>&1
"$NCU" --import /tmp/prof.ncu-rep --page source --csv --print-source sass > /tmp/src.csv 2>&1 && gzip -c /tmp/src.csv > "$OUT/src.csv.gz"
grep -E "Duration|Registers Per|Theoretical Occ|Achieved Occ|Warp Cycles Per Issued|Compute \(SM\) Throughput|Issue Slots" "$OUT/ncu.log"
