#!/bin/bash
# ncu's scheduler, warp-state and occupancy sections of the `warp` SVD (4096x32x32 float32
# and float64) and of eigh `warp` at 4096x16x16, this tree's CLI (about 2 minutes).
#   run(command="bash gpu-lab/pending/ncu-svd-warp.sh $OUT", carry=[".gpu-pack"])
mkdir -p .gpu && tar xJf .gpu-pack/bundle.tar.xz -C .gpu
. gpu-lab/pending/setup.sh "$@"
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
echo "svd 4096 32 32" > /tmp/one.txt
echo "eigh 4096 16 16" > /tmp/e.txt
{
  for dt in f32 f64; do
    echo "== svd warp $dt"
    timeout 150 "$NCU" --clock-control none --section SchedulerStats --section WarpStateStats --section Occupancy --section LaunchStats --section ComputeWorkloadAnalysis -k 'regex:^svd_warp' -c 1 .gpu/bin/batchlin bench --kernel warp --dtype $dt --shapes /tmp/one.txt
  done
  echo "== eigh warp f32"
  timeout 150 "$NCU" --clock-control none --section SchedulerStats --section WarpStateStats --section Occupancy -k 'regex:^eigh_warp' -c 1 .gpu/bin/batchlin bench --kernel warp --dtype f32 --shapes /tmp/e.txt
} > "$O/ncu-sections.log" 2>&1
pack
grep -E "==|Issued Warp|No Eligible|Active Warps Per|Eligible Warps|Stall|Warp Cycles Per Issued|Registers Per|Achieved Occupancy|Theoretical Occupancy|Block Limit|Executed Ipc|Issue Slots Busy|Duration" "$O/ncu-sections.log" | head -80
