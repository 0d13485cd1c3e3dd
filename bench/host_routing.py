#!/usr/bin/env python3
"""NumPy input at the shapes of record, routed as the installed batchlin routes it: each
shape's median time and the plan it got, one CSV line a shape. Run it once with the
tables that would send host data to the GPU and once without (another process: the
tables are read once a process) to compare the routings on the same machine.

    BATCHLIN_TABLE_DIR=DIR python3 bench/host_routing.py --label tables
    BATCHLIN_TABLE=DIR/cpu-....toml python3 bench/host_routing.py --label cpu-table
"""

from __future__ import annotations

import argparse
import os
import statistics
import time

import numpy as np

import batchlin

HERE = os.path.dirname(os.path.abspath(__file__))


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--label", required=True)
    p.add_argument("--shapes", default=os.path.join(HERE, "shapes.txt"))
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--dtype", default="float32", choices=["float32", "float64"])
    args = p.parse_args()
    print(f"# {args.label}: {batchlin.policy_source()}")
    print("label,op,batch,m,n,dtype,median_ms,min_ms,plan")
    rng = np.random.default_rng(0)
    for line in open(args.shapes):
        line = line.split("#")[0].strip()
        if not line:
            continue
        op, b, m, n = line.split()
        b, m, n = int(b), int(m), int(n)
        a = rng.standard_normal((b, m, n)).astype(args.dtype)
        if op == "eigh":
            a = (a + a.swapaxes(-1, -2)) / 2
        call = getattr(batchlin, op)
        plan = batchlin.backend_for(op, a.shape, args.dtype).plan.replace(",", ";")
        try:
            call(a)  # warm-up: the first call opens the device and loads kernels
            times = []
            for _ in range(args.repeats):
                t0 = time.perf_counter()
                call(a)
                times.append((time.perf_counter() - t0) * 1e3)
        except Exception as e:  # one shape's failure is a result, not the run's end
            why = f"{type(e).__name__}: {e}".replace(",", ";").replace("\n", " ")
            print(f"{args.label},{op},{b},{m},{n},{args.dtype},,,{plan}; {why}", flush=True)
            continue
        print(
            f"{args.label},{op},{b},{m},{n},{args.dtype},{statistics.median(times):.4f},"
            f"{min(times):.4f},{plan}",
            flush=True,
        )


if __name__ == "__main__":
    main()
