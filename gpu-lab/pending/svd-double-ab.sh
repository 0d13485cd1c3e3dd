#!/bin/bash
# cuSOLVER's SVD in double for float32 input too (kernels/svd.cu bl_svd_tall_scale's
# solver copy, bl_svd_cus_unpack; cuda/svd.rs run_cusolver), against the tree before (one round),
# then the Python and C GPU suites and `bench/overhead.py --calls 2000` (the per-call
# overhead from Python), in one device call (about 9 minutes). Here: a bundle
# packed into .gpu-pack/bundle.tar.xz: tests/svd-test and bin/batchlin
# (BATCHLIN_NVRTC=none builds of this tree), bin/batchlin-prev (the CLI of f83e6d2, the
# tree before), cache/ by NVRTC 13.0 for both, the wheel
# (`BATCHLIN_NVRTC=<libnvrtc.so.13 of 13.0> python3 -m maturin build --release --strip`)
# and c/libbatchlin.so (`BATCHLIN_NVRTC=none cargo build --release -p batchlin-c`),
# peer_bench.py. On the device:
#   run(command="bash gpu-lab/pending/svd-double-ab.sh $OUT", carry=[".gpu-pack"])
mkdir -p .gpu && tar xJf .gpu-pack/bundle.tar.xz -C .gpu
. gpu-lab/pending/setup.sh "$@"
timeout 150 .gpu/tests/svd-test --test-threads=1 > "$O/svd-test.log" 2>&1; echo "rc=$?" >> "$O/svd-test.log"
grep -hE "^test result|FAILED|panicked|^rc=" "$O"/svd-test.log
pack
printf 'svd 1 1024 1024\nsvd 4 512 512\nsvd 16 256 256\nsvd 1 256 256\n' > /tmp/c.txt
for r in 1; do
  for bin in batchlin-prev batchlin; do
    for dt in f32 f64; do
      echo "== $r $bin $dt svd cusolver"
      timeout 80 .gpu/bin/$bin bench --kernel cusolver --dtype $dt --shapes /tmp/c.txt 2>&1 | grep -E '^\| svd'
    done
  done
  pack
done > "$O/ab.log" 2>&1
export XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --target /tmp/site .gpu/*.whl > "$O/pip.log" 2>&1
PYTHONPATH=/tmp/site timeout 200 python3 -m pytest python/tests -q -rs -p no:cacheprovider > "$O/python.log" 2>&1
echo "rc=$?" >> "$O/python.log"
pack
BATCHLIN_LIB_DIR=.gpu/c timeout 80 scripts/test-c cuda > "$O/c.log" 2>&1
echo "rc=$?" >> "$O/c.log"
pack
printf 'svd 1 1024 1024\n' > /tmp/p.txt
.gpu/bin/batchlin bench --shapes /tmp/p.txt > "$O/batchlin-routed.log" 2>&1
timeout 90 python3 .gpu/peer_bench.py --shapes /tmp/p.txt --peers torch-cusolver,jax --out "$O/peers.csv" > "$O/peers.log" 2>&1
pack
PYTHONPATH=/tmp/site timeout 60 python3 bench/overhead.py --calls 2000 --shapes 1x4x4,64x16x16 --frameworks torch,cupy > "$O/overhead.log" 2>&1
pack
grep -E '^\| svd' "$O/batchlin-routed.log"; cat "$O/peers.csv"; tail -3 "$O/python.log"; tail -3 "$O/c.log"
cat "$O/overhead.log"
