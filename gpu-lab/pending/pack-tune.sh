#!/bin/bash
# Run HERE (no GPU): pack .gpu-pack for gpu-lab/pending/tune-rate.sh (a tune on the device
# over several calls) from this tree, lighter than scripts/gpu-bundle: bundle.tar.xz with
# bin/batchlin (the CLI), tests/batchlin-lib (the library's tests, for GPU_TUNE_TESTS=1)
# and cache/ (NVRTC's disk cache of every kernel, made by `nvrtc_compiles_every_kernel`
# with BATCHLIN_PREBUILD_DIR by CUDA 13.0's NVRTC: its version is in the cache key), built
# with BATCHLIN_NVRTC=none, one xz stream with a large dictionary; and the wheel (kernels
# embedded, as users get it) for the NumPy routing. About 25 MB; 15-25 minutes on two
# cores. NVRTC_DIR: a folder holding CUDA 13.0's libnvrtc.so.13
#   (pip download --no-deps "nvidia-cuda-nvrtc==13.0.*"; unzip; nvidia/cu13/lib).
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
NV=${NVRTC_DIR:?NVRTC_DIR: the folder of CUDA 13.0 libnvrtc.so.13}
ls "$NV"/libnvrtc-builtins.so.13.0 >/dev/null
P=.gpu-pack
W=/tmp/pack-tune
grep -qx "/$P/" .git/info/exclude 2>/dev/null || echo "/$P/" >> .git/info/exclude
rm -rf "$P" "$W" && mkdir -p "$P" "$W/bin" "$W/tests" "$W/cache"
export BATCHLIN_NVRTC=none
cargo build --release -p batchlin-cli
strip -o "$W/bin/batchlin" target/release/batchlin
lib=$(cargo test --release -p batchlin --lib --no-run --message-format=json 2>/dev/null |
  python3 -c 'import json, sys
for l in sys.stdin:
    try: m = json.loads(l)
    except Exception: continue
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m["target"]["name"] == "batchlin" and m.get("profile", {}).get("test"):
        print(m["executable"])')
strip -o "$W/tests/batchlin-lib" "$lib"
LD_LIBRARY_PATH="$NV" BATCHLIN_PREBUILD_DIR="$W/cache" "$lib" --ignored \
  nvrtc_compiles_every_kernel --test-threads=1 | tail -1
tar cf - -C "$W" bin tests cache | xz -9e -T2 > "$P/bundle.tar.xz"
python3 -m pip show maturin >/dev/null 2>&1 || python3 -m pip install -q maturin
BATCHLIN_NVRTC="$NV/libnvrtc.so.13" python3 -m maturin build --release --strip -o "$P" >/dev/null
git rev-parse --short HEAD > "$P/commit.txt"
du -sh "$P"/*
