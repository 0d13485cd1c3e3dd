"""Dask arrays (batchlin/dask.py): lazy results, one task per batch chunk, matrix axes
rechunked whole, results equal to one call on the whole array and to numpy.linalg in
float64, on the threaded scheduler and on a distributed LocalCluster, with a worker
killed mid-compute; argument errors raised when the graph is built; CuPy chunks on a
GPU."""

import os
import signal
import time

import numpy as np
import pytest

import batchlin
from conftest import OPS, check_eigh, check_op, check_qr, check_svd, rng, same_output

da = pytest.importorskip("dask.array", reason="dask[array] is not installed")

def outputs(res):
    """The arrays of a result (a tuple, named or not, or one array), None left out."""
    res = res if isinstance(res, tuple) else (res,)
    return [x for x in res if x is not None]


def batchlin_tasks(x):
    """The keys of the tasks that call batchlin (the layer "batchlin-<op>-<token>"; the
    outputs' layers, "...-out<k>", pick their results) in the graph of Dask array `x`."""
    layers = x.__dask_graph__().layers
    return [k for name, layer in layers.items()
            if name.startswith("batchlin-") and "-out" not in name for k in layer]


def check_lazy_and_equal(name, f, x, chunks, scheduler="threads"):
    a = da.from_array(x, chunks=chunks)
    res = f(a)
    got = outputs(res)
    assert all(isinstance(o, da.Array) for o in got)
    # one task per chunk of the batch axes (the matrix axes are one chunk each)
    n_batch_chunks = int(np.prod(a.numblocks[:-2]))
    assert len(batchlin_tasks(got[0])) == n_batch_chunks
    for o in got:
        assert o.numblocks[:a.ndim - 2] == a.numblocks[:-2]
        assert all(n == 1 for n in o.numblocks[a.ndim - 2:])
    computed = [o.compute(scheduler=scheduler) for o in got]
    whole = outputs(f(x))  # one call on the whole array
    assert len(whole) == len(computed)
    for c, w in zip(computed, whole):
        assert type(c) is np.ndarray and c.dtype == w.dtype and c.shape == w.shape
        assert same_output(c, w, *x.shape[-2:])
    if isinstance(res, tuple) and not hasattr(res, "_fields"):
        raise AssertionError("results are named tuples as for every input")
    check_op(name, x, computed if isinstance(res, tuple) else computed[0])


@pytest.mark.parametrize("name,f,square", OPS, ids=[o[0] for o in OPS])
def test_every_op_matches_one_call(name, f, square):
    x = rng(len(name)).standard_normal((23, 6, 6 if square else 5))
    # batch chunks of uneven sizes; the row axis split (rechunked whole)
    check_lazy_and_equal(name, f, x, (5, 3, 6 if square else 5))


@pytest.mark.parametrize("name,f,square", OPS[::3], ids=[o[0] for o in OPS[::3]])
def test_two_batch_axes_and_one_matrix(name, f, square):
    x = rng(3).standard_normal((4, 6, 5, 5))
    check_lazy_and_equal(name, f, x, (3, 2, 5, 5))
    check_lazy_and_equal(name, f, x[0, 0], (2, 5))  # a lone matrix: one task


def test_nothing_computed_before_compute():
    calls = []

    def spy(block):
        calls.append(block.shape)
        return block

    a = da.from_array(rng(1).standard_normal((12, 4, 4)), chunks=(4, 4, 4))
    a = a.map_blocks(spy, meta=np.empty((0, 0, 0)))  # meta given: spy is not probed
    s = batchlin.svdvals(a)
    assert calls == []
    s.compute(scheduler="sync")
    assert sorted(calls) == [(4, 4, 4)] * 3


def test_dtypes():
    x = rng(2).standard_normal((8, 4, 4))
    assert batchlin.qr(da.from_array(x.astype(np.float32), chunks=4)).R.dtype == np.float32
    assert batchlin.svdvals(da.from_array(x.astype(np.float16), chunks=4)).dtype == np.float32
    i = da.from_array((x * 4).astype(np.int32), chunks=(2, 4, 4))
    w = batchlin.eigvalsh(i)
    assert w.dtype == np.float64
    assert np.allclose(w.compute(), batchlin.eigvalsh(np.asarray(i)), atol=1e-12)
    q, r = batchlin.qr(da.from_array(x.astype(np.float32), chunks=(3, 4, 4)))
    check_qr(x.astype(np.float32), q.compute(), r.compute(), 1e-5)


def test_errors_raised_when_building_the_graph():
    a = da.ones((6, 3, 4), chunks=2)
    with pytest.raises(ValueError, match="at least 2 dimensions"):
        batchlin.qr(da.ones(5))
    with pytest.raises(ValueError, match="square"):
        batchlin.eigh(a)
    with pytest.raises(ValueError, match="QR mode"):
        batchlin.qr(a, "full")
    with pytest.raises(ValueError, match="UPLO"):
        batchlin.eigvalsh(da.ones((2, 3, 3)), "X")
    with pytest.raises(ValueError, match="unknown backend"):
        batchlin.svd(a, backend="tpu")
    with pytest.raises(batchlin.DTypeError, match="complex"):
        batchlin.svdvals(a.astype(np.complex128))
    with pytest.raises(TypeError, match="full_matrices"):
        batchlin.svd(a, full_matrices="yes")


def test_nan_isolated_and_info():
    x = rng(4).standard_normal((6, 5, 5))
    x[4, 1, 1] = np.nan
    u, s, vh, info = batchlin.svd_ex(da.from_array(x, chunks=(2, 5, 5)))
    bits = info.compute() & batchlin.INFO_NONFINITE
    assert list(bits != 0) == [False] * 4 + [True, False]
    assert np.all(np.isnan(s.compute()[4])) and np.all(np.isfinite(s.compute()[[0, 5]]))


# ---------------------------------------------------------------------------------------
# dask.distributed


@pytest.fixture
def distributed():
    return pytest.importorskip("distributed", reason="distributed is not installed")


def test_local_cluster_threads(distributed):
    x = rng(5).standard_normal((40, 8, 6))
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=False,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        u, s, vh = batchlin.svd(da.from_array(x, chunks=(7, 8, 6)))
        u, s, vh = client.compute([u, s, vh], sync=True)
        ref = batchlin.svd(x)
        for got, want in zip((u, s, vh), ref):
            assert np.allclose(got, want, rtol=0, atol=1e-12)
        check_svd(x, u, s, vh, 1e-12)


def _slow(block):
    time.sleep(0.05)  # long enough that the compute is under way when a worker dies
    return block


def test_worker_killed_mid_compute_is_recomputed(distributed):
    """A worker process killed while the chunks are being computed: the scheduler runs
    its tasks again on the survivor (and the restarted worker); the result is whole and
    correct."""
    x = rng(6).standard_normal((96, 6, 6))
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as client:
        a = da.from_array(x, chunks=(2, 6, 6)).map_blocks(_slow, meta=np.empty((0, 0, 0)))
        q, r = batchlin.qr(a)
        fut = client.compute(r)
        deadline = time.monotonic() + 60
        # wait until a few chunks are done and held by the workers
        while sum(map(len, (held := client.has_what()).values())) < 4:
            assert time.monotonic() < deadline and not fut.done()
            time.sleep(0.02)
        pids = client.run(os.getpid)  # worker address -> pid (processes we started)
        # the worker holding the most finished chunks: they are lost with it
        victim = max(pids, key=lambda w: len(held.get(w, ())))
        assert held[victim] and not fut.done()
        os.kill(pids[victim], signal.SIGKILL)
        got = fut.result(timeout=120)
        # the killed worker is gone (its nanny starts a new one, at another address)
        assert victim not in client.scheduler_info()["workers"]
    _, want = batchlin.qr(x)
    assert np.allclose(got, want, rtol=0, atol=1e-12)
    d = np.sign(np.diagonal(np.linalg.qr(x).R, axis1=-2, axis2=-1))
    assert np.allclose(got, d[..., :, None] * np.linalg.qr(x).R, atol=1e-10)


# ---------------------------------------------------------------------------------------
# CuPy chunks: each task runs on the chunk's GPU


def _cupy_or_why():
    try:
        import cupy
    except ImportError:
        return None, "CuPy is not installed"
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:
            return None, "CuPy sees no CUDA GPU"
    except Exception as e:
        return None, f"CuPy sees no CUDA GPU ({type(e).__name__})"
    reason = batchlin._front.gpu_absent_reason()
    if reason is not None:
        return None, f"no batchlin GPU backend: {reason}"
    return cupy, None


def test_cupy_chunks():
    cupy, why = _cupy_or_why()
    if cupy is None:
        pytest.skip(why)
    x = rng(7).standard_normal((30, 8, 6)).astype(np.float32)
    a = da.from_array(cupy.asarray(x), chunks=(8, 8, 6), asarray=False)
    q, r, info = batchlin.qr_ex(a)
    assert isinstance(q._meta, cupy.ndarray) and info.dtype == np.uint32
    q, r, info = (o.compute(scheduler="threads") for o in (q, r, info))
    assert isinstance(q, cupy.ndarray) and isinstance(r, cupy.ndarray)
    check_qr(x, cupy.asnumpy(q), cupy.asnumpy(r), 1e-4)
    assert not (cupy.asnumpy(info) & batchlin.INFO_NONFINITE).any()
    xs = x[:, :6, :] + np.swapaxes(x[:, :6, :], -1, -2)
    w, v = batchlin.eigh(da.from_array(cupy.asarray(xs), chunks=(8, 6, 6), asarray=False))
    check_eigh(xs, cupy.asnumpy(w.compute()), cupy.asnumpy(v.compute()), 1e-4)
    s = batchlin.svdvals(a).compute()
    assert isinstance(s, cupy.ndarray)
    assert np.allclose(cupy.asnumpy(s), np.linalg.svd(x.astype(np.float64),
                                                      compute_uv=False), atol=1e-4)


def test_same_output_allows_only_what_kernels_may_choose():
    """The comparison of a batch part's outputs with the whole batch's lets through the
    iteration counts and another basis of a full factor's completion, nothing else."""
    r = rng(3)
    q, _ = np.linalg.qr(r.standard_normal((2, 5, 5)))
    flip = q.copy()
    flip[..., :, 3:] = q[..., :, 3:] @ np.array([[0.6, -0.8], [0.8, 0.6]])  # same span
    assert same_output(flip, q, 5, 3)  # U or Q of a 5x3 matrix: columns 3.. free
    assert same_output(np.swapaxes(flip, -1, -2), np.swapaxes(q, -1, -2), 3, 5)  # Vh
    assert not same_output(flip, q, 5, 5)  # square: nothing free
    bad = flip.copy()
    bad[..., :, 2] *= -1
    assert not same_output(bad, q, 5, 3)  # a leading column differs
    other = q.copy()
    other[..., :, 3:] = np.linalg.qr(r.standard_normal((2, 5, 2)))[0]  # another span
    assert not same_output(other, q, 5, 3)
    info = np.array([5 << 16, 3 << 16 | 1], dtype=np.uint32)
    assert same_output(info, np.array([9 << 16, 1], dtype=np.uint32), 5, 3)
    assert not same_output(info, np.array([5 << 16, 3 << 16], dtype=np.uint32), 5, 3)
