#!/bin/bash
# The Python and C GPU suites on this tree (the planner's routing of eigh and the SVD
# through every front door: torch and CuPy on the caller's stream, JAX through XLA FFI,
# the custom ops, the C device forms), in one device call (about 5 minutes). Here: the
# wheel (`BATCHLIN_NVRTC=<libnvrtc.so.13 of 13.0> python3 -m maturin build --release
# --strip -o .gpu3`), c/libbatchlin.so (`BATCHLIN_NVRTC=none cargo build --release -p
# batchlin-c`, stripped) and cache/ (NVRTC 13.0) packed into .gpu3-pack/bundle.tar.xz.
# On the device:
#   run(command="bash gpu-lab/pending/front-doors-gpu.sh $OUT", carry=[".gpu3-pack"])
mkdir -p .gpu3 && tar xJf .gpu3-pack/bundle.tar.xz -C .gpu3
. gpu-lab/pending/setup.sh "$@"
export XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --target /tmp/site .gpu3/*.whl > "$O/pip.log" 2>&1
PYTHONPATH=/tmp/site timeout 400 python3 -m pytest python/tests -q -rs -p no:cacheprovider > "$O/python.log" 2>&1
echo "rc=$?" >> "$O/python.log"
pack
BATCHLIN_LIB_DIR=.gpu3/c timeout 150 scripts/test-c cuda > "$O/c.log" 2>&1
echo "rc=$?" >> "$O/c.log"
pack
tail -4 "$O/python.log"; tail -4 "$O/c.log"
