"""The first call of each GPU operation in a fresh process, against a warm call.

    python bench/first_call.py                  # torch CUDA tensors, every operation
    python bench/first_call.py --shapes 256x128x128,4096x32x32 --calls qr,qr:r,svdvals

Each case runs in a new Python process with BATCHLIN_CACHE_DIR set to a new empty
folder (no kernel cache on disk), so the first call pays whatever a fresh machine pays:
loading the embedded CUBINs (or, for a build without them or a GPU whose architecture
the build did not embed, compiling with NVRTC). Times include a synchronisation. Beside
the next 20 calls, a settled call: the median of five after a second of calls, what a
long-running process pays (the next 20 may still be a cold cuSOLVER's detours, plan.rs
`plan_call`). The target (issue "The first call and every call") is first - settled
<= 50 ms.
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
b, m, n, dtype, call_name = sys.argv[1:6]
x = torch.randn(int(b), int(m), int(n), device="cuda", dtype=getattr(torch, dtype))
torch.cuda.synchronize()
op, _, mode = call_name.partition(":")
fn = {"qr": lambda: batchlin.qr(x, mode=mode or "reduced"),
      "eigh": lambda: batchlin.eigh(x), "eigvalsh": lambda: batchlin.eigvalsh(x),
      "svd": lambda: batchlin.svd(x), "svdvals": lambda: batchlin.svdvals(x)}[op]
def call():
    t = time.perf_counter()
    fn()
    torch.cuda.synchronize()
    return (time.perf_counter() - t) * 1e3
first = call()
warm = sorted(call() for _ in range(20 if first < 100 else 3))
warm = warm[len(warm) // 2]
# Settled: after at least a second of calls (a cold cuSOLVER's detours and its first use
# behind), the median of five: what a long-running process pays a call.
spent, calls = 0.0, 0
while spent < 1000 and calls < 400:
    spent += call()
    calls += 1
settled = sorted(call() for _ in range(5))[2]
base = f"qr-{mode}" if mode in ("r", "complete") else op
print(json.dumps(dict(import_ms=t_import * 1e3, first_ms=first, warm_ms=warm,
                      settled_ms=settled,
                      plan=batchlin.backend_for(base, x.shape, dtype, "cuda:0").plan)))
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shapes", default="4096x32x32,1024x64x64,16x1024x64")
    ap.add_argument("--dtypes", default="float32,float64")
    ap.add_argument("--calls", default="qr,qr:r,eigh,eigvalsh,svd,svdvals",
                    help="operations, qr:MODE for a QR mode (eigh skips non-square shapes)")
    a = ap.parse_args()
    info = subprocess.run([sys.executable, "-c", "import batchlin, json; "
                           "print(json.dumps(batchlin.devices()))"],
                          capture_output=True, text=True)
    print("devices:", info.stdout.strip() or info.stderr.strip())
    print("\n| shape | dtype | call | plan | first call, ms | next 20, ms | settled, ms "
          "| first - settled |")
    print("|---|---|---|---|---|---|---|---|")
    worst = 0.0
    for shape in a.shapes.split(","):
        b, m, n = shape.lower().split("x")
        for dtype in a.dtypes.split(","):
            for mode in a.calls.split(","):
                if mode.startswith("eig") and m != n:
                    continue
                with tempfile.TemporaryDirectory(prefix="batchlin-cache-") as cache:
                    env = dict(os.environ, BATCHLIN_CACHE_DIR=cache)
                    r = subprocess.run([sys.executable, "-c", CHILD, b, m, n, dtype, mode],
                                       env=env, capture_output=True, text=True)
                    if r.returncode != 0:
                        print(f"| {shape} | {dtype} | {mode} | failed: "
                              f"{r.stderr.strip().splitlines()[-1:]} | | | | |")
                        continue
                    d = json.loads(r.stdout.strip().splitlines()[-1])
                    cached = os.listdir(cache)
                gap = d["first_ms"] - d["settled_ms"]
                worst = max(worst, gap)
                note = f" ({len(cached)} compiled by NVRTC)" if cached else ""
                print(f"| {shape} | {dtype} | {mode} | {d['plan']}{note} | "
                      f"{d['first_ms']:.1f} | {d['warm_ms']:.2f} | {d['settled_ms']:.2f} "
                      f"| {gap:.1f} |")
    print(f"\nworst first - settled: {worst:.1f} ms (target <= 50)")


if __name__ == "__main__":
    main()
