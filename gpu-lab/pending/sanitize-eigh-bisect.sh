#!/bin/bash
# memcheck and racecheck on the families that share the bisection helpers (eigh
# `warp-bisect` and `block`, the SVD's `bidiag`), cases up to 40 x 40, in one device call
# (about 90 s). Here: .gpu/tests/batchlin-lib (BATCHLIN_NVRTC=none, stripped) and
# .gpu/cache (see eigh-warp-check.sh). On the device:
#   run(command="bash gpu-lab/pending/sanitize-eigh-bisect.sh $OUT", carry=[".gpu"])
OUT=$1; . scripts/gpu-env >/dev/null 2>&1
SANITIZE_KERNELS="eigh-warp-bisect eigh-block svd-bidiag" SANITIZE_TOOLS="racecheck memcheck" SANITIZE_JOBS=6 SANITIZE_TIMEOUT=300 BATCHLIN_SANITIZE_SMALL=1 scripts/gpu-sanitize /tmp/san > /tmp/san.log 2>&1
cp /tmp/san/sanitize-summary.txt $OUT/; cp /tmp/san/sanitize.tar.gz $OUT/; tail -5 /tmp/san.log; cat $OUT/sanitize-summary.txt
