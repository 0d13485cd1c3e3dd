"""Dask arrays: batchlin's operations as lazy Dask arrays, one task per batch chunk.

    import dask.array as da, batchlin
    a = da.random.random((100_000, 32, 32), chunks=(10_000, 32, 32))
    q, r = batchlin.qr(a)            # lazy Dask arrays: nothing computed yet
    r.compute()                      # 10 tasks, one per chunk, on any Dask scheduler

Every function of ``batchlin`` given a ``dask.array.Array`` comes here (``run``): the
results' shapes, dtypes and conventions are those of the same call on the whole array. Each
chunk of the batch axes is one task, which computes every output of the operation for
its matrices with one batchlin call on the chunk (NumPy chunks on the CPU, CuPy chunks on
their GPU); the outputs are Dask arrays chunked as the input's batch axes, their matrix
axes whole. A matrix must lie in one chunk: where the input splits a matrix axis, it is
rechunked to one chunk along both matrix axes first (Dask moves the data once).

Tasks are pure functions of their chunk, so a scheduler may run them anywhere, and
recompute them when a worker is lost. Errors in the arguments (shape, dtype, mode)
raise when the graph is built, before anything is computed.
"""

from __future__ import annotations

import itertools
import operator

import numpy as np

from . import _front, _jax

_U32 = np.dtype(np.uint32)


def _compute_dtype(dt) -> np.dtype:
    """The dtype batchlin computes (and returns) input of dtype `dt` in; DTypeError
    for the types it does not take (the same rules as NumPy input)."""
    return _front.promote_numpy(np.empty(0, dtype=dt)).dtype


def _chunk(variant: str, uplo: str, backend, block):
    """The task of one chunk: every output slot of `variant` (None where not computed)
    and the info words."""
    import batchlin

    if variant.startswith("qr"):
        mode = {"qr": "reduced", "qr-complete": "complete", "qr-r": "r"}[variant]
        return tuple(batchlin.qr_ex(block, mode, backend=backend))
    if variant == "eigh":
        return tuple(batchlin.eigh_ex(block, uplo, backend=backend))
    if variant == "eigvalsh":
        w, info = batchlin.eigvalsh_ex(block, uplo, backend=backend)
        return w, None, info
    if variant == "svdvals":
        s, info = batchlin.svdvals_ex(block, backend=backend)
        return None, s, None, info
    return tuple(batchlin.svd_ex(block, full_matrices=variant == "svd-full",
                                 backend=backend))


def run(variant: str, a, uplo: str = "L", backend=None):
    """`variant` ("qr", "qr-complete", "qr-r", "eigh", "eigvalsh", "svd", "svd-full",
    "svdvals") of the Dask array `a` [..., M, N]: every output slot (None where not
    computed) and the info words (uint32), as lazy Dask arrays."""
    import dask.array as da
    from dask.array.utils import meta_from_array
    from dask.base import tokenize
    from dask.highlevelgraph import HighLevelGraph

    if a.ndim < 2:
        raise _front._shape_error(a.shape)
    _jax._backend(backend)  # an unknown backend raises now, not in every task
    dtype = _compute_dtype(a.dtype)
    # The output slots' shapes past the batch axes (checks square input for eigh, UPLO).
    trailing = _front.output_shapes(variant, tuple(int(d) for d in a.shape[-2:]), uplo)
    if a.numblocks[-2] > 1 or a.numblocks[-1] > 1:
        a = a.rechunk({a.ndim - 2: -1, a.ndim - 1: -1})  # one matrix, one chunk
    nb = a.ndim - 2
    batch_chunks = a.chunks[:nb]
    name = f"batchlin-{variant}-" + tokenize(a, variant, uplo, backend)
    blocks = list(itertools.product(*(range(len(c)) for c in batch_chunks)))
    tasks = {(name, *i): (_chunk, variant, uplo, backend, (a.name, *i, 0, 0))
             for i in blocks}
    graph = HighLevelGraph.from_collections(name, tasks, dependencies=[a])

    def output(slot: int, shape: tuple, dt: np.dtype):
        """The slot-th result of every task, as one Dask array."""
        out = f"{name}-out{slot}"
        pick = {(out, *i, *(0,) * len(shape)): (operator.getitem, (name, *i), slot)
                for i in blocks}
        g = HighLevelGraph.from_collections(out, pick, dependencies=[graph_array])
        chunks = (*batch_chunks, *((d,) for d in shape))
        meta = meta_from_array(a._meta, len(chunks), dtype=dt)
        return da.Array(g, out, chunks, meta=meta)

    # The tasks as a collection that the outputs' graphs depend on.
    graph_array = da.Array(graph, name, (*batch_chunks,), meta=meta_from_array(
        a._meta, nb, dtype=dtype))
    outs = [None if s is None else output(k, s, dtype) for k, s in enumerate(trailing)]
    return (*outs, output(len(trailing), (), _U32))
