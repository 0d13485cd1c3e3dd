#!/bin/bash
# The SVD's `tall` finish over the grid (kernels/svd.cu bl_svd_tall_finish: 32 of U's
# columns a block; was a block a matrix) and the warp eigh kernels' input with eight
# loads a lane in flight (eigh.cu bl_warp_read_sym), against the tree before, in one
# device call (about 8 minutes). Here: a bundle packed into .gpu-pack/bundle.tar.xz
# (tests/{batchlin-lib,eigh-test,svd-test} and bin/batchlin from BATCHLIN_NVRTC=none
# builds of this tree, bin/batchlin-prev the CLI of the tree before, cache/ by NVRTC
# 13.0 for both, peer_bench.py), unpacked into .gpu there. On the device:
#   run(command="bash gpu-lab/pending/svd-finish-ab.sh $OUT", carry=[".gpu-pack"])
# Then: the eigh and SVD suites (every CUDA kernel forced), `batchlin bench` A/B
# alternated three rounds, ncu's durations of the finish, memcheck and racecheck on the
# changed families, the shapes of record touched routed beside torch.linalg, CuPy and
# JAX. Logs in OUT/logs.tgz, packed after each phase.
mkdir -p .gpu && tar xJf .gpu-pack/bundle.tar.xz -C .gpu
. gpu-lab/pending/setup.sh "$@"
(timeout 300 .gpu/tests/svd-test --test-threads=1 > "$O/svd-test.log" 2>&1; echo "rc=$?" >> "$O/svd-test.log") &
timeout 300 .gpu/tests/eigh-test --test-threads=1 > "$O/eigh-test.log" 2>&1; echo "rc=$?" >> "$O/eigh-test.log"
wait
grep -hE "^test result|FAILED|panicked|^rc=" "$O"/eigh-test.log "$O"/svd-test.log
pack
printf 'svd 256 2048 64\nsvd 1024 256 64\n' > /tmp/t.txt
printf 'svd 1 1024 1024\nsvd 4 512 512\n' > /tmp/c.txt
printf 'eigh 4096 8 8\neigh 4096 16 16\n' > /tmp/w.txt
printf 'eigh 4096 12 12\neigh 4096 32 32\n' > /tmp/q.txt
for r in 1 2 3; do
  for bin in batchlin-prev batchlin; do
    for dt in f32 f64; do
      echo "== $r $bin $dt svd tall"
      timeout 90 .gpu/bin/$bin bench --kernel tall --dtype $dt --shapes /tmp/t.txt 2>&1 | grep -E '^\| svd'
      echo "== $r $bin $dt svd cusolver"
      timeout 90 .gpu/bin/$bin bench --kernel cusolver --dtype $dt --shapes /tmp/c.txt 2>&1 | grep -E '^\| svd'
      echo "== $r $bin $dt eigh warp"
      timeout 60 .gpu/bin/$bin bench --kernel warp --dtype $dt --shapes /tmp/w.txt 2>&1 | grep -E '^\| eig'
    done
    echo "== $r $bin f32 eigh warp-bisect"
    timeout 60 .gpu/bin/$bin bench --kernel warp-bisect --dtype f32 --shapes /tmp/q.txt 2>&1 | grep -E '^\| eig'
    echo "== $r $bin f64 eigh warp-ql"
    timeout 60 .gpu/bin/$bin bench --kernel warp-ql --dtype f64 --shapes /tmp/q.txt 2>&1 | grep -E '^\| eig'
  done
  pack
done > "$O/ab.log" 2>&1
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
{
  for s in "svd 256 2048 64" "svd 1 1024 1024"; do
    echo "$s" > /tmp/one.txt
    for bin in batchlin-prev batchlin; do
      k=tall; [ "$s" = "svd 1 1024 1024" ] && k=cusolver
      echo "== $bin $k $s f32"
      timeout 120 "$NCU" --clock-control none --metrics gpu__time_duration.sum -k 'regex:^svd_tall_finish' -c 3 .gpu/bin/$bin bench --kernel $k --dtype f32 --shapes /tmp/one.txt
    done
  done
} > "$O/ncu-durations.log" 2>&1
pack
SANITIZE_KERNELS="eigh-cusolver eigh-warp-bisect eigh-warp svd-tall svd-cusolver" SANITIZE_TOOLS="racecheck memcheck" SANITIZE_JOBS=6 SANITIZE_TIMEOUT=200 BATCHLIN_SANITIZE_SMALL=1 scripts/gpu-sanitize /tmp/san > "$O/san.log" 2>&1
cp /tmp/san/sanitize-summary.txt "$O/" 2>/dev/null
pack
printf 'eigh 4096 16 16\neigh 4096 32 32\neigh 1 1024 1024\neigh 16 1024 1024\nsvd 256 2048 64\nsvd 1 1024 1024\n' > /tmp/p.txt
export XLA_PYTHON_CLIENT_PREALLOCATE=false
{ .gpu/bin/batchlin bench --shapes /tmp/p.txt; } > "$O/batchlin-routed.log" 2>&1
timeout 240 python3 .gpu/peer_bench.py --shapes /tmp/p.txt --peers torch-cusolver,cupy,jax --out "$O/peers.csv" > "$O/peers.log" 2>&1
{ .gpu/bin/batchlin bench --shapes /tmp/p.txt; } >> "$O/batchlin-routed.log" 2>&1
pack
cat "$O/sanitize-summary.txt" 2>/dev/null
grep -E '^\| (eigh|svd)' "$O/batchlin-routed.log"; cat "$O/peers.csv"
