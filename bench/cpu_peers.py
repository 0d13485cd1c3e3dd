#!/usr/bin/env python3
"""batchlin's CPU path against NumPy (numpy.linalg on the whole batch) and a plain loop
of faer calls, on the shapes of record, interleaved shape by shape in one run.

    python3 bench/cpu_peers.py [--rounds 2] [--dtype f32] [--out FILE.md] [--only qr]
                               [--shape 'qr 4096x32x32' ...]

batchlin and the faer loop are timed by the `batchlin` binary ($CARGO_TARGET_DIR or
target/, release/batchlin, built first with `cargo build --release`), NumPy in this process; for each shape the
three run back to back, and the whole set is repeated `--rounds` times; each cell is the
best of the rounds' medians.
"""
import argparse
import os
import platform
import subprocess
import sys
import tempfile
import time

import numpy as np

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BIN = os.path.join(os.environ.get("CARGO_TARGET_DIR") or os.path.join(ROOT, "target"),
                   "release", "batchlin")


def shapes_of_record():
    out = []
    with open(os.path.join(ROOT, "bench", "shapes.txt")) as f:
        for line in f:
            line = line.split("#")[0].strip()
            if line:
                op, b, m, n = line.split()
                out.append((op, int(b), int(m), int(n)))
    return out


def numpy_ms(op, b, m, n, dtype, rng):
    inputs = []
    for _ in range(2):
        a = rng.standard_normal((b, m, n)).astype(dtype)
        if op == "eigh":
            a = (a + a.transpose(0, 2, 1)) / 2
        inputs.append(a)
    f = {
        "qr": lambda a: np.linalg.qr(a),
        "eigh": lambda a: np.linalg.eigh(a),
        "svd": lambda a: np.linalg.svd(a, full_matrices=False),
    }[op]
    t0 = time.perf_counter()
    f(inputs[0])
    first = time.perf_counter() - t0
    reps = 1 if first > 1.0 else max(3, min(100, int(1.0 / max(first, 1e-6))))
    times = []
    for r in range(reps):
        t = time.perf_counter()
        f(inputs[r % 2])
        times.append((time.perf_counter() - t) * 1e3)
    times.sort()
    return times[len(times) // 2]


def batchlin_ms(op, b, m, n, dtype, peer):
    with tempfile.NamedTemporaryFile("w", suffix=".txt", delete=False) as f:
        f.write(f"{op} {b} {m} {n}\n")
        path = f.name
    cmd = [BIN, "bench", "--shapes", path, "--dtype", dtype]
    if peer:
        cmd += ["--peer", peer]
    try:
        out = subprocess.run(cmd, capture_output=True, text=True)
    finally:
        os.unlink(path)
    for line in out.stdout.splitlines():
        cells = [c.strip() for c in line.strip("|").split("|")]
        if len(cells) >= 8 and cells[0] == op:
            return float(cells[4]), cells[3], cells[7]
    raise RuntimeError(f"no result from {' '.join(cmd)}:\n{out.stdout}\n{out.stderr}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--dtype", default="f32", choices=["f32", "f64"])
    ap.add_argument("--only", default=None, help="one op (qr, eigh, svd)")
    ap.add_argument("--shape", action="append", default=None,
                    help="restrict to 'op BxMxN' (repeatable), e.g. --shape 'qr 4096x32x32'")
    ap.add_argument("--out", default=None)
    args = ap.parse_args()
    if not os.path.exists(BIN):
        sys.exit(f"{BIN} not found: run `cargo build --release` first")
    dtype = np.float32 if args.dtype == "f32" else np.float64
    shapes = [s for s in shapes_of_record() if args.only in (None, s[0])]
    if args.shape:
        want = {" ".join(w.split()) for w in args.shape}
        shapes = [s for s in shapes if f"{s[0]} {s[1]}x{s[2]}x{s[3]}" in want]
    rng = np.random.default_rng(1130)
    best = {}
    for rnd in range(args.rounds):
        for s in shapes:
            op, b, m, n = s
            print(f"round {rnd + 1}: {op} {b}x{m}x{n}", file=sys.stderr, flush=True)
            nb = numpy_ms(op, b, m, n, dtype, rng)
            bl, backend, acc = batchlin_ms(op, b, m, n, args.dtype, None)
            fl, _, _ = batchlin_ms(op, b, m, n, args.dtype, "faer-loop")
            prev = best.get(s)
            cur = [nb, bl, fl, backend, acc]
            if prev is None:
                best[s] = cur
            else:
                best[s] = [min(prev[0], nb), min(prev[1], bl), min(prev[2], fl), backend,
                           acc if acc != "ok" else prev[4]]
    lines = [
        f"# batchlin CPU path vs NumPy and a faer loop ({args.dtype})",
        "",
        f"Machine: {platform.processor() or platform.machine()}, {os.cpu_count()} threads; "
        f"NumPy {np.__version__}; {time.strftime('%Y-%m-%d')}.",
        f"Command: `cargo build --release && python3 bench/cpu_peers.py --rounds {args.rounds} --dtype {args.dtype}`",
        "",
        "ms a call, best of the rounds' medians; ratios are peer time over batchlin time.",
        "",
        "| op | batch x m x n | backend | batchlin | NumPy | faer loop | vs NumPy | vs faer loop | accuracy |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for s in shapes:
        nb, bl, fl, backend, acc = best[s]
        op, b, m, n = s
        lines.append(f"| {op} | {b}x{m}x{n} | {backend} | {bl:.3f} | {nb:.3f} | {fl:.3f} | "
                     f"{nb / bl:.1f}x | {fl / bl:.1f}x | {acc} |")
    text = "\n".join(lines) + "\n"
    print(text)
    if args.out:
        os.makedirs(os.path.dirname(args.out), exist_ok=True)
        with open(args.out, "w") as f:
            f.write(text)


if __name__ == "__main__":
    main()
