#!/bin/bash
# The Sturm counts' reciprocal without the range fix-up and each value bracketed by one
# count a lane first (common.cu bl_pivdiv, eigh.cu bl_eigh_bisect), against the tree
# before them, in one device call (about 4 minutes). Here: .gpu/tests/{eigh-test,svd-test}
# and .gpu/bin/batchlin from BATCHLIN_NVRTC=none builds of this tree, .gpu/bin/batchlin-prev
# the CLI of the tree before (5ab7236), .gpu/cache made by NVRTC 13.0 (see
# eigh-warp-check.sh). On the device:
#   run(command="bash gpu-lab/pending/eigh-bisect-ab.sh $OUT", carry=[".gpu"])
# The eigh and SVD suites (every CUDA kernel forced: both use the changed helpers), then
# `batchlin bench` of `warp-bisect` and `block` (eigh, eigvalsh) and the SVD's `bidiag`,
# each shape by the previous CLI and this one alternately, three rounds. Logs packed into
# OUTDIR/logs.tgz after each phase.
. gpu-lab/pending/setup.sh "$@"
(timeout 250 .gpu/tests/svd-test --test-threads=1 > "$O/svd-test.log" 2>&1; echo "rc=$?" >> "$O/svd-test.log") &
timeout 250 .gpu/tests/eigh-test --test-threads=1 > "$O/eigh-test.log" 2>&1; echo "rc=$?" >> "$O/eigh-test.log"
wait
pack
for n in 12 16 17 24 32; do echo "eigh 4096 $n $n"; done > /tmp/w.txt
printf 'eigh 1024 64 64\neigh 1024 128 128\n' > /tmp/b.txt
printf 'svd 1024 64 64\nsvd 1024 128 128\nsvd 4096 48 48\n' > /tmp/s.txt
for r in 1 2 3; do
  for bin in batchlin-prev batchlin; do
    for dt in f32 f64; do
      for v in eigh eigvalsh; do
        echo "== $r $bin $dt $v warp-bisect"
        timeout 60 .gpu/bin/$bin bench --variant $v --kernel warp-bisect --dtype $dt --shapes /tmp/w.txt 2>&1 | grep -E '^\| eig'
        echo "== $r $bin $dt $v block"
        timeout 60 .gpu/bin/$bin bench --variant $v --kernel block --dtype $dt --shapes /tmp/b.txt 2>&1 | grep -E '^\| eig'
      done
      echo "== $r $bin $dt svd bidiag"
      timeout 60 .gpu/bin/$bin bench --kernel bidiag --dtype $dt --shapes /tmp/s.txt 2>&1 | grep -E '^\| svd'
    done
  done
  pack
done > "$O/ab.log" 2>&1
pack
grep -hE "^test result|FAILED|panicked|^rc=" "$O"/eigh-test.log "$O"/svd-test.log
