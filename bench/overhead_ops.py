"""Per-call host time of the torch front doors against the custom ops, on CPU tensors
(the dispatcher's path is the same for CUDA tensors; the kernels here are the CPU
ones, so compare rows, not absolute figures with the GPU's).

    python bench/overhead_ops.py [--calls 1000] [--repeats 21]

Prints a Markdown table, us a call (the least of `repeats` runs of `calls` calls: other
load on the machine only adds), for float32 1x4x4: `batchlin.qr`, `torch.ops.batchlin.qr`,
`torch.ops.batchlin.qr.default`, eigh, svd and svdvals, plain, under `torch.no_grad()` and
under `torch.inference_mode()`, and with an input that requires grad (the autograd path,
forward only); torch.linalg.qr for reference.
"""

from __future__ import annotations

import argparse
import timeit

import torch

import batchlin
import batchlin.torch  # noqa: F401  (registers torch.ops.batchlin)


def per_call_us(fn, calls: int, repeats: int) -> float:
    fn()
    return min(timeit.repeat(fn, number=calls, repeat=repeats)) / calls * 1e6


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=1000)
    ap.add_argument("--repeats", type=int, default=21)
    args = ap.parse_args()
    ops = torch.ops.batchlin
    a = torch.randn(1, 4, 4)
    s = a + a.mT
    g = a.clone().requires_grad_(True)
    rows = {
        "batchlin.qr": lambda: batchlin.qr(a),
        "torch.ops.batchlin.qr": lambda: ops.qr(a),
        "torch.ops.batchlin.qr.default": lambda: ops.qr.default(a, "reduced", "auto"),
        "batchlin.eigh": lambda: batchlin.eigh(s),
        "torch.ops.batchlin.eigh": lambda: ops.eigh(s),
        "batchlin.svd": lambda: batchlin.svd(a),
        "torch.ops.batchlin.svd": lambda: ops.svd(a),
        "torch.ops.batchlin.svdvals": lambda: ops.svdvals(a),
        "torch.linalg.qr (reference)": lambda: torch.linalg.qr(a),
    }
    grad_rows = {
        "batchlin.qr, input requires grad": lambda: batchlin.qr(g),
        "torch.ops.batchlin.qr, input requires grad": lambda: ops.qr(g),
        "torch.linalg.qr, input requires grad (reference)": lambda: torch.linalg.qr(g),
    }
    print(f"batchlin {batchlin.__version__}, torch {torch.__version__}, CPU float32 1x4x4")
    print("\n| call | plain | no_grad | inference_mode |\n|---|---|---|---|")
    for name, f in rows.items():
        t0 = per_call_us(f, args.calls, args.repeats)
        with torch.no_grad():
            t1 = per_call_us(f, args.calls, args.repeats)
        with torch.inference_mode():
            t2 = per_call_us(f, args.calls, args.repeats)
        print(f"| {name} | {t0:.1f} | {t1:.1f} | {t2:.1f} |")
    for name, f in grad_rows.items():
        print(f"| {name} | {per_call_us(f, args.calls, args.repeats):.1f} | | |")


if __name__ == "__main__":
    main()
