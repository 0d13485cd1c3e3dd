#!/bin/bash
# The float64 `warp` SVD at 32 columns with its registers capped for 3 blocks an SM
# (BL_SVD_WARP's __launch_bounds__(128, 3) for float64 at Q = 32, 1 elsewhere; not kept:
# docs/results/h100/2026-12-06-svd-warp-f64-regs; bin/batchlin) and for 4 (bin/batchlin-m4)
# against the uncapped tree before (bin/batchlin-prev, b0144cd: 248 registers, 2 blocks),
# and the SVD suite of the capped tree, in one device call (about 4 minutes; the changed
# kernels compile on the device at first use, an untimed run first).
#   run(command="bash gpu-lab/pending/svd-warp-f64-regs.sh $OUT", carry=[".gpu-pack"])
mkdir -p .gpu && tar xJf .gpu-pack/bundle.tar.xz -C .gpu
. gpu-lab/pending/setup.sh "$@"
(timeout 300 .gpu/tests/svd-test --test-threads=1 > "$O/svd-test.log" 2>&1; echo "rc=$?" >> "$O/svd-test.log")
grep -hE "^test result|FAILED|panicked|^rc=" "$O/svd-test.log"
pack
printf 'svd 4096 32 32\nsvd 4096 24 24\nsvd 4096 17 17\nsvd 1024 32 32\nsvd 4096 16 32\n' > /tmp/s.txt
for bin in batchlin-prev batchlin batchlin-m4; do
  .gpu/bin/$bin bench --kernel warp --dtype f64 --shapes /tmp/s.txt > /dev/null 2>&1
done
for r in 1 2 3; do
  for bin in batchlin-prev batchlin batchlin-m4; do
    echo "== $r $bin f64 warp"
    timeout 90 .gpu/bin/$bin bench --kernel warp --dtype f64 --shapes /tmp/s.txt 2>&1 | grep -E '^\| svd'
  done
  echo "== $r batchlin f32 warp"
  timeout 90 .gpu/bin/batchlin bench --kernel warp --dtype f32 --shapes /tmp/s.txt 2>&1 | grep -E '^\| svd'
done > "$O/ab.log" 2>&1
pack
echo "svd 4096 32 32" > /tmp/one.txt
ncu_counters "$WARP_COUNTERS" ^svd_warp 1 batchlin-prev batchlin batchlin-m4 -- --kernel warp --dtype f64 --shapes /tmp/one.txt
grep -E "==|gpu__time|registers|issue_active|warps_active|inst_exec" "$O/ncu.log"
cat "$O/ab.log"
