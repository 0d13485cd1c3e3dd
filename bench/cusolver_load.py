"""Where a first cuSOLVER-routed call's time goes, in a fresh process: loading the library
(dlopen), its first handle (cusolverDnCreate), then batchlin's first call of a shape it
routes to cuSOLVER against a warm call (the library already loaded by then).

    python bench/cusolver_load.py [--runs 3] [--shape 256x256x256]

Each run is two new Python processes (torch initialises the CUDA context first, as a
user's program would): one calls batchlin cold, one loads the library and makes a handle
first (what loading ahead would save). Why: the first call of a cuSOLVER-routed shape waited 105-199 ms beyond
a warm call (docs/proposals/first-call.md); loading the library ahead, off the caller's
thread, helps only with the part that is the load.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys

CHILD = r"""
import ctypes, json, sys, time
import torch
torch.zeros(1, device="cuda"); torch.cuda.synchronize()
import batchlin
from batchlin import _front
_front.cusolver_path()
import os
path = os.environ.get("BATCHLIN_CUSOLVER", "libcusolver.so.12")
t_load = t_create = float("nan")
if sys.argv[2] == "pre":  # the library loaded and a handle made (and dropped) first
    t = time.perf_counter(); lib = ctypes.CDLL(path); t_load = time.perf_counter() - t
    h = ctypes.c_void_p()
    t = time.perf_counter(); lib.cusolverDnCreate(ctypes.byref(h)); t_create = time.perf_counter() - t
    lib.cusolverDnDestroy(h)
b, m, n = (int(v) for v in sys.argv[1].split("x"))
x = torch.randn(b, m, n, device="cuda"); x = x + x.transpose(1, 2)
torch.cuda.synchronize()
def call():
    t = time.perf_counter(); batchlin.eigh(x); torch.cuda.synchronize(); return time.perf_counter() - t
first = call(); warm = min(call() for _ in range(5))
print(json.dumps(dict(lib=path, load_ms=t_load * 1e3, create_ms=t_create * 1e3,
                      first_ms=first * 1e3, warm_ms=warm * 1e3)))
"""


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=3)
    ap.add_argument("--shape", default="256x256x256")
    a = ap.parse_args()
    print(f"eigh {a.shape} float32 (routed to cuSOLVER); ms")
    print("| run | loaded first | dlopen | cusolverDnCreate | batchlin first call | warm | first - warm |")
    print("|---|---|---|---|---|---|---|")
    for r in range(a.runs):
        for mode in ("cold", "pre"):
            out = subprocess.run([sys.executable, "-c", CHILD, a.shape, mode], capture_output=True, text=True)
            if out.returncode != 0:
                print(out.stderr[-2000:])
                sys.exit(1)
            d = json.loads(out.stdout.strip().splitlines()[-1])
            print(f"| {r} | {mode == 'pre'} | {d['load_ms']:.1f} | {d['create_ms']:.1f} | {d['first_ms']:.1f} | "
                  f"{d['warm_ms']:.2f} | {d['first_ms'] - d['warm_ms']:.1f} |")
    print(f"library: {d['lib']}")


if __name__ == "__main__":
    main()
