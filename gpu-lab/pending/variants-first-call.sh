#!/bin/bash
# The values-only variants against the full ones (eigh/eigvalsh, svd/svdvals) on the
# shapes of record, cuSOLVER's first call (batchlin's and torch.linalg's, module loading
# lazy and eager, and the SASS/PTX libcusolver ships), the per-call overhead, and the
# eigh and SVD shapes of record routed, float32 and float64.
#   run(command="bash gpu-lab/pending/variants-first-call.sh $OUT", carry=[".gpu-pack"])
mkdir -p .gpu && tar xJf .gpu-pack/bundle.tar.xz -C .gpu
. gpu-lab/pending/setup.sh "$@"
python3 -m pip install -q --no-index --no-deps --target /tmp/site .gpu-pack/*.whl > "$O/pip.log" 2>&1
export PYTHONPATH=/tmp/site XLA_PYTHON_CLIENT_PREALLOCATE=false
timeout 200 python3 bench/gpu_variants.py --ops eigh,svd > "$O/variants.log" 2>&1
pack
timeout 120 python3 gpu-lab/pending/first_cusolver.py --runs 2 > "$O/first-cusolver.log" 2>&1
pack
timeout 90 python3 bench/overhead.py --calls 2000 --shapes 1x4x4,64x16x16 --frameworks torch,cupy > "$O/overhead.log" 2>&1
pack
grep -E '^(eigh|svd) ' bench/shapes.txt > /tmp/rec.txt
for dt in f32 f64; do timeout 120 .gpu/bin/batchlin bench --dtype $dt --shapes /tmp/rec.txt; done > "$O/routed.log" 2>&1
pack
cat "$O/variants.log" "$O/first-cusolver.log" "$O/overhead.log"; grep -E '^\| (eigh|svd)' "$O/routed.log"
