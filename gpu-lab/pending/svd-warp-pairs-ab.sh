#!/bin/bash
# The `warp` SVD's sweeps with a lane pair a column pair (kernels/svd.cu
# bl_svd_warp_pairs: 32 columns' instantiation, every q from BL_SVD_PAIRS_FROM = 17 in
# this bundle) against the tree before (the column-a-lane round-robin sweeps, 334c214),
# in one device call (about 4 minutes). Tried and not taken
# (docs/results/h100/2026-12-06-svd-warp-pairs/): the kernel is in
# gpu-lab/pending/svd-warp-pairs.patch (git apply it first). Bundle as
# svd-warp-scaled-ab.sh's. On the device:
#   run(command="bash gpu-lab/pending/svd-warp-pairs-ab.sh $OUT", carry=[".gpu-pack"])
# Then: the SVD suite, `batchlin bench --kernel warp` before and after alternated three
# rounds at 17..32 columns, ncu's counters at 4096x32x32, memcheck and racecheck on
# svd-warp, the SVD at 4096x32x32 routed beside torch.linalg, CuPy and JAX.
mkdir -p .gpu && tar xJf .gpu-pack/bundle.tar.xz -C .gpu
. gpu-lab/pending/setup.sh "$@"
suites
printf 'svd 4096 32 32\nsvd 4096 28 28\nsvd 4096 24 24\nsvd 4096 20 20\nsvd 4096 17 17\nsvd 4096 32 24\nsvd 4096 24 32\nsvd 1024 32 32\nsvd 256 32 32\n' > /tmp/s.txt
printf 'svd 4096 32 32\nsvd 4096 24 24\n' > /tmp/v.txt
ab warp /tmp/s.txt
ab warp /tmp/v.txt --variant svdvals
echo "svd 4096 32 32" > /tmp/one.txt
ncu_counters "$WARP_COUNTERS" ^svd_warp 1 batchlin-prev batchlin -- --kernel warp --dtype f32 --shapes /tmp/one.txt
sanitize "svd-warp"
printf 'svd 4096 32 32\n' > /tmp/p.txt
peers /tmp/p.txt
cat "$O/sanitize-summary.txt" 2>/dev/null
grep -hE "gpu__time|inst_executed|issue_active|registers|==" "$O/ncu.log" | head -20
grep -E '^\| (eigh|svd)' "$O/batchlin-routed.log"; cat "$O/peers.csv"
