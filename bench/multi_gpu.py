#!/usr/bin/env python3
"""One batch over every GPU of the machine: batchlin on one GPU against batchlin on N.

The batch (default 8192 matrices of 64x64, float32, QR) is split along its batch axis
with torch's own machinery: one contiguous slice per visible device (cuda:0 ...
cuda:N-1), each computed by batchlin on its device, on a stream of its own, from a
thread of its own (one per GPU, started once). Times are medians of wall-clock calls
that end when every device has finished (synchronised), after warm-up calls:

- one GPU: the whole batch on cuda:0;
- N GPUs, resident: each slice already on its device (the split done once, ahead);
- N GPUs, with transfers: the batch starts on cuda:0, each slice is copied to its
  device, computed, and its results copied back to cuda:0 (what a caller holding the
  batch on one GPU pays).

The ratio is one-GPU time / N-GPU time (N would be perfect). Every N-GPU result is
checked against the one-GPU result (the same kernels on the same matrices) and a sample
against float64 on the CPU. Exits with status 2, saying why, where torch sees no GPU.

    python3 bench/multi_gpu.py                         # 8192x64x64 float32 QR, every GPU
    python3 bench/multi_gpu.py --op svd --batch 4096 --n 32 --gpus 2
"""

from __future__ import annotations

import argparse
import statistics
import sys
import threading
import time

import numpy as np

import batchlin  # the installed package (pip install . from the checkout)


def parse_args():
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--op", choices=("qr", "eigh", "svd"), default="qr")
    p.add_argument("--batch", type=int, default=8192, help="matrices in the batch")
    p.add_argument("--m", type=int, default=64, help="rows (eigh: the size)")
    p.add_argument("--n", type=int, default=64, help="columns (ignored for eigh)")
    p.add_argument("--dtype", choices=("float32", "float64"), default="float32")
    p.add_argument("--gpus", type=int, default=0, help="GPUs to use (0: every visible)")
    p.add_argument("--repeats", type=int, default=20)
    p.add_argument("--warmup", type=int, default=3)
    a = p.parse_args()
    if a.batch < 1 or a.m < 1 or a.n < 1 or a.repeats < 1 or a.warmup < 0:
        p.error("--batch, --m, --n, --repeats must be >= 1 and --warmup >= 0")
    return a


OPS = {
    "qr": lambda t: tuple(batchlin.qr(t)),
    "eigh": lambda t: tuple(batchlin.eigh(t)),
    "svd": lambda t: tuple(batchlin.svd(t)),
}


class Workers:
    """One thread per GPU, started once; `run(f)` calls f(i) on thread i for every i at
    once and returns when all have returned (raising the first error)."""

    def __init__(self, n):
        self.n = n
        self.jobs = [None] * n
        self.results = [None] * n
        self.go = [threading.Semaphore(0) for _ in range(n)]
        self.done = threading.Semaphore(0)
        self.threads = [threading.Thread(target=self._loop, args=(i,), daemon=True)
                        for i in range(n)]
        for t in self.threads:
            t.start()

    def _loop(self, i):
        while True:
            self.go[i].acquire()
            try:
                self.results[i] = (True, self.jobs[i](i))
            except BaseException as e:  # handed to the caller of run
                self.results[i] = (False, e)
            self.done.release()

    def run(self, f):
        for i in range(self.n):
            self.jobs[i] = f
            self.go[i].release()
        for _ in range(self.n):
            self.done.acquire()
        for ok, v in self.results:
            if not ok:
                raise v
        return [v for _, v in self.results]


def median_ms(call, warmup, repeats):
    for _ in range(warmup):
        call()
    times = []
    for _ in range(repeats):
        t0 = time.perf_counter()
        call()
        times.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(times)


def make_input(torch, args):
    g = torch.Generator().manual_seed(0)
    dt = getattr(torch, args.dtype)
    if args.op == "eigh":
        x = torch.randn(args.batch, args.m, args.m, generator=g, dtype=torch.float64)
        x = x + x.mT
    else:
        x = torch.randn(args.batch, args.m, args.n, generator=g, dtype=torch.float64)
    return x.to(dt)


def check(op, x64, outs, tol):
    """A sample of the results against float64 on the CPU (reconstruction)."""
    idx = np.linspace(0, x64.shape[0] - 1, num=min(8, x64.shape[0])).astype(int)
    a = x64[idx]
    o = [t[idx].double().cpu().numpy() for t in outs]
    if op == "qr":
        rec = o[0] @ o[1]
    elif op == "eigh":
        rec = (o[1] * o[0][:, None, :]) @ np.swapaxes(o[1], -1, -2)
    else:
        rec = (o[0] * o[1][:, None, :]) @ o[2]
    err = np.linalg.norm(rec - a) / np.linalg.norm(a)
    if not err < tol:
        raise SystemExit(f"multi_gpu: {op} results off: relative error {err:.2e} >= {tol}")
    return err


def main():
    args = parse_args()
    try:
        import torch
    except ImportError:
        print("multi_gpu: needs torch (pip install torch)", file=sys.stderr)
        return 2
    visible = torch.cuda.device_count() if torch.cuda.is_available() else 0
    if visible == 0:
        print("multi_gpu: torch sees no CUDA GPU; nothing to measure", file=sys.stderr)
        return 2
    reason = batchlin._front.gpu_absent_reason()
    if reason is not None:
        print(f"multi_gpu: batchlin's GPU backend is not available: {reason}",
              file=sys.stderr)
        return 2
    n = visible if args.gpus == 0 else min(args.gpus, visible)
    f = OPS[args.op]
    x = make_input(torch, args)
    x64 = x.double().numpy()
    tol = 1e-4 if args.dtype == "float32" else 1e-11
    devs = [torch.device("cuda", i) for i in range(n)]
    streams = [torch.cuda.Stream(device=d) for d in devs]
    # the split: contiguous slices of the batch axis, as even as torch makes them
    sizes = [len(c) for c in torch.tensor_split(torch.arange(args.batch), n)]

    # one GPU: the whole batch on cuda:0, on its stream
    whole = x.to(devs[0])

    def one_gpu():
        with torch.cuda.device(0), torch.cuda.stream(streams[0]):
            out = f(whole)
        streams[0].synchronize()
        return out

    t1 = median_ms(one_gpu, args.warmup, args.repeats)
    ref = [t.cpu() for t in one_gpu()]
    check(args.op, x64, ref, tol)

    workers = Workers(n)
    slices = [s.to(d) for s, d in zip(torch.split(x, sizes), devs)]

    def resident(i):
        with torch.cuda.device(i), torch.cuda.stream(streams[i]):
            out = f(slices[i])
        streams[i].synchronize()
        return out

    def with_transfers(i):
        # slice of the batch on cuda:0 -> device i -> compute -> results back to cuda:0
        with torch.cuda.device(i), torch.cuda.stream(streams[i]):
            part = torch.split(whole, sizes)[i].to(devs[i], non_blocking=True)
            out = [t.to(devs[0], non_blocking=True) for t in f(part)]
        streams[i].synchronize()
        return out

    tn = median_ms(lambda: workers.run(resident), args.warmup, args.repeats)
    tx = median_ms(lambda: workers.run(with_transfers), args.warmup, args.repeats)

    for name, job in (("resident", resident), ("with transfers", with_transfers)):
        parts = workers.run(job)
        got = [torch.cat([p[k].cpu() for p in parts]) for k in range(len(ref))]
        for g, r in zip(got, ref):
            diff = (g.double() - r.double()).abs().max().item()
            scale = r.double().abs().max().item() or 1.0
            if not diff <= 100 * tol * scale:
                raise SystemExit(f"multi_gpu: {n}-GPU {name} results differ from one GPU's "
                                 f"by {diff:.2e}")
        check(args.op, x64, got, tol)

    shape = (f"{args.batch}x{args.m}x{args.m}" if args.op == "eigh"
             else f"{args.batch}x{args.m}x{args.n}")
    names = ", ".join(torch.cuda.get_device_name(i) for i in range(n))
    print(f"batchlin {batchlin.__version__}: {args.op} {shape} {args.dtype}, "
          f"{n} GPU(s): {names}")
    print(f"split: {sizes} matrices per GPU; median of {args.repeats} calls after "
          f"{args.warmup} warm-up calls")
    print(f"{'':28} {'ms':>9} {'ratio':>7}")
    print(f"{'1 GPU':28} {t1:9.3f} {1.0:7.2f}")
    print(f"{f'{n} GPUs, resident':28} {tn:9.3f} {t1 / tn:7.2f}")
    print(f"{f'{n} GPUs, with transfers':28} {tx:9.3f} {t1 / tx:7.2f}")
    print("results: every N-GPU result equals the 1-GPU one; a sample checked against "
          "float64")
    return 0


if __name__ == "__main__":
    sys.exit(main())
