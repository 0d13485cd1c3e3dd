#!/bin/bash
# Build the integration run's binaries (BATCHLIN_NVRTC=none), stripped, into .gpu-final/.
set -e
cd "$(dirname "$0")/.."
export BATCHLIN_NVRTC=none
cargo test --release -p batchlin --no-run --message-format=json 2>/dev/null | python3 -c '
import json, sys, shutil
want = {"eigh": "eigh-test", "svd": "svd-test", "reliability": "reliability-test", "batchlin": "lib-test"}
for l in sys.stdin:
    try: m = json.loads(l)
    except Exception: continue
    if m.get("reason") == "compiler-artifact" and m.get("executable") and m.get("profile", {}).get("test"):
        n = m["target"]["name"]
        if n in want and (n != "batchlin" or m["target"]["kind"][0] == "lib"):
            shutil.copy(m["executable"], ".gpu-final/" + want[n]); print("copied", want[n])
'
cargo build --release -p batchlin-cli
cp target/release/batchlin .gpu-final/batchlin
strip .gpu-final/*-test .gpu-final/batchlin
ls -la .gpu-final
