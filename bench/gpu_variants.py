"""Each GPU operation beside its values-only variant (eigh and eigvalsh, svd and svdvals,
QR and its R-only mode) on torch CUDA tensors, float32 and float64, on the shapes of
record: ms a call (CUDA events, median of repeats), the values-only time over the full
one (the issues ask for at most 0.5), each time over its floor, and the values checked
against numpy.linalg in float64 on a few matrices.

    python bench/gpu_variants.py                       # every op of bench/shapes.txt
    python bench/gpu_variants.py --ops eigh --dtypes float32

The floor is the larger of the bytes in and out at 4.3 TB/s and the flops at the H200's
FP32 rate (67 TFLOP/s; FP64 likewise at 67), counted as the issues count them: eigh
9n^3 a matrix with vectors and 4n^3/3 for values alone; SVD by the method routed
(`svd_flops`); QR 2mn^2 - 2n^3/3.
"""

from __future__ import annotations

import argparse
import os
import statistics

import numpy as np
import torch

import batchlin

HERE = os.path.dirname(os.path.abspath(__file__))
BW, FLOPS = 4.3e12, 67e12


def shapes(path, ops):
    for line in open(path):
        line = line.split("#")[0].strip()
        if line:
            op, b, m, n = line.split()
            if op in ops:
                yield op, int(b), int(m), int(n)


def svd_flops(vectors, p, q):
    """The flops of the method the planner takes for the tall p x q: one-sided Jacobi to
    32 columns (about 5pq^2 a sweep with vectors, 4pq^2 without, 7 sweeps); QR first from
    2:1 (2pq^2 - 2q^3/3, with vectors as much again to form Q and 2pq^2 for U = Q U_R)
    then the square SVD of R; else Golub-Kahan: 4pq^2 - 4q^3/3 to bidiagonalise, with
    vectors as much again to form U, 4q^3/3 to form V and 6q^2(p + q) for the QR
    iteration's rotations (about q^2 of them, two QR steps a value)."""
    if q <= 32:
        return 7 * (5 if vectors else 4) * p * q**2
    if p >= 2 * q:
        qr = 2 * p * q**2 - 2 * q**3 / 3
        return (3 * qr + 2 * p * q**2 if vectors else qr) + svd_flops(vectors, q, q)
    gk = 4 * p * q**2 - 4 * q**3 / 3
    return 2 * gk + 4 * q**3 / 3 + 6 * q**2 * (p + q) if vectors else gk


def flops(variant, m, n):
    k = min(m, n)
    if variant in ("svd", "svdvals"):
        return svd_flops(variant == "svd", max(m, n), k)
    return {
        "eigh": 9 * n**3, "eigvalsh": 4 * n**3 / 3,
        "qr": 4 * m * n * k - 4 * k**3 / 3, "qr-r": 2 * m * n * k - 2 * k**3 / 3,
    }[variant]


def out_elems(variant, m, n):
    k = min(m, n)
    return {"eigh": n * n + n, "eigvalsh": n, "svd": m * k + k + k * n, "svdvals": k,
            "qr": m * k + k * n, "qr-r": k * n}[variant]


def call(variant, x):
    return {
        "eigh": lambda: batchlin.eigh(x), "eigvalsh": lambda: batchlin.eigvalsh(x),
        "svd": lambda: batchlin.svd(x), "svdvals": lambda: batchlin.svdvals(x),
        "qr": lambda: batchlin.qr(x), "qr-r": lambda: batchlin.qr(x, mode="r"),
    }[variant]


def time_ms(fn, budget_s=2.0):
    fn()
    torch.cuda.synchronize()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    fn()
    end.record()
    end.synchronize()
    one = start.elapsed_time(end)
    reps = max(3, min(50, int(budget_s * 1e3 / max(one, 1e-3))))
    runs = []
    for _ in range(reps):
        start.record()
        fn()
        end.record()
        end.synchronize()
        runs.append(start.elapsed_time(end))
    return statistics.median(runs)


def values_error(variant, x, out):
    """Largest error of the values over up to 4 matrices, relative to the largest value,
    against numpy.linalg in float64."""
    a = x[:4].double().cpu().numpy()
    if variant.startswith("eig"):
        ref = np.linalg.eigvalsh(a)
        got = (out[0] if variant == "eigh" else out)[:4]
    elif variant.startswith("svd"):
        ref = np.linalg.svd(a, compute_uv=False)
        got = (out[1] if variant == "svd" else out)[:4]
    else:
        return float("nan")
    got = got.double().cpu().numpy()
    scale = np.abs(ref).max(axis=-1, keepdims=True)
    return float((np.abs(got - ref) / np.where(scale > 0, scale, 1)).max())


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--ops", default="qr,eigh,svd")
    ap.add_argument("--dtypes", default="float32,float64")
    ap.add_argument("--shapes", default=os.path.join(HERE, "shapes.txt"))
    a = ap.parse_args()
    pairs = {"qr": ("qr", "qr-r"), "eigh": ("eigh", "eigvalsh"), "svd": ("svd", "svdvals")}
    print(f"batchlin {batchlin.__version__}, torch {torch.__version__}, "
          f"{torch.cuda.get_device_name()}\n")
    print("| op | shape | dtype | full ms | values ms | values / full | full / floor "
          "| values / floor | values error |")
    print("|---|---|---|---|---|---|---|---|---|")
    for op, b, m, n in shapes(a.shapes, a.ops.split(",")):
        for dtype in a.dtypes.split(","):
            g = torch.Generator(device="cuda").manual_seed(b * 7 + m)
            x = torch.randn(b, m, n, device="cuda", dtype=getattr(torch, dtype), generator=g)
            if op == "eigh":
                x = (x + x.mT) / 2
            row, floors = [], []
            for v in pairs[op]:
                ms = time_ms(call(v, x))
                isz = x.element_size()
                floor = max(b * (m * n + out_elems(v, m, n)) * isz / BW,
                            b * flops(v, m, n) / FLOPS) * 1e3
                row.append(ms)
                floors.append(floor)
            err = values_error(pairs[op][1], x, call(pairs[op][1], x)())
            print(f"| {op} | {b}x{m}x{n} | {dtype} | {row[0]:.3f} | {row[1]:.3f} | "
                  f"{row[1] / row[0]:.2f} | {row[0] / floors[0]:.0f} | "
                  f"{row[1] / floors[1]:.0f} | {err:.1e} |")


if __name__ == "__main__":
    main()
