"""Per-call overhead of batchlin from Python on the GPU: wall time a call over many calls
against the kernel's own time, for torch CUDA tensors (batchlin.qr and
torch.ops.batchlin.qr), CuPy arrays and JAX arrays (eager).

    python bench/overhead.py                    # every framework installed, QR, float32
    python bench/overhead.py --calls 5000 --shapes 1x4x4,4x64x64 --frameworks torch
    python bench/overhead.py --device cpu       # the same on host data (CPU path)

For each shape:

- kernel: the GPU time of one call alone, from a CUDA graph holding one batchlin.qr call
  (torch) replayed `calls` times back to back between two CUDA events: the kernels'
  own time with no Python and no launch overhead (a graph replay queues the work
  without the host waiting).
- wall: `calls` calls queued in a loop, then one synchronisation; wall time / calls.
  When the host is faster than the GPU, the queue fills and wall ~ kernel; otherwise
  wall ~ the host's time a call, and wall - kernel is the overhead a caller sees.
- sync: the same with a synchronisation after every call (latency: overhead + launch
  + the kernel + the wait).

A case whose `calls` would take over a second (a slow peer) is timed over fewer calls.

`--shared-max 0` allocates every output apart (as the custom ops do) instead of small
outputs as views into one allocation: the two compared on the same machine.

The overhead target is wall - kernel <= 10 us a call. Prints a Markdown table; the
figures belong under docs/results/<device>/<date>-python-overhead/ with this command.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import batchlin


def parse_shapes(s: str):
    out = []
    for part in s.split(","):
        b, m, n = (int(x) for x in part.lower().split("x"))
        out.append((b, m, n))
    return out


def calls_within(fn, calls: int, sync, budget_s: float) -> int:
    """`calls`, or fewer where that many would take over `budget_s` (a slow peer)."""
    t0 = time.perf_counter()
    fn()
    sync()
    one = time.perf_counter() - t0
    return max(20, min(calls, int(budget_s / max(one, 1e-9))))


def wall_us(fn, calls: int, sync, repeats: int = 5, budget_s: float = 1.0) -> float:
    """Median over `repeats` of (time for `calls` queued calls + one sync) / calls."""
    for _ in range(min(calls, 50)):
        fn()
    sync()
    calls = calls_within(fn, calls, sync, budget_s)
    runs = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        sync()
        runs.append((time.perf_counter() - t0) / calls * 1e6)
    return statistics.median(runs)


def sync_us(fn, calls: int, sync, budget_s: float = 1.0) -> float:
    """Median time of one call followed by a synchronisation."""
    times = []
    for _ in range(calls_within(fn, min(calls, 500), sync, budget_s)):
        t0 = time.perf_counter()
        fn()
        sync()
        times.append((time.perf_counter() - t0) * 1e6)
    return statistics.median(times)


def torch_kernel_us(x, calls: int) -> float | None:
    """GPU time of one batchlin.qr(x): a CUDA graph of one call replayed back to back."""
    import torch

    s = torch.cuda.Stream()
    s.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s):
        for _ in range(3):
            batchlin.qr(x)  # warm: modules loaded before capture
    torch.cuda.current_stream().wait_stream(s)
    g = torch.cuda.CUDAGraph()
    try:
        with torch.cuda.graph(g):
            batchlin.qr(x)
    except Exception as e:  # noqa: BLE001 - report, do not fail the run
        print(f"  (graph capture failed: {e}; no kernel time)")
        return None
    for _ in range(10):
        g.replay()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    runs = []
    for _ in range(5):
        start.record()
        for _ in range(calls):
            g.replay()
        end.record()
        end.synchronize()
        runs.append(start.elapsed_time(end) * 1e3 / calls)
    return statistics.median(runs)


def rows_torch(shapes, calls, device):
    import torch

    import batchlin.torch  # noqa: F401 - registers torch.ops.batchlin.* before their use

    out = []
    dev = torch.device(device)
    sync = torch.cuda.synchronize if dev.type == "cuda" else (lambda: None)
    for b, m, n in shapes:
        x = torch.randn(b, m, n, device=dev)
        kernel = torch_kernel_us(x, calls) if dev.type == "cuda" else None
        op = torch.ops.batchlin.qr
        cases = [
            ("torch batchlin.qr", lambda: batchlin.qr(x)),
            ("torch torch.ops.batchlin.qr", lambda: op(x, "reduced", "auto")),
            ("torch torch.linalg.qr (peer)", lambda: torch.linalg.qr(x)),
        ]
        for name, fn in cases:
            out.append((name, (b, m, n), kernel, wall_us(fn, calls, sync),
                        sync_us(fn, calls, sync)))
    return out, {(b, m, n): k for (_, (b, m, n), k, _, _) in out}


def rows_cupy(shapes, calls, kernels):
    import cupy as cp

    out = []
    sync = cp.cuda.get_current_stream().synchronize
    for b, m, n in shapes:
        x = cp.random.standard_normal((b, m, n), dtype=cp.float32)
        fn = lambda: batchlin.qr(x)  # noqa: E731
        out.append(("CuPy batchlin.qr", (b, m, n), kernels.get((b, m, n)),
                    wall_us(fn, calls, sync), sync_us(fn, calls, sync)))
    return out


def rows_jax(shapes, calls, kernels, device):
    import jax
    import jax.numpy as jnp

    out = []
    devs = [d for d in jax.devices() if (d.platform == "gpu") == (device != "cpu")]
    if not devs:
        print(f"  (JAX has no {device} device: {jax.devices()})")
        return out
    for b, m, n in shapes:
        x = jax.device_put(jnp.asarray(np.random.standard_normal((b, m, n)),
                                       dtype=jnp.float32), devs[0])
        last = [None]

        def fn():
            last[0] = batchlin.qr(x)

        def sync():
            if last[0] is not None:
                jax.block_until_ready(last[0])

        jq = jax.jit(jnp.linalg.qr)
        last_peer = [None]

        def peer():
            last_peer[0] = jq(x)

        def sync_peer():
            if last_peer[0] is not None:
                jax.block_until_ready(last_peer[0])

        out.append(("JAX batchlin.qr (eager)", (b, m, n), kernels.get((b, m, n)),
                    wall_us(fn, calls, sync), sync_us(fn, calls, sync)))
        out.append(("JAX jit(jnp.linalg.qr) (peer)", (b, m, n), None,
                    wall_us(peer, calls, sync_peer), sync_us(peer, calls, sync_peer)))
    return out


def profile(shape, calls, device):
    import cProfile
    import pstats

    import torch

    x = torch.randn(*shape, device=device)
    for _ in range(100):
        batchlin.qr(x)
    pr = cProfile.Profile()
    pr.enable()
    for _ in range(calls):
        batchlin.qr(x)
    pr.disable()
    if device != "cpu":
        torch.cuda.synchronize()
    print(f"cProfile of {calls} calls of batchlin.qr on a {shape} torch tensor ({device}); "
          "us are per call")
    st = pstats.Stats(pr)
    rows = sorted(st.stats.items(), key=lambda kv: -kv[1][2])[:25]
    print("| function | calls a call | own us | cumulative us |")
    print("|---|---|---|---|")
    for (f, line, name), (cc, nc, tt, ct, _) in rows:
        print(f"| {f.rsplit('/', 1)[-1]}:{line} {name} | {nc / calls:.0f} | "
              f"{tt / calls * 1e6:.2f} | {ct / calls * 1e6:.2f} |")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--calls", type=int, default=2000)
    ap.add_argument("--shapes", default="1x4x4,64x16x16,4x64x64,4096x32x32")
    ap.add_argument("--frameworks", default="torch,cupy,jax")
    ap.add_argument("--device", default="cuda", help="cuda (default) or cpu")
    ap.add_argument("--shared-max", type=int, default=None,
                    help="bytes up to which a call's outputs share one allocation "
                         "(batchlin._front.SHARED_OUTPUTS_MAX; 0: every output apart), to "
                         "compare the two")
    ap.add_argument("--profile", action="store_true",
                    help="instead: cProfile of torch batchlin.qr on the first shape, the "
                         "functions by their own time (where the overhead goes)")
    a = ap.parse_args()
    if a.calls < 1:
        ap.error("--calls must be at least 1")
    shapes = parse_shapes(a.shapes)
    if a.shared_max is not None:
        batchlin._front.SHARED_OUTPUTS_MAX = a.shared_max
    if a.profile:
        return profile(shapes[0], a.calls, a.device)
    want = set(a.frameworks.split(","))
    rows, kernels = [], {}
    print(f"batchlin {batchlin.__version__}; devices: "
          + "; ".join(f"{d['kind']} {d['name']}" for d in batchlin.devices()))
    if "torch" in want:
        try:
            r, kernels = rows_torch(shapes, a.calls, a.device)
            rows += r
        except ImportError as e:
            print(f"  (torch skipped: {e})")
    if "cupy" in want and a.device != "cpu":
        try:
            rows += rows_cupy(shapes, a.calls, kernels)
        except ImportError as e:
            print(f"  (CuPy skipped: {e})")
    if "jax" in want:
        try:
            rows += rows_jax(shapes, a.calls, kernels, a.device)
        except ImportError as e:
            print(f"  (JAX skipped: {e})")
    print(f"\nQR float32, {a.calls} calls a run (median of 5 runs); us a call; "
          "overhead = wall - kernel (target <= 10)\n")
    print("| framework / call | batch x m x n | kernel | wall | overhead | sync |")
    print("|---|---|---|---|---|---|")
    for name, (b, m, n), k, w, s in rows:
        ks = "-" if k is None else f"{k:.1f}"
        ov = "-" if k is None else f"{max(w - k, 0.0):.1f}"
        print(f"| {name} | {b}x{m}x{n} | {ks} | {w:.1f} | {ov} | {s:.1f} |")


if __name__ == "__main__":
    main()
