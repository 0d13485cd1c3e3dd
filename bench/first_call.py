"""The first call of each GPU operation in a fresh process, against a warm call.

    python bench/first_call.py                  # torch CUDA tensors, QR shapes of record
    python bench/first_call.py --shapes 256x128x128,4096x32x32 --dtypes float32,float64

Each case runs in a new Python process with BATCHLIN_CACHE_DIR set to a new empty
folder (no kernel cache on disk), so the first call pays whatever a fresh machine pays:
loading the embedded CUBINs (or, for a build without them or a GPU whose architecture
the build did not embed, compiling with NVRTC). Times include a synchronisation. The
target (issue "The first call and every call") is first - warm <= 50 ms.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile

CHILD = r"""
import json, sys, time
import torch
t0 = time.perf_counter()
import batchlin
t_import = time.perf_counter() - t0
b, m, n, dtype, mode = sys.argv[1:6]
x = torch.randn(int(b), int(m), int(n), device="cuda", dtype=getattr(torch, dtype))
torch.cuda.synchronize()
def call():
    t = time.perf_counter()
    batchlin.qr(x, mode=mode)
    torch.cuda.synchronize()
    return (time.perf_counter() - t) * 1e3
first = call()
warm = sorted(call() for _ in range(20))[10]
print(json.dumps(dict(import_ms=t_import * 1e3, first_ms=first, warm_ms=warm,
                      plan=batchlin.backend_for("qr", x.shape, dtype, "cuda:0").plan)))
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shapes", default="256x128x128,4096x32x32,4096x64x64,1024x128x128,"
                                        "16x1024x64,1x1024x1024,4x64x64,1x4x4")
    ap.add_argument("--dtypes", default="float32,float64")
    ap.add_argument("--modes", default="reduced,r")
    a = ap.parse_args()
    info = subprocess.run([sys.executable, "-c", "import batchlin, json; "
                           "print(json.dumps(batchlin.devices()))"],
                          capture_output=True, text=True)
    print("devices:", info.stdout.strip() or info.stderr.strip())
    print("\n| shape | dtype | mode | plan | first call, ms | warm call, ms | first - warm |")
    print("|---|---|---|---|---|---|---|")
    worst = 0.0
    for shape in a.shapes.split(","):
        b, m, n = shape.lower().split("x")
        for dtype in a.dtypes.split(","):
            for mode in a.modes.split(","):
                with tempfile.TemporaryDirectory(prefix="batchlin-cache-") as cache:
                    env = dict(os.environ, BATCHLIN_CACHE_DIR=cache)
                    r = subprocess.run([sys.executable, "-c", CHILD, b, m, n, dtype, mode],
                                       env=env, capture_output=True, text=True)
                    if r.returncode != 0:
                        print(f"| {shape} | {dtype} | {mode} | failed: "
                              f"{r.stderr.strip().splitlines()[-1:]} | | | |")
                        continue
                    d = json.loads(r.stdout.strip().splitlines()[-1])
                    cached = os.listdir(cache)
                gap = d["first_ms"] - d["warm_ms"]
                worst = max(worst, gap)
                note = f" ({len(cached)} compiled by NVRTC)" if cached else ""
                print(f"| {shape} | {dtype} | {mode} | {d['plan']}{note} | "
                      f"{d['first_ms']:.1f} | {d['warm_ms']:.2f} | {gap:.1f} |")
    print(f"\nworst first - warm: {worst:.1f} ms (target <= 50)")


if __name__ == "__main__":
    main()
