"""Several GPUs of one host: every operation on torch tensors and CuPy arrays on cuda:1
(outputs there, the caller's current device untouched, the work on cuda:1's current
stream), one batch split over two GPUs from two threads (as bench/multi_gpu.py does),
and a JAX batch sharded over two GPU devices (each shard decomposed on its device, no
collective in the compiled HLO). Results against numpy.linalg in float64 and against
the same call on one GPU.

Every test is skipped, with the reason shown, where fewer than two GPUs are visible
(or batchlin's GPU backend is absent). The same paths on one machine's CPU devices are
checked in test_jax_sharding.py (JAX) and test_dask.py (Dask).
"""

import threading

import numpy as np
import pytest

import batchlin
from conftest import OPS, check_op, rng

# Results of float64 input on a GPU: LAPACK-like accuracy, scaled as the CUDA tests'.
TOL = 1e-10


def _gpu_count_or_why(framework):
    reason = batchlin._front.gpu_absent_reason()
    if reason is not None:
        return 0, f"no batchlin GPU backend: {reason}"
    try:
        if framework == "torch":
            import torch

            n = torch.cuda.device_count() if torch.cuda.is_available() else 0
        elif framework == "cupy":
            import cupy

            n = cupy.cuda.runtime.getDeviceCount()
        else:
            import jax

            n = len(jax.devices("gpu"))
    except ImportError:
        return 0, f"{framework} is not installed"
    except Exception as e:  # no GPU platform, no driver
        return 0, f"{framework} sees no GPU ({type(e).__name__}: {str(e)[:100]})"
    if n < 2:
        return n, f"{framework} sees {n} CUDA GPU(s): these tests need 2"
    return n, None


def needs_two(framework):
    n, why = _gpu_count_or_why(framework)
    return pytest.mark.skipif(why is not None, reason=why or "")


def items(res):
    """The outputs of a result (a tuple, or one array), None where not computed."""
    return list(res) if isinstance(res, tuple) else [res]


def host(res, to_numpy):
    """The result as NumPy arrays, in its own structure (a tuple or one array)."""
    got = [None if x is None else to_numpy(x) for x in items(res)]
    return tuple(got) if isinstance(res, tuple) else got[0]


def same_results(res, ref, to_numpy):
    """Two calls' results are equal, output by output."""
    pairs = list(zip(items(res), items(ref)))
    assert len(pairs) == len(items(ref))
    for g, r in pairs:
        assert (g is None) == (r is None)
        if g is not None:
            assert np.allclose(to_numpy(g), to_numpy(r), rtol=0, atol=1e-12)


def _input(name, square, shape=(12, 7, 5)):
    return rng(len(name)).standard_normal(shape if not square else (*shape[:-1], shape[-2]))


# ---------------------------------------------------------------------------------------
# torch


@needs_two("torch")
@pytest.mark.parametrize("name,f,square", OPS, ids=[o[0] for o in OPS])
def test_torch_every_op_on_cuda1(name, f, square):
    import torch

    torch.cuda.set_device(0)
    x = _input(name, square)
    a = torch.from_numpy(x).to("cuda:1")
    side = torch.cuda.Stream(device="cuda:1")
    with torch.cuda.stream(side):  # cuda:1's current stream: the call is queued there
        res = f(a)
    side.synchronize()
    outs = [o for o in items(res) if o is not None]
    assert all(o.device == torch.device("cuda", 1) for o in outs)
    assert torch.cuda.current_device() == 0
    to_numpy = lambda t: t.cpu().numpy()  # noqa: E731
    check_op(name, x, host(res, to_numpy), TOL)
    # the same call on cuda:0 gives the same results
    same_results(res, f(torch.from_numpy(x).to("cuda:0")), to_numpy)


@needs_two("torch")
def test_torch_batch_split_over_two_gpus_from_two_threads():
    import torch

    x = rng(40).standard_normal((256, 16, 12)).astype(np.float32)
    parts = np.array_split(x, 2)
    outs = [None, None]
    errs = []

    def work(i):
        try:
            dev = torch.device("cuda", i)
            s = torch.cuda.Stream(device=dev)
            with torch.cuda.device(i), torch.cuda.stream(s):
                u, sv, vh = batchlin.svd(torch.from_numpy(parts[i]).to(dev))
            s.synchronize()
            assert u.device == dev
            outs[i] = [t.cpu().numpy() for t in (u, sv, vh)]
        except Exception as e:  # reported below
            errs.append(e)

    ts = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errs, errs
    u, s, vh = (np.concatenate([o[k] for o in outs]) for k in range(3))
    check_op("svd", x, (u, s, vh), 1e-4)
    whole = batchlin.svd(torch.from_numpy(x).to("cuda:0"))
    assert np.allclose(s, whole.S.cpu().numpy(), rtol=0, atol=1e-5)


# ---------------------------------------------------------------------------------------
# CuPy


@needs_two("cupy")
@pytest.mark.parametrize("name,f,square", OPS, ids=[o[0] for o in OPS])
def test_cupy_every_op_on_device1(name, f, square):
    import cupy

    x = _input(name, square)
    with cupy.cuda.Device(1):
        a = cupy.asarray(x)
    with cupy.cuda.Device(0):  # the current device is another one: the input's is used
        res = f(a)
    outs = [o for o in items(res) if o is not None]
    assert all(o.device.id == 1 for o in outs)
    cupy.cuda.Device(1).synchronize()
    check_op(name, x, host(res, cupy.asnumpy), TOL)
    with cupy.cuda.Device(0):
        same_results(res, f(cupy.asarray(x)), cupy.asnumpy)


# ---------------------------------------------------------------------------------------
# JAX: one batch sharded over two GPU devices


@needs_two("jax")
@pytest.mark.parametrize("name,f,square", OPS, ids=[o[0] for o in OPS])
def test_jax_sharded_over_two_gpus(name, f, square):
    import jax
    from jax.sharding import Mesh, NamedSharding, PartitionSpec as P

    jax.config.update("jax_enable_x64", True)
    gpus = jax.devices("gpu")[:2]
    mesh = Mesh(np.array(gpus), ("x",))
    x = _input(name, square, (16, 7, 5))
    a = jax.device_put(x, NamedSharding(mesh, P("x")))
    text = jax.jit(f).lower(a).compile().as_text()
    assert "all-gather" not in text and "all-to-all" not in text
    res = jax.jit(f)(a)
    for o in items(res):
        if o is not None:
            assert {s.device for s in o.addressable_shards} == set(gpus)
            assert tuple(o.sharding.spec)[:1] == ("x",)
    check_op(name, x, host(res, np.asarray), TOL)
    same_results(res, f(jax.device_put(x, gpus[0])), np.asarray)  # one GPU, whole batch
