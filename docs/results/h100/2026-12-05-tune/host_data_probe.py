import os, sys, time, statistics, subprocess
import numpy as np
import batchlin
try:
    import cupy
    def free(): return cupy.cuda.runtime.memGetInfo()[0] / 2**30
except Exception as e:
    def free(): return -1.0
print("#", batchlin.policy_source(), flush=True)
mode = sys.argv[1]
rng = np.random.default_rng(0)
def shape_run(op, b, m, n, reps=5):
    a = rng.standard_normal((b, m, n)).astype("float32")
    if op == "eigh": a = (a + a.swapaxes(-1, -2)) / 2
    plan = batchlin.backend_for(op, a.shape, "float32", backend=os.environ.get("BK")).plan
    f0 = free()
    call = getattr(batchlin, op)
    if os.environ.get("BK"): call = (lambda f: (lambda x: f(x, backend=os.environ["BK"])))(call)
    try:
        call(a)
        ts = []
        for _ in range(reps):
            t0 = time.perf_counter(); call(a); ts.append((time.perf_counter() - t0) * 1e3)
        r = f"{statistics.median(ts):.3f} ms"
    except Exception as e:
        r = f"ERROR {type(e).__name__}: {e}"
    print(f"{op} {b}x{m}x{n}: {r}; free GiB {f0:.2f} -> {free():.2f}; {plan}", flush=True)
if mode == "seq":
    for line in open("bench/shapes.txt"):
        line = line.split("#")[0].strip()
        if line:
            op, b, m, n = line.split(); shape_run(op, int(b), int(m), int(n))
elif mode == "one":
    shape_run(sys.argv[2], *map(int, sys.argv[3:6]))
elif mode == "phases":
    a = rng.standard_normal((4096, 32, 32)).astype("float32")
    for label, fn in [("qr host", lambda: batchlin.qr(a)), ("qr host cuda", lambda: batchlin.qr(a, backend="cuda")), ("qr_r host cuda", lambda: batchlin.qr(a, mode="r", backend="cuda")),
                      ("touch 33.6MB fresh", lambda: np.ones((8192, 32, 32), np.float32)),
                      ("touch 16.8MB fresh", lambda: np.ones((4096, 32, 32), np.float32)),
                      ("copy 16.8MB", lambda: a.copy()),
                      ("qr cpu", lambda: batchlin.qr(a, backend="cpu-small"))]:
        fn(); ts = []
        for _ in range(10):
            t0 = time.perf_counter(); fn(); ts.append((time.perf_counter() - t0) * 1e3)
        print(f"{label}: {statistics.median(ts):.3f} ms (min {min(ts):.3f})", flush=True)
    import cupy
    d = cupy.asarray(a); batchlin.qr(d); cupy.cuda.Device().synchronize()
    ts = []
    for _ in range(10):
        t0 = time.perf_counter(); batchlin.qr(d); cupy.cuda.Device().synchronize(); ts.append((time.perf_counter() - t0) * 1e3)
    print(f"qr cupy data: {statistics.median(ts):.3f} ms", flush=True)
