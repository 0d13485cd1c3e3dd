"""The host half of the GPU path, timed without a GPU: `batchlin.torch._cuda` (what
`batchlin.qr`, `qr_ex` and `torch.ops.batchlin.qr` run for a CUDA tensor) on CPU tensors
standing in for CUDA ones, with the native device call replaced by one that returns at
once. What it times: the Python layers, the output allocations and views (torch on the
CPU: its CUDA allocator costs more), the spec lookup; not the native call nor the launch.
The "front door" rows time the whole call (`batchlin.qr(x)`, `torch.ops.batchlin.qr(x)`,
...) with `Tensor.is_cuda` made to answer True, so that CPU tensors take the CUDA path
from the top (the faked property adds about 0.1 us a call).

    python bench/overhead_host.py [--calls 20000]

Prints a Markdown table, us a call (median of 7 runs).
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

import batchlin
import batchlin.torch as bt
from batchlin import _front, _native


def per_call_us(fn, calls: int, repeats: int = 7) -> float:
    for _ in range(min(calls, 500)):
        fn()
    runs = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        runs.append((time.perf_counter() - t0) / calls * 1e6)
    return statistics.median(runs)


class _NoLaunch:
    """`_native.DeviceCall` with its layout, but a call that returns at once."""

    def __init__(self, *args):
        real = _Real(*args)
        self.outputs, self.nbytes = real.outputs, real.nbytes
        self.info_offset, self.info_len = real.info_offset, real.info_len

    def __call__(self, a, out, info, ordinal, stream):
        return None


_Real = _native.DeviceCall


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=20000)
    a = ap.parse_args()
    _native.DeviceCall = _NoLaunch
    _front.specs.clear()
    bt._current_stream = lambda index: 0
    print(f"batchlin {batchlin.__version__}, torch {torch.__version__}; native call stubbed")
    print("\n| path (QR float32) | 1x4x4 | 64x16x16 |\n|---|---|---|")
    rows = {
        "batchlin.qr (no info, shared outputs)": lambda x: bt._cuda("qr", x, "L", "auto", False),
        "batchlin.qr_ex (info, shared outputs)": lambda x: bt._cuda("qr", x, "L", "auto", True),
        "torch.ops kernel (info, apart)": lambda x: bt._qr_cuda(x, "reduced", "auto"),
        "three torch.empty alone": lambda x: (torch.empty(x.shape), torch.empty(x.shape),
                                              torch.empty(x.shape[:-2], dtype=torch.int32)),
    }
    ops = torch.ops.batchlin
    front = {
        "front door: batchlin.qr": batchlin.qr,
        "front door: batchlin.qr_ex": batchlin.qr_ex,
        "front door: batchlin.eigh": batchlin.eigh,
        "front door: batchlin.svd": batchlin.svd,
        "front door: torch.ops.batchlin.qr": ops.qr,
        "front door: torch.ops.batchlin.eigh": ops.eigh,
        "front door: torch.ops.batchlin.svd": ops.svd,
    }
    xs = [torch.randn(1, 4, 4), torch.randn(64, 16, 16)]
    for name, f in rows.items():
        t = [per_call_us(lambda: f(x), a.calls) for x in xs]
        print(f"| {name} | {t[0]:.2f} | {t[1]:.2f} |")
    torch.Tensor.is_cuda = property(lambda self: True)  # CPU tensors down the CUDA path
    try:
        for name, f in front.items():
            t = [per_call_us(lambda: f(x), a.calls) for x in xs]
            print(f"| {name} | {t[0]:.2f} | {t[1]:.2f} |")
    finally:
        del torch.Tensor.is_cuda


if __name__ == "__main__":
    main()
