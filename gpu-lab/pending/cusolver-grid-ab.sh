#!/bin/bash
# cuSOLVER eigh's pack and unpack over the grid (kernels/cusolver.cu) and `warp-bisect`'s
# X in rows of 16-byte vectors (eigh.cu bl_wql_fast), against the tree before, in one
# device call (about 6 minutes). Here: .gpu/tests/{batchlin-lib,eigh-test} and
# .gpu/bin/batchlin from BATCHLIN_NVRTC=none builds of this tree, .gpu/bin/batchlin-prev
# the CLI of the tree before, .gpu/cache made by NVRTC 13.0 for both. On the device:
#   run(command="bash gpu-lab/pending/cusolver-grid-ab.sh $OUT", carry=[".gpu"])
# Then: the eigh suite (every CUDA kernel forced), `batchlin bench` A/B alternated three
# rounds, each kernel's duration (ncu) in the SVD's `tall` and `cusolver` paths (their
# finish kernel is still a block a matrix), ncu's stall samples of `warp-bisect`,
# memcheck and racecheck on eigh-cusolver and eigh-warp-bisect. Logs in OUT/logs.tgz.
. gpu-lab/pending/setup.sh "$@"
timeout 300 .gpu/tests/eigh-test --test-threads=1 > "$O/eigh-test.log" 2>&1; echo "rc=$?" >> "$O/eigh-test.log"
grep -hE "^test result|FAILED|panicked|^rc=" "$O"/eigh-test.log
pack
printf 'eigh 1 1024 1024\neigh 16 1024 1024\neigh 256 256 256\neigh 1024 192 192\neigh 4096 48 48\n' > /tmp/c.txt
for n in 17 24 32; do echo "eigh 4096 $n $n"; done > /tmp/w.txt
for r in 1 2 3; do
  for bin in batchlin-prev batchlin; do
    for dt in f32 f64; do
      echo "== $r $bin $dt eigh cusolver"
      timeout 90 .gpu/bin/$bin bench --variant eigh --kernel cusolver --dtype $dt --shapes /tmp/c.txt 2>&1 | grep -E '^\| eig'
    done
    echo "== $r $bin f32 eigh warp-bisect"
    timeout 60 .gpu/bin/$bin bench --variant eigh --kernel warp-bisect --dtype f32 --shapes /tmp/w.txt 2>&1 | grep -E '^\| eig'
  done
done > "$O/ab.log" 2>&1
pack
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
printf 'svd 256 2048 64\n' > /tmp/t.txt
printf 'svd 1 1024 1024\n' > /tmp/u.txt
printf 'eigh 1 1024 1024\n' > /tmp/e.txt
{
  echo "== tall 256x2048x64 f32"
  timeout 120 "$NCU" --clock-control none --metrics gpu__time_duration.sum -k 'regex:^(svd|bq|qr|cus)' -c 40 .gpu/bin/batchlin bench --kernel tall --dtype f32 --shapes /tmp/t.txt
  echo "== cusolver svd 1x1024x1024 f32"
  timeout 120 "$NCU" --clock-control none --metrics gpu__time_duration.sum -k 'regex:^(svd|bq|qr|cus)' -c 12 .gpu/bin/batchlin bench --kernel cusolver --dtype f32 --shapes /tmp/u.txt
  echo "== cusolver eigh 1x1024x1024 f32, the new kernels"
  timeout 120 "$NCU" --clock-control none --metrics gpu__time_duration.sum -k 'regex:^cus_' -c 12 .gpu/bin/batchlin bench --variant eigh --kernel cusolver --dtype f32 --shapes /tmp/e.txt
  echo "== the same, the tree before"
  timeout 120 "$NCU" --clock-control none --metrics gpu__time_duration.sum -k 'regex:^cus_' -c 8 .gpu/bin/batchlin-prev bench --variant eigh --kernel cusolver --dtype f32 --shapes /tmp/e.txt
} > "$O/ncu-durations.log" 2>&1
pack
echo "eigh 4096 32 32" > /tmp/one.txt
timeout 150 "$NCU" --clock-control none -k regex:eigh_wbis -c 1 --section SourceCounters --section WarpStateStats \
  --section LaunchStats --section Occupancy --section SpeedOfLight -o /tmp/prof -f .gpu/bin/batchlin bench --kernel warp-bisect --shapes /tmp/one.txt > "$O/ncu-wbis.log" 2>&1
"$NCU" --import /tmp/prof.ncu-rep --page details >> "$O/ncu-wbis.log" 2>&1
"$NCU" --import /tmp/prof.ncu-rep --page source --csv --print-source sass > /tmp/src.csv 2>&1 && gzip -c /tmp/src.csv > "$OUT/src.csv.gz"
pack
[ -x .gpu/tests/batchlin-lib ] && SANITIZE_KERNELS="eigh-cusolver eigh-warp-bisect" SANITIZE_TOOLS="racecheck memcheck" SANITIZE_JOBS=4 SANITIZE_TIMEOUT=200 BATCHLIN_SANITIZE_SMALL=1 scripts/gpu-sanitize /tmp/san > "$O/san.log" 2>&1
cp /tmp/san/sanitize-summary.txt "$O/" 2>/dev/null
pack
grep -E "Duration|Registers Per|Theoretical Occ|Achieved Occ|Warp Cycles Per Issued|Issue Slots" "$O/ncu-wbis.log"
cat "$O/sanitize-summary.txt" 2>/dev/null
