#!/bin/bash
# The `warp` SVD's round-robin partner stepped a round at a time (kernels/svd.cu
# BlRrPartner; the same pairs, bit for bit, in fewer instructions) against the tree
# before (334c214), and the SVD and eigh shapes of record routed beside torch.linalg,
# CuPy and JAX, in one device call (about 5 minutes). Bundle as svd-warp-scaled-ab.sh's.
#   run(command="bash gpu-lab/pending/svd-warp-partner-ab.sh $OUT", carry=[".gpu-pack"])
mkdir -p .gpu && tar xJf .gpu-pack/bundle.tar.xz -C .gpu
. gpu-lab/pending/setup.sh "$@"
suites
printf 'svd 4096 32 32\nsvd 4096 24 24\nsvd 4096 16 16\nsvd 4096 8 8\nsvd 2048 64 32\n' > /tmp/s.txt
ab warp /tmp/s.txt
sanitize "svd-warp"
printf 'svd 4096 32 32\nsvd 1024 64 64\nsvd 1024 128 128\nsvd 256 256 256\nsvd 256 2048 64\nsvd 1 1024 1024\n' > /tmp/all.txt
.gpu/bin/batchlin bench --shapes /tmp/all.txt > "$O/svd-routed.log" 2>&1
printf 'svd 4096 32 32\neigh 4096 16 16\neigh 4096 32 32\neigh 1024 64 64\neigh 1024 128 128\neigh 256 256 256\n' > /tmp/p.txt
peers /tmp/p.txt
cat "$O/sanitize-summary.txt" 2>/dev/null
grep -hE '^\| (eigh|svd)' "$O/svd-routed.log" "$O/batchlin-routed.log"; cat "$O/peers.csv"
