#!/usr/bin/env python3
"""batchlin against numpy.linalg and torch.linalg (and, where present, CuPy and JAX) side
by side, in one process, on the shapes of record (bench/shapes.txt).

Every library runs the same input in turn (interleaved, so that a noisy neighbour
hurts all alike), after a warm-up; the figure is the median of the repeats. Inputs are
rotated among a few copies so that the cache does not flatter small problems. GPU
columns (torch CUDA, CuPy, JAX on a GPU) are timed on the device with synchronisation
and appear only where such a device is present; batchlin's own GPU column appears when
its GPU backend exists.

It also measures the Python overhead of a call: one 3x3 matrix per input kind, and
4096x32x32 QR (compare with `cargo run --release --bin batchlin -- bench --op qr`).

    python3 bench/python_bench.py                      # CPU: every shape, float32
    python3 bench/python_bench.py --shrink 16 --ops qr --out docs/results/cpu-2core/python-DATE.md

Writes a markdown report (to --out, else stdout).
"""

from __future__ import annotations

import argparse
import datetime as _dt
import os
import platform
import statistics
import sys
import time

import numpy as np

import batchlin  # the installed package (pip install . from the checkout)

HERE = os.path.dirname(os.path.abspath(__file__))


def read_shapes(path):
    out = []
    for line in open(path):
        line = line.split("#")[0].strip()
        if line:
            op, b, m, n = line.split()
            out.append((op, int(b), int(m), int(n)))
    return out


def make_inputs(op, batch, m, n, dtype, copies, seed=0):
    rng = np.random.default_rng(seed)
    xs = []
    for _ in range(copies):
        a = rng.standard_normal((batch, m, n)).astype(dtype)
        if op == "eigh":
            a = (a + a.swapaxes(-1, -2)) / 2
        xs.append(a)
    return xs


def cpu_runners(op, have_torch):
    """name -> (convert input, call)."""
    r = {}
    if op == "qr":
        r["batchlin"] = (lambda x: x, lambda a: batchlin.qr(a))
        r["numpy"] = (lambda x: x, lambda a: np.linalg.qr(a))
    elif op == "eigh":
        r["batchlin"] = (lambda x: x, lambda a: batchlin.eigh(a))
        r["numpy"] = (lambda x: x, lambda a: np.linalg.eigh(a))
    else:
        r["batchlin"] = (lambda x: x, lambda a: batchlin.svd(a))
        r["numpy"] = (lambda x: x, lambda a: np.linalg.svd(a, full_matrices=False))
    if have_torch:
        import torch

        f = {"qr": torch.linalg.qr, "eigh": torch.linalg.eigh,
             "svd": lambda a: torch.linalg.svd(a, full_matrices=False)}[op]
        r["torch"] = (torch.from_numpy, f)
    return r


def gpu_runners(op):
    """Device columns, each (convert, call, synchronise), where a GPU is present."""
    r = {}
    try:
        import torch

        if torch.cuda.is_available():
            f = {"qr": torch.linalg.qr, "eigh": torch.linalg.eigh,
                 "svd": lambda a: torch.linalg.svd(a, full_matrices=False)}[op]
            r["torch-cuda"] = (lambda x: torch.from_numpy(x).cuda(), f, torch.cuda.synchronize)
            if any(d["kind"] == "cuda" for d in batchlin.devices()):
                g = {"qr": batchlin.qr, "eigh": batchlin.eigh, "svd": batchlin.svd}[op]
                r["batchlin-cuda"] = (lambda x: torch.from_numpy(x).cuda(), g,
                                      torch.cuda.synchronize)
    except ImportError:
        pass
    try:
        import cupy

        if cupy.cuda.runtime.getDeviceCount() > 0:
            f = {"qr": cupy.linalg.qr, "eigh": cupy.linalg.eigh,
                 "svd": lambda a: cupy.linalg.svd(a, full_matrices=False)}[op]
            r["cupy"] = (cupy.asarray, f, cupy.cuda.Device().synchronize)
    except Exception:
        pass
    try:
        import jax

        if any(d.platform == "gpu" for d in jax.devices()):
            import jax.numpy as jnp

            f = {"qr": jnp.linalg.qr, "eigh": jnp.linalg.eigh,
                 "svd": lambda a: jnp.linalg.svd(a, full_matrices=False)}[op]
            r["jax-gpu"] = (lambda x: jax.device_put(x, jax.devices("gpu")[0]),
                            lambda a: jax.block_until_ready(f(a)), lambda: None)
            if op == "qr" and any(d["kind"] == "cuda" for d in batchlin.devices()):
                # batchlin on JAX's GPU arrays: an XLA FFI custom call on XLA's stream
                r["batchlin-jax-gpu"] = (lambda x: jax.device_put(x, jax.devices("gpu")[0]),
                                         lambda a: jax.block_until_ready(batchlin.qr(a)),
                                         lambda: None)
    except Exception:
        pass
    return r


def time_interleaved(runners, inputs, repeats, budget_s):
    """Median seconds per call for each runner, interleaved call by call."""
    conv = {name: [c(x) for x in inputs] for name, (c, *_rest) in runners.items()}
    times = {name: [] for name in runners}
    sync = {name: (rest[1] if len(rest) > 1 else (lambda: None))
            for name, (_c, *rest) in runners.items()}
    for name, (_c, f, *_r) in runners.items():  # warm-up
        f(conv[name][0])
        sync[name]()
    t_start = time.perf_counter()
    order = list(runners.items())
    for i in range(repeats):
        # Alternate the order, so that no library always runs first after the pause.
        for name, (_c, f, *_r) in (order if i % 2 == 0 else order[::-1]):
            a = conv[name][i % len(inputs)]
            sync[name]()
            # Let the previous library's worker threads (rayon, OpenBLAS, OpenMP) stop
            # spinning: on a small machine they otherwise steal the next one's cores.
            time.sleep(0.02)
            t0 = time.perf_counter()
            f(a)
            sync[name]()
            times[name].append(time.perf_counter() - t0)
        if time.perf_counter() - t_start > budget_s and i >= 2:
            break
    return {name: statistics.median(v) for name, v in times.items()}


def per_call_us(f, n_min=2000, seconds=0.5):
    for _ in range(200):
        f()
    n, t0 = 0, time.perf_counter()
    best = float("inf")
    while n < n_min or time.perf_counter() - t0 < seconds:
        t1 = time.perf_counter()
        for _ in range(100):
            f()
        best = min(best, (time.perf_counter() - t1) / 100)
        n += 100
    return best * 1e6


def overheads(have_torch, have_jax):
    rows = []
    x = np.random.default_rng(1).standard_normal((3, 3))
    rows.append(("numpy 3x3 float64", "batchlin.qr", per_call_us(lambda: batchlin.qr(x))))
    rows.append(("numpy 3x3 float64", "numpy.linalg.qr", per_call_us(lambda: np.linalg.qr(x))))
    rows.append(("numpy 3x3 float64", "batchlin.eigh", per_call_us(lambda: batchlin.eigh(x))))
    rows.append(("numpy 3x3 float64", "numpy.linalg.eigh", per_call_us(lambda: np.linalg.eigh(x))))
    rows.append(("numpy 3x3 float64", "batchlin.svd", per_call_us(lambda: batchlin.svd(x))))
    rows.append(("numpy 3x3 float64", "numpy.linalg.svd", per_call_us(lambda: np.linalg.svd(x))))
    xl = x.tolist()
    rows.append(("list 3x3", "batchlin.qr", per_call_us(lambda: batchlin.qr(xl))))
    if have_torch:
        import torch

        t = torch.from_numpy(x.astype(np.float32))
        rows.append(("torch 3x3 float32", "batchlin.qr", per_call_us(lambda: batchlin.qr(t))))
        rows.append(("torch 3x3 float32", "torch.linalg.qr", per_call_us(lambda: torch.linalg.qr(t))))
        tg = t.clone().requires_grad_(True)
        rows.append(("torch 3x3 float32, requires_grad", "batchlin.qr (custom op)",
                     per_call_us(lambda: batchlin.qr(tg), n_min=500)))
    if have_jax:
        import jax.numpy as jnp

        import jax

        # Both sides wait for the result (JAX dispatches asynchronously).
        j = jnp.asarray(x.astype(np.float32))
        bq = jax.jit(lambda a: batchlin.qr(a))
        jq = jax.jit(lambda a: jnp.linalg.qr(a))
        rows.append(("JAX 3x3 float32", "batchlin.qr (XLA FFI)",
                     per_call_us(lambda: batchlin.qr(j).R.block_until_ready(), n_min=500)))
        rows.append(("JAX 3x3 float32", "jnp.linalg.qr",
                     per_call_us(lambda: jnp.linalg.qr(j)[1].block_until_ready(), n_min=500)))
        rows.append(("JAX 3x3 float32, jitted", "batchlin.qr (XLA FFI)",
                     per_call_us(lambda: bq(j)[1].block_until_ready(), n_min=500)))
        rows.append(("JAX 3x3 float32, jitted", "jnp.linalg.qr",
                     per_call_us(lambda: jq(j)[1].block_until_ready(), n_min=500)))
    return rows


def big_qr(repeats):
    """4096x32x32 float32 QR: the Python call against the native call alone."""
    xs = make_inputs("qr", 4096, 32, 32, np.float32, 2)
    native = batchlin._native.qr
    runners = {
        "batchlin.qr (Python)": (lambda x: x, lambda a: batchlin.qr(a)),
        "_native.qr (no Python front)": (lambda x: x, lambda a: native(a, "reduced", None)),
    }
    return time_interleaved(runners, xs, repeats, 30.0)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--shapes", default=os.path.join(HERE, "shapes.txt"))
    p.add_argument("--ops", default="qr,eigh,svd")
    p.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    p.add_argument("--shrink", type=int, default=1, help="divide every batch by K (at least 1)")
    p.add_argument("--repeats", type=int, default=7)
    p.add_argument("--budget", type=float, default=20.0, help="seconds per shape, at most")
    p.add_argument("--max-gb", type=float, default=2.0, help="skip inputs larger than this")
    p.add_argument("--no-torch", action="store_true")
    p.add_argument("--no-overhead", action="store_true")
    p.add_argument("--out")
    args = p.parse_args()

    try:
        import torch  # noqa: F401

        have_torch = not args.no_torch
    except ImportError:
        have_torch = False
    try:
        import jax  # noqa: F401

        have_jax = True
    except ImportError:
        have_jax = False

    dtype = np.dtype(args.dtype)
    ops = [o for o in args.ops.split(",") if o]  # --ops "" measures the overhead alone
    lines = []
    cmd = "python3 " + " ".join([os.path.relpath(__file__, os.getcwd())] + sys.argv[1:])
    cpu = batchlin.devices()[0]
    versions = [f"batchlin {batchlin.__version__}", f"numpy {np.__version__}"]
    if have_torch:
        import torch

        versions.append(f"torch {torch.__version__} ({torch.get_num_threads()} threads)")
    if have_jax:
        import jax

        versions.append(f"jax {jax.__version__}")
    lines += [
        f"# batchlin from Python against numpy.linalg and torch.linalg ({_dt.date.today()})",
        "",
        f"Command: `{cmd}`",
        "",
        f"Machine: {cpu['name']}, {cpu['detail']}; Python {platform.python_version()}; "
        + ", ".join(versions) + f". Routing: {batchlin.policy_source()}. "
        + "Thread settings: " + ", ".join(
            f"{k}={os.environ.get(k, 'unset')}" for k in
            ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS", "RAYON_NUM_THREADS",
             "BATCHLIN_BACKEND"))
        + ".",
        "",
        f"Median ms a call over up to {args.repeats} interleaved repeats after a warm-up, "
        f"{args.dtype}, every batch divided by {args.shrink}. "
        "batchlin: `qr` reduced, `eigh` with vectors, `svd` thin; the others the same.",
        "",
    ]
    header = None
    for op, b, m, n in read_shapes(args.shapes):
        if op not in ops:
            continue
        b = max(1, b // args.shrink)
        nbytes = b * m * n * dtype.itemsize
        if nbytes * 4 > args.max_gb * 2**30:
            continue
        copies = max(1, min(3, int(256 * 2**20 // max(nbytes, 1))))
        xs = make_inputs(op, b, m, n, dtype, copies)
        runners = cpu_runners(op, have_torch)
        runners.update(gpu_runners(op))
        t = time_interleaved(runners, xs, args.repeats, args.budget)
        if header is None:
            names = list(t)
            header = names
            others = [x for x in names if x != "batchlin"]
            lines.append("| op | batch | m | n | " + " | ".join(f"{x} ms" for x in names)
                         + " | " + " | ".join(f"{x} / batchlin" for x in others) + " |")
            lines.append("|---" * (4 + len(names) + len(others)) + "|")
        row = [op, str(b), str(m), str(n)] + [f"{t[x] * 1e3:.3f}" for x in header]
        row += [f"{t[x] / t['batchlin']:.2f}" for x in header if x != "batchlin"]
        lines.append("| " + " | ".join(row) + " |")
        print(lines[-1], file=sys.stderr, flush=True)
    if header is not None:
        lines.append("")
        lines.append("Ratios above 1 mean batchlin is faster.")

    if not args.no_overhead:
        lines += ["", "## Python overhead", "",
                  "Best of batches of 100 calls, microseconds a call.", "",
                  "| input | call | us |", "|---|---|---|"]
        for inp, call, us in overheads(have_torch, have_jax):
            lines.append(f"| {inp} | {call} | {us:.1f} |")
        t = big_qr(args.repeats * 3)
        lines += ["", "4096x32x32 float32 QR, median ms (interleaved):", "",
                  "| call | ms |", "|---|---|"]
        for k, v in t.items():
            lines.append(f"| {k} | {v * 1e3:.3f} |")
        lines.append("")
    text = "\n".join(lines) + "\n"
    if args.out:
        os.makedirs(os.path.dirname(args.out) or ".", exist_ok=True)
        with open(args.out, "w") as f:
            f.write(text)
    print(text)


if __name__ == "__main__":
    main()
