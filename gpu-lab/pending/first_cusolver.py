"""Where cuSOLVER's first call goes (fresh processes): torch.linalg.eigh's first call
against batchlin.eigh's on a shape batchlin routes to cuSOLVER, each with the CUDA
module loading lazy (the default) and eager; and which architectures libcusolver ships
as SASS and as PTX (a missing sm_90 SASS means a JIT on first launch).

    python gpu-lab/pending/first_cusolver.py [--shape 256x256x256] [--runs 2]
"""
import argparse, json, os, subprocess, sys

CHILD = r"""
import json, sys, time
import torch
torch.zeros(1, device="cuda"); torch.cuda.synchronize()
which, shape = sys.argv[1], sys.argv[2]
b, m, n = (int(v) for v in shape.split("x"))
x = torch.randn(b, m, n, device="cuda"); x = x + x.transpose(1, 2)
torch.cuda.synchronize()
if which == "torch":
    fn = lambda: torch.linalg.eigh(x)
else:
    import batchlin
    fn = lambda: batchlin.eigh(x)
def call():
    t = time.perf_counter(); fn(); torch.cuda.synchronize(); return (time.perf_counter() - t) * 1e3
first = call(); warm = sorted(call() for _ in range(5))[2]
print(json.dumps(dict(first=first, warm=warm)))
"""

ap = argparse.ArgumentParser()
ap.add_argument("--shape", default="256x256x256")
ap.add_argument("--runs", type=int, default=2)
a = ap.parse_args()
print(f"eigh {a.shape} float32, ms: | who | module loading | first | warm | first - warm |")
for r in range(a.runs):
    for which in ("torch", "batchlin"):
        for loading in ("LAZY", "EAGER"):
            env = dict(os.environ, CUDA_MODULE_LOADING=loading)
            out = subprocess.run([sys.executable, "-c", CHILD, which, a.shape], capture_output=True, text=True, env=env)
            if out.returncode:
                print(which, loading, out.stderr[-1500:])
                continue
            d = json.loads(out.stdout.strip().splitlines()[-1])
            print(f"| {which} | {loading} | {d['first']:.1f} | {d['warm']:.2f} | {d['first'] - d['warm']:.1f} |")
from batchlin import _front
_front.cusolver_path()
import glob, shutil
cands = [p for p in [os.environ.get("BATCHLIN_CUSOLVER")] if p]
cands += glob.glob(os.path.join(os.path.dirname(__import__("torch").__file__), "..", "nvidia", "*", "lib", "libcublas*.so*"))
print("libcusolver candidates:", cands)
tool = shutil.which("cuobjdump") or "/usr/local/cuda/bin/cuobjdump"
for lib in cands[:2]:
    lib = os.path.realpath(lib) if os.path.exists(lib) else lib
    for kind in ("--list-elf", "--list-ptx"):
        out = subprocess.run([tool, kind, lib], capture_output=True, text=True)
        arch = {}
        for line in out.stdout.splitlines():
            for tok in line.replace(".", " ").split():
                if tok.startswith("sm_") or tok.startswith("compute_"):
                    arch[tok] = arch.get(tok, 0) + 1
        print(lib, kind, out.returncode, dict(sorted(arch.items())), out.stderr[-300:])
