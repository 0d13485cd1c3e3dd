#!/bin/bash
# The `warp` SVD with scaled rotations (kernels/svd.cu bl_svd_warp: a column kept as sig
# times a, one FMA an element a rotation, the squared norms by Rutishauser's update, t and
# c without IEEE square roots; the two-sided Jacobi's t shared as bl_jacobi_t) against the
# tree before, in one device call (about 8 minutes). Here: a bundle packed into
# .gpu-pack/bundle.tar.xz (tests/{batchlin-lib,eigh-test,svd-test} and bin/batchlin from
# BATCHLIN_NVRTC=none builds of this tree, bin/batchlin-prev the CLI of the tree before,
# cache/ by NVRTC 13.0 for both, peer_bench.py). On the device:
#   run(command="bash gpu-lab/pending/svd-warp-scaled-ab.sh $OUT", carry=[".gpu-pack"])
# Then: the SVD and eigh suites (every CUDA kernel forced), `batchlin bench` A/B
# alternated three rounds on the warp kernels, ncu's instruction and issue counters of
# svd_warp at 4096x32x32, memcheck and racecheck on svd-warp and eigh-warp, the SVD and
# eigh at 4096x32x32 routed beside torch.linalg, CuPy and JAX. Logs in OUT/logs.tgz.
mkdir -p .gpu && tar xJf .gpu-pack/bundle.tar.xz -C .gpu
. gpu-lab/pending/setup.sh "$@"
suites
printf 'svd 4096 32 32\nsvd 4096 24 24\nsvd 4096 17 17\nsvd 4096 16 16\nsvd 4096 8 8\nsvd 2048 64 32\nsvd 4096 16 32\n' > /tmp/s.txt
printf 'svd 4096 32 32\nsvd 4096 16 16\n' > /tmp/v.txt
printf 'eigh 4096 16 16\neigh 4096 32 32\n' > /tmp/w.txt
ab warp /tmp/s.txt
ab warp /tmp/v.txt --variant svdvals
ab warp /tmp/w.txt
echo "svd 4096 32 32" > /tmp/one.txt
ncu_counters "$WARP_COUNTERS" ^svd_warp 2 batchlin-prev batchlin -- --kernel warp --dtype f32 --shapes /tmp/one.txt
sanitize "svd-warp eigh-warp"
printf 'svd 4096 32 32\nsvd 4096 16 16\neigh 4096 32 32\n' > /tmp/p.txt
peers /tmp/p.txt
cat "$O/sanitize-summary.txt" 2>/dev/null
grep -hE "gpu__time|inst_executed|issue_active|warps_active|registers|==" "$O/ncu.log" | head -40
grep -E '^\| (eigh|svd)' "$O/batchlin-routed.log"; cat "$O/peers.csv"
