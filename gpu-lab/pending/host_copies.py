#!/usr/bin/env python3
"""Where a NumPy call on the GPU spends its time beyond the copy model (docs/proposals/
measured-routing.md): the same call forced to the GPU and to the CPU, in one process,
beside NumPy's own cost of filling fresh output arrays of the outputs' sizes, and the
kernel's transparent huge page setting. Run twice: as is, and with glibc told to keep
freed memory (MALLOC_MMAP_THRESHOLD_ and MALLOC_TRIM_THRESHOLD_ large), so that output
arrays reuse touched pages: the difference is the first touch of fresh pages."""
import os, statistics, time
import numpy as np
import batchlin
try:
    import cupy as cp
except ImportError:
    cp = None

def med(f, reps=9):
    f()
    ts = []
    for _ in range(reps):
        t0 = time.perf_counter(); f(); ts.append((time.perf_counter() - t0) * 1e3)
    return statistics.median(ts), min(ts)

label = os.environ.get("LABEL", "default")
for path in ("enabled", "defrag"):
    try:
        print(f"# thp {path}: {open('/sys/kernel/mm/transparent_hugepage/' + path).read().strip()}")
    except OSError as e:
        print(f"# thp {path}: {e}")
rng = np.random.default_rng(0)
print("label,what,shape,median_ms,min_ms")
for mb in (4, 16, 32, 64):
    n = mb << 18  # float32 elements
    src = np.ones(n, np.float32)
    def fresh():
        d = np.empty(n, np.float32); d[:] = src
    reuse = np.empty(n, np.float32)
    def reused():
        reuse[:] = src
    for what, f in (("numpy fresh fill", fresh), ("numpy reused fill", reused)):
        m, lo = med(f)
        print(f"{label},{what},{mb} MiB,{m:.3f},{lo:.3f}", flush=True)
for op, b, m_, n_ in (("qr", 4096, 32, 32), ("qr", 4096, 64, 64), ("eigh", 4096, 32, 32),
                      ("svd", 1024, 64, 64), ("qr", 256, 256, 256)):
    a = rng.standard_normal((b, m_, n_)).astype(np.float32)
    if op == "eigh":
        a = (a + a.swapaxes(-1, -2)) / 2
    call = getattr(batchlin, op)
    for be in ("cuda", "cpu-small", None):
        m, lo = med(lambda: call(a, backend=be) if be else call(a))
        print(f"{label},{op} {be or 'auto'},{b}x{m_}x{n_},{m:.3f},{lo:.3f}", flush=True)
    if cp is not None:  # the same by hand: CuPy's copies (pageable), batchlin on the device
        def by_hand():
            outs = call(cp.asarray(a))
            return [cp.asnumpy(x) for x in (outs if isinstance(outs, tuple) else (outs,))]
        m, lo = med(by_hand)
        print(f"{label},{op} cupy by hand,{b}x{m_}x{n_},{m:.3f},{lo:.3f}", flush=True)
