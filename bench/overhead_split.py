"""Where a GPU call's host time goes from Python: each layer of `batchlin.qr(cuda_tensor)`
timed alone, as host time a call while the launch queue is not full (the GPU keeps up,
so the figure is what the host spends), and the GPU work one call queues (torch.profiler's
CUDA activity: kernels, memsets, copies a call).

    python bench/overhead_split.py                     # 1x4x4 and 64x16x16, float32
    python bench/overhead_split.py --shapes 1x4x4 --calls 400

Layers, us a call (median of 7 runs of `calls` calls, then one synchronisation outside
the timed part):
- empty: torch.empty of the shared output buffer alone;
- native: the native call alone (`_native.DeviceCall`) on a buffer made once: argument
  parsing, the core's checks, plan and launch memos, the driver's launch;
- _cuda: the spec lookup, the outputs allocated and the native call (`batchlin.torch._cuda`,
  what `batchlin.qr` runs below its front door);
- batchlin.qr: the whole public call;
- stream: torch's current-stream lookup alone.
Complements bench/overhead.py (wall against kernel time over many calls).
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

import batchlin
from batchlin import _front
from batchlin import torch as bt


def host_us(fn, calls: int, runs: int = 7) -> float:
    """Median over `runs` of the host time a call for `calls` calls; the GPU drained
    before each run so the launch queue never fills."""
    out = []
    for _ in range(runs):
        torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        out.append((time.perf_counter() - t0) / calls * 1e6)
        torch.cuda.synchronize()
    return statistics.median(out)


def gpu_activity(fn, calls: int = 20):
    """The CUDA activities (name, count a call, mean us) torch.profiler records over
    `calls` calls."""
    from torch.profiler import ProfilerActivity, profile

    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    rows = []
    for ev in prof.key_averages():
        dev_us = getattr(ev, "device_time_total", None)
        if dev_us is None:
            dev_us = getattr(ev, "cuda_time_total", 0)
        cpu_us = ev.cpu_time_total
        rows.append((ev.key, ev.count / calls, dev_us / max(ev.count, 1), cpu_us / max(ev.count, 1)))
    rows.sort(key=lambda r: -r[1])
    return rows


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--shapes", default="1x4x4,64x16x16")
    ap.add_argument("--calls", type=int, default=300)
    args = ap.parse_args()
    print(f"batchlin {batchlin.__version__}; torch {torch.__version__}; {torch.cuda.get_device_name()}")
    print("\nhost us a call (median of 7 runs of", args.calls, "calls, queue not full)\n")
    print("| shape | empty | stream | native | _cuda | batchlin.qr | torch.ops qr |")
    print("|---|---|---|---|---|---|---|")
    profiles = []
    for s in args.shapes.split(","):
        b, m, n = (int(x) for x in s.split("x"))
        a = torch.randn(b, m, n, device="cuda")
        batchlin.qr(a)
        torch.cuda.synchronize()
        key = ("qr", a.dtype, a.shape, a.stride(), a.get_device(), "L", None, False, True)
        spec = bt._specs.get(key) or next(
            (v for k, v in bt._specs.items() if k[2] == a.shape and k[1] == a.dtype), None)
        if spec is None:
            print(f"| {s} | no spec found among {list(bt._specs)[:4]} |")
            continue
        dev = a.device
        t_empty = host_us(lambda: torch.empty(max(spec.elems, 1), dtype=a.dtype, device=dev), args.calls)
        t_stream = host_us(lambda: bt._current_stream(0), args.calls)
        buf = torch.empty(max(spec.elems, 1), dtype=a.dtype, device=dev)
        out = buf.data_ptr()
        if not spec.elems:
            outs = [torch.empty(*size, dtype=a.dtype, device=dev) for size in spec.sizes]
            out = tuple(t.data_ptr() for t in outs)
        st = bt._current_stream(0)
        ap_ = a.data_ptr()
        t_native = host_us(lambda: spec.call(ap_, out, None, 0, st), args.calls)
        t_run = host_us(lambda: bt._cuda("qr", a, "L", "auto", False), args.calls)
        t_qr = host_us(lambda: batchlin.qr(a), args.calls)
        t_op = host_us(lambda: torch.ops.batchlin.qr(a), args.calls)
        print(f"| {s} | {t_empty:.1f} | {t_stream:.1f} | {t_native:.1f} | {t_run:.1f} | {t_qr:.1f} | {t_op:.1f} |")
        profiles.append((s, gpu_activity(lambda: batchlin.qr(a))))
    try:
        import cupy as cp
    except ImportError as e:
        cp = None
        print(f"\n(CuPy skipped: {e})")
    if cp is not None:
        print("\nCuPy, host us a call\n")
        print("| shape | a.device | with device | stream | cp.empty | ndarray view | batchlin.qr |")
        print("|---|---|---|---|---|---|---|")
        for s in args.shapes.split(","):
            b, m, n = (int(x) for x in s.split("x"))
            ca = cp.random.standard_normal((b, m, n), dtype=cp.float32)
            batchlin.qr(ca)
            dev = ca.device
            buf = cp.empty(2 * b * m * n, dtype=cp.float32)

            def enter():
                with dev:
                    pass

            t = [host_us(f, args.calls) for f in (
                lambda: ca.device, enter, lambda: cp.cuda.get_current_stream().ptr,
                lambda: cp.empty(2 * b * m * n, dtype=cp.float32),
                lambda: cp.ndarray((b, m, n), buf.dtype, buf.data + 256),
                lambda: batchlin.qr(ca))]
            print(f"| {s} | " + " | ".join(f"{x:.1f}" for x in t) + " |")
    for s, rows in profiles:
        print(f"\ntorch.profiler, batchlin.qr {s}: activity, count a call, device us, cpu us each")
        for name, cnt, dev_us, cpu_us in rows[:25]:
            print(f"  {name[:70]:70s} {cnt:6.2f} {dev_us:8.2f} {cpu_us:8.2f}")


if __name__ == "__main__":
    main()
