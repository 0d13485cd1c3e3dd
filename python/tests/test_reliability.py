"""What happens around the numerics (docs/reliability.md).

- Out of memory: the issue's reproducers in a subprocess under an address-space limit
  (resource.setrlimit RLIMIT_AS) raise MemoryError, as numpy.linalg does, never a
  PanicException or an abort; the same process computes correctly afterwards.
- fork: multiprocessing with the "fork" start method (and a bare os.fork) after a
  parallel call computes what numpy.linalg computes, instead of hanging; CUDA in a child
  forked after CUDA was initialised is a clear UnavailableError (GPU only).
- Argument checks: BATCHLIN_BACKEND errors name the variable and accept what the
  backend= keyword accepts; backend_for with a negative size is a ValueError.
- float32 results beyond the range carry INFO_OVERFLOW.
- A bounded soak: a few thousand calls of each operation, resident memory read before
  and after (CPU; the GPU variant on a GPU).
"""

import multiprocessing as mp
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

import batchlin
from batchlin import _front
from conftest import check_qr, rel, rng

GPU_BACKEND = any(d["available"] and d["kind"].startswith("cuda:") for d in batchlin.devices())
needs_backend = pytest.mark.skipif(
    not GPU_BACKEND, reason=f"no batchlin GPU backend: {_front.gpu_absent_reason()}")


def run_py(code, env=None, timeout=300):
    """Run `code` in a fresh interpreter; (returncode, stdout + stderr)."""
    e = dict(os.environ)
    e.pop("BATCHLIN_BACKEND", None)
    e.update(env or {})
    p = subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                       text=True, timeout=timeout, env=e)
    return p.returncode, p.stdout + p.stderr


# A child that sets its own address-space limit (as `ulimit -v` would: KiB), runs a call
# that must raise MemoryError, then checks a small call against numpy. The limit is the
# child's address space once warm (its worker threads started, numpy.random loaded) plus
# `headroom_kib`, so that it holds on machines whose baseline differs (16 worker threads'
# stacks and malloc arenas, a larger Python environment); MALLOC_ARENA_MAX bounds the
# arenas the call's threads may reserve.
OOM_CHILD = """
import resource, sys
import numpy as np
import batchlin
{setup}
batchlin.svdvals(np.ones((64, 8, 8)))  # the worker pool started
np.random.default_rng(0)
vm_kib = next(int(l.split()[1]) for l in open("/proc/self/status") if l.startswith("VmSize:"))
resource.setrlimit(resource.RLIMIT_AS, ((vm_kib + {headroom_kib}) * 1024, resource.RLIM_INFINITY))
try:
    {call}
except MemoryError as e:
    assert isinstance(e, Exception)
    print("MemoryError:", e)
else:
    sys.exit("no MemoryError")
a = np.random.default_rng(0).standard_normal((16, 9, 7))
s = batchlin.svdvals(a)
assert np.abs(s - np.linalg.svd(a, compute_uv=False)).max() < 1e-12
q, r = batchlin.qr(a)
assert np.abs(q @ r - a).max() < 1e-12
print("usable afterwards")
"""

OOM_CASES = {
    # The reproducers (item 1 and 2).
    "zero-stride huge view, outputs": dict(
        setup="a = np.lib.stride_tricks.as_strided(np.ones(1), shape=(2**40, 2, 2), "
              "strides=(0, 0, 0))",
        headroom_kib=1_000_000, call="batchlin.qr(a)"),
    "complete qr of 2500x200x200, outputs": dict(
        setup="a = np.ones((2500, 200, 200))", headroom_kib=400_000,
        call='batchlin.qr(a, mode="complete")'),
    "svdvals of 1x9000x9000, scratch": dict(
        setup="a = np.ones((1, 9000, 9000))", headroom_kib=300_000,
        call="batchlin.svdvals(a)"),
    "eigvalsh of a zero-stride batch, each worker's scratch": dict(
        setup="a = np.lib.stride_tricks.as_strided(np.ones(1), shape=(8, 20000, 20000), "
              "strides=(0, 0, 0))",
        headroom_kib=1_000_000, call="batchlin.eigvalsh(a)"),
    "svdvals float32 zero-stride 100000x100000, scratch": dict(
        setup="a = np.lib.stride_tricks.as_strided(np.ones(1, np.float32), "
              "shape=(1, 100000, 100000), strides=(0, 0, 0))",
        headroom_kib=1_000_000, call="batchlin.svdvals(a)"),
}


@pytest.mark.parametrize("case", sorted(OOM_CASES))
def test_out_of_memory_is_memory_error(case):
    code, out = run_py(OOM_CHILD.format(**OOM_CASES[case]), env={"MALLOC_ARENA_MAX": "2"})
    assert code == 0, out
    assert "MemoryError:" in out and "usable afterwards" in out, out
    assert "PanicException" not in out and "panicked" not in out, out


def test_out_of_memory_is_not_a_panic_without_a_limit():
    # 32 TiB of outputs: refused even where memory is not limited.
    a = np.lib.stride_tricks.as_strided(np.ones(1), shape=(2**40, 2, 2), strides=(0, 0, 0))
    with pytest.raises(MemoryError):
        batchlin.qr(a)
    with pytest.raises(MemoryError):
        batchlin.svd(a)
    x = rng(3).standard_normal((4, 5, 5))
    assert rel(batchlin.svdvals(x), np.linalg.svd(x, compute_uv=False)) < 1e-13


# ---------------------------------------------------------------------------------------
# fork


def _child_work(seed):
    a = np.random.default_rng(seed).standard_normal((64, 8, 8))
    s = batchlin.svdvals(a)
    w = batchlin.eigvalsh(a + np.swapaxes(a, -1, -2))
    q, r = batchlin.qr(a)
    return (rel(s, np.linalg.svd(a, compute_uv=False)),
            rel(w, np.linalg.eigvalsh(a + np.swapaxes(a, -1, -2))),
            rel(q @ r, a))


def test_multiprocessing_fork_after_a_parallel_call():
    a = rng(1).standard_normal((64, 8, 8))
    batchlin.svdvals(a)  # the pool's threads exist in the parent now
    ctx = mp.get_context("fork")
    with ctx.Pool(2) as pool:
        res = pool.map_async(_child_work, range(6)).get(timeout=120)
    for errs in res:
        assert max(errs) < 1e-12, errs
    # The parent's pool still works.
    assert max(_child_work(99)) < 1e-12


def test_os_fork_child_computes_the_same_bits():
    a = rng(2).standard_normal((256, 6, 6))
    want = batchlin.svdvals(a)
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover (the child)
        os.close(r)
        try:
            import signal
            signal.alarm(60)
            same = np.array_equal(batchlin.svdvals(a), want)
            os.write(w, b"same" if same else b"diff")
        finally:
            os._exit(0)
    os.close(w)
    got = os.read(r, 4)
    os.close(r)
    _, status = os.waitpid(pid, 0)
    assert got == b"same" and status == 0, (got, status)


@needs_backend
def test_cuda_in_a_forked_child_is_unavailable():
    a = rng(4).standard_normal((4, 16, 16)).astype(np.float32)
    batchlin.qr(a, backend="cuda")  # CUDA initialised in the parent
    ctx = mp.get_context("fork")
    with ctx.Pool(1) as pool:
        msg = pool.apply_async(_cuda_in_child, (a,)).get(timeout=60)
    assert "forked after CUDA was initialised" in msg, msg
    # The child's CPU calls are fine; the parent's GPU still works.
    q, r = batchlin.qr(a, backend="cuda")
    check_qr(a, q, r, 1e-4)


def _cuda_in_child(a):
    try:
        batchlin.qr(a, backend="cuda")
    except batchlin.UnavailableError as e:
        q, r = batchlin.qr(a)
        assert rel(q @ r, a) < 1e-5
        return str(e)
    return "no error"


# ---------------------------------------------------------------------------------------
# Argument checks


def test_backend_env_errors_name_the_variable():
    code, out = run_py("""
        import numpy as np, batchlin
        try:
            batchlin.qr(np.eye(3))
        except ValueError as e:
            print("ERR", e)
        """, env={"BATCHLIN_BACKEND": "garbage"})
    assert code == 0, out
    assert "ERR" in out and "BATCHLIN_BACKEND" in out and "garbage" in out, out


def test_backend_env_accepts_what_the_keyword_accepts():
    code, out = run_py("""
        import numpy as np, batchlin
        a = np.random.default_rng(0).standard_normal((3, 5, 4))
        print(batchlin.backend_for("qr", a.shape, "float64"))
        q, r = batchlin.qr(a, backend=" CPU-FAER ")
        q2, r2 = batchlin.qr(a)
        assert np.array_equal(r, r2)
        print("ok")
        """, env={"BATCHLIN_BACKEND": " CPU-FAER "})
    assert code == 0, out
    assert "cpu-faer" in out and "ok" in out, out


def test_backend_for_negative_size_is_value_error():
    with pytest.raises(ValueError, match="sizes must be >= 0"):
        batchlin.backend_for("qr", (-1, 4, 4))
    with pytest.raises(ValueError):
        batchlin.backend_for("svd", (4, -4))
    assert batchlin.backend_for("qr", (4, 4, 4)) in batchlin._native.BACKENDS


@pytest.mark.parametrize("args, kw, said", [
    ((None, (4, 4)), {}, "batchlin.backend_for: op must be a str, got NoneType"),
    ((5, (4, 4)), {}, "batchlin.backend_for: op must be a str, got int"),
    (("qr", 4), {}, "batchlin.backend_for: shape must be a sequence of ints, got int"),
    (("qr", (4.0, 4)), {}, "batchlin.backend_for: shape must be a sequence of ints, got tuple"),
    (("qr", (4, 4)), {"backend": 3}, "batchlin.backend_for: backend must be a str or None, got int"),
])
def test_backend_for_type_errors_name_the_function_and_argument(args, kw, said):
    with pytest.raises(TypeError) as e:
        batchlin.backend_for(*args, **kw)
    assert str(e.value) == said


def test_dtype_error_is_named_from_the_package():
    with pytest.raises(batchlin.DTypeError) as e:
        batchlin.qr(np.ones((2, 2), dtype=complex))
    assert f"{type(e.value).__module__}.{type(e.value).__qualname__}" == "batchlin.DTypeError"
    assert isinstance(e.value, TypeError) and isinstance(e.value, ValueError)


def test_float32_overflow_sets_the_overflow_flag():
    a = np.full((2, 4, 4), 3e38, dtype=np.float32)
    a[1] = 1.0  # the other matrix of the batch is untouched
    s, info = batchlin.svdvals_ex(a)
    assert np.isinf(s[0, 0]) and info[0] & batchlin.INFO_OVERFLOW, (s, info)
    assert info[1] & batchlin.INFO_OVERFLOW == 0
    assert abs(s[1, 0] - 4.0) < 1e-5
    _, r, info = batchlin.qr_ex(a)
    assert np.isinf(r[0, 0, 0]) and info[0] & batchlin.INFO_OVERFLOW
    assert info[0] & batchlin.INFO_NONFINITE == 0
    _, info = batchlin.eigvalsh_ex(a)
    assert info[0] & batchlin.INFO_OVERFLOW
    # numpy.linalg gives the same Inf (computed in float32 via float64 here: the values
    # are representable in float64).
    ref = np.linalg.svd(a[0].astype(np.float64), compute_uv=False)
    assert ref[0] > np.finfo(np.float32).max


# ---------------------------------------------------------------------------------------
# Soak: memory stays flat over thousands of calls


def _rss_kib():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    raise RuntimeError("no VmRSS")


def _soak(calls, device_put=None, backend=None):
    g = rng(5)
    a = g.standard_normal((8, 12, 10)).astype(np.float32)
    s = g.standard_normal((8, 10, 10))
    s = s + np.swapaxes(s, -1, -2)
    if device_put is not None:
        a, s = device_put(a), device_put(s)
    ops = [
        lambda: batchlin.qr(a, backend=backend),
        lambda: batchlin.qr(a, mode="complete", backend=backend),
        lambda: batchlin.qr(a, mode="r", backend=backend),
        lambda: batchlin.svd(a, backend=backend),
        lambda: batchlin.svdvals(a, backend=backend),
        lambda: batchlin.eigh(s, backend=backend),
        lambda: batchlin.eigvalsh(s, backend=backend),
    ]
    for op in ops:  # warm up: pools, compiled kernels, caches
        for _ in range(50):
            op()
    before = _rss_kib()
    for op in ops:
        for _ in range(calls):
            op()
    return before, _rss_kib()


def test_soak_cpu_memory_is_flat():
    before, after = _soak(3000)
    # A leak of one output per call would be 7 ops x 3000 calls x >= 320 B = 6.7 MB.
    assert after - before < 4096, (before, after)


@needs_backend
def test_soak_gpu_memory_is_flat():
    try:
        import torch
    except ImportError:  # pragma: no cover
        pytest.skip("torch is not installed: no device arrays to soak with")
    if not torch.cuda.is_available():
        pytest.skip("torch sees no CUDA device")
    put = lambda x: torch.from_numpy(x).cuda()  # noqa: E731
    before, after = _soak(2000, device_put=put)
    torch.cuda.synchronize()
    free_before = torch.cuda.mem_get_info()[0]
    _soak(2000, device_put=put)
    torch.cuda.synchronize()
    free_after = torch.cuda.mem_get_info()[0]
    assert after - before < 16384, (before, after)
    # Device memory: the stream-ordered pool keeps what it has, but does not grow.
    assert free_before - free_after < 64 << 20, (free_before, free_after)
    # Host data on the GPU (pinned staging): flat as well.
    before, after = _soak(2000, backend="cuda")
    assert after - before < 16384, (before, after)
