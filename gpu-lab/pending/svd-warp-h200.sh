#!/bin/bash
# svd-warp-partner-ab.sh without the suites and the sanitizers (run on an H100 the same
# day), for the H200: the `warp` A/B and the shapes of record routed beside the peers.
#   run(command="bash gpu-lab/pending/svd-warp-h200.sh $OUT", carry=[".gpu-pack"], kind="nvidia-h200")
mkdir -p .gpu && tar xJf .gpu-pack/bundle.tar.xz -C .gpu
. gpu-lab/pending/setup.sh "$@"
printf 'svd 4096 32 32\nsvd 4096 16 16\n' > /tmp/s.txt
ab warp /tmp/s.txt
printf 'svd 4096 32 32\nsvd 1024 64 64\nsvd 1024 128 128\nsvd 256 256 256\nsvd 256 2048 64\nsvd 1 1024 1024\n' > /tmp/all.txt
.gpu/bin/batchlin bench --shapes /tmp/all.txt > "$O/svd-routed.log" 2>&1
printf 'svd 4096 32 32\neigh 4096 16 16\neigh 4096 32 32\neigh 1024 64 64\neigh 1024 128 128\neigh 256 256 256\n' > /tmp/p.txt
peers /tmp/p.txt
grep -hE '^\| (eigh|svd)' "$O/ab.log" "$O/svd-routed.log" "$O/batchlin-routed.log"; cat "$O/peers.csv"
