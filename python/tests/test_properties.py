"""Property tests (hypothesis) against numpy.linalg in float64: every input dtype (after
numpy.linalg's promotion), layout (C order, transposed, strided and reversed slices,
broadcast zero strides, non-contiguous batches), structured value kinds (Gaussian,
zero, identity, rank one, graded, clustered spectra, huge and tiny scales) and NaN/Inf in
some matrices of a batch (their outputs NaN with INFO_NONFINITE, the rest untouched).

Sized for CI: BATCHLIN_HYPOTHESIS_EXAMPLES examples per test (default 60; the
2026-12-01 attack ran about 48,000 in all).
"""

import os

import numpy as np
import pytest

hypothesis = pytest.importorskip("hypothesis", reason="hypothesis is not installed")
from hypothesis import HealthCheck, given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

import batchlin  # noqa: E402
from conftest import check_eigh, check_qr, check_svd  # noqa: E402

EXAMPLES = int(os.environ.get("BATCHLIN_HYPOTHESIS_EXAMPLES", "60"))
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

# Input dtype -> the dtype numpy.linalg (and batchlin) computes in.
DTYPES = {"float32": "float32", "float64": "float64", "float16": "float32",
          "int32": "float64", "int64": "float64", "uint8": "float64", "bool": "float64"}
TOL = {"float32": 2e-4, "float64": 1e-11}
KINDS = ["gaussian", "zero", "identity", "rank-one", "graded", "clustered", "integers"]


def matrix(rs, kind, m, n, dtype):
    k = min(m, n)
    if kind == "zero":
        x = np.zeros((m, n))
    elif kind == "identity":
        x = np.eye(m, n)
    elif kind == "rank-one":
        x = np.outer(rs.standard_normal(m), rs.standard_normal(n))
    elif kind == "graded":
        x = rs.standard_normal((m, n)) * np.logspace(0, -6, n)[None, :]
    elif kind == "clustered":
        u, _ = np.linalg.qr(rs.standard_normal((m, m)))
        v, _ = np.linalg.qr(rs.standard_normal((n, n)))
        s = 1.0 + 1e-7 * np.arange(k)
        x = (u[:, :k] * s) @ v[:k, :]
    elif kind == "integers":
        x = rs.integers(-3, 4, (m, n)).astype(np.float64)
    else:
        x = rs.standard_normal((m, n))
    if dtype == "bool":
        return x != 0
    if dtype.startswith(("int", "uint")):
        return np.rint(np.clip(x * 3, 0 if dtype == "uint8" else -100, 100)).astype(dtype)
    return x


@st.composite
def inputs(draw, square=False, symmetric=False):
    dtype = draw(st.sampled_from(sorted(DTYPES)))
    batch = tuple(draw(st.lists(st.integers(0, 3), max_size=2)))
    m = draw(st.integers(0, 9))
    n = m if square else draw(st.integers(0, 9))
    kind = draw(st.sampled_from(KINDS))
    scale = 1.0
    if DTYPES[dtype] == dtype and dtype != "float16" and draw(st.booleans()):
        scale = 2.0 ** draw(st.integers(-90, 90))  # power of two: exact in every dtype
    rs = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    count = int(np.prod(batch))
    mats = [matrix(rs, kind, m, n, dtype) for _ in range(count)]
    if symmetric:
        mats = [(x + x.T) / 2 if x.dtype.kind == "f" else x | x.T if x.dtype == bool
                else (x + x.T) for x in mats]
    a = np.stack(mats).reshape(*batch, m, n) if count else np.zeros((*batch, m, n))
    a = a.astype(dtype)
    if a.dtype.kind == "f":
        a = (a * scale).astype(dtype)
    # NaN / Inf in some matrices (float inputs): those matrices' outputs are NaN.
    bad = set()
    if a.dtype.kind == "f" and count and m and n and draw(st.booleans()):
        flat = a.reshape(count, m, n)
        for b in draw(st.sets(st.integers(0, count - 1), max_size=2)):
            flat[b, draw(st.integers(0, m - 1)), draw(st.integers(0, n - 1))] = draw(
                st.sampled_from([np.nan, np.inf, -np.inf]))
            bad.add(b)
        a = flat.reshape(a.shape)
    layout = draw(st.sampled_from(["c", "transposed", "strided", "reversed", "broadcast",
                                   "batch-strided"]))
    if layout == "transposed":
        a = np.ascontiguousarray(np.swapaxes(a, -1, -2)).swapaxes(-1, -2)
    elif layout == "strided":
        big = np.zeros((*batch, 2 * m + 1, 3 * n + 1), dtype=a.dtype)
        big[..., 1::2, ::3][..., :m, :n] = a
        a = big[..., 1::2, ::3][..., :m, :n]
    elif layout == "reversed":
        a = np.ascontiguousarray(a[..., ::-1, ::-1])[..., ::-1, ::-1]
    elif layout == "broadcast" and not bad and count:
        a = np.broadcast_to(a.reshape(count, m, n)[:1], (count, m, n)).reshape(*batch, m, n) \
            if len(batch) <= 1 else np.broadcast_to(a[(0,) * len(batch)], a.shape)
    elif layout == "batch-strided" and batch:
        big = np.zeros((2 * batch[0], *batch[1:], m, n), dtype=a.dtype)
        big[::2] = a
        a = big[::2]
    return a, bad


def per_matrix(a, bad, *outs):
    """(input matrix as float64, its outputs, whether it held NaN/Inf) for each matrix."""
    batch = a.shape[:-2]
    count = int(np.prod(batch))
    flat_a = np.asarray(a, dtype=np.float64).reshape(count, *a.shape[-2:])
    flats = [None if o is None else np.asarray(o).reshape(count, *o.shape[len(batch):])
             for o in outs]
    for b in range(count):
        yield flat_a[b], [None if f is None else f[b] for f in flats], b in bad


def expect_nan(outs, info_word):
    assert info_word & batchlin.INFO_NONFINITE
    for o in outs:
        if o is not None:
            assert np.all(np.isnan(o))


@SETTINGS
@given(inputs(), st.sampled_from(["reduced", "complete", "r"]))
def test_qr_against_numpy(x, mode):
    a, bad = x
    q, r, info = batchlin.qr_ex(a, mode)
    ct = DTYPES[a.dtype.name]
    assert r.dtype == ct and info.shape == a.shape[:-2]
    for (am, (qm, rm), isbad), w in zip(per_matrix(a, bad, q, r), info.reshape(-1)):
        if isbad:
            expect_nan([qm, rm], w)
            continue
        assert not w & (batchlin.INFO_NONFINITE | batchlin.INFO_NOT_CONVERGED)
        if qm is not None:
            check_qr(am, qm, rm, TOL[ct], mode)
        else:
            assert np.all(np.tril(rm, -1) == 0)
        # R against numpy's up to the sign of each row (diag(R) >= 0 here).
        refm = np.linalg.qr(am, mode="r")
        k = min(am.shape)
        sg = np.sign(np.diagonal(refm)[:k])
        sg[sg == 0] = 1
        scale = max(np.linalg.norm(am), 1e-300)
        rank_full = k and np.min(np.abs(np.diagonal(refm)[:k])) > 1e-3 * scale
        if rank_full:
            assert np.linalg.norm(rm[:k] - sg[:, None] * refm[:k]) / scale < 50 * TOL[ct] * \
                np.linalg.cond(am)


@SETTINGS
@given(inputs(square=True, symmetric=True), st.sampled_from(["L", "U"]))
def test_eigh_against_numpy(x, uplo):
    a, bad = x
    w, v, info = batchlin.eigh_ex(a, uplo)
    w2, info2 = batchlin.eigvalsh_ex(a, uplo)
    ct = DTYPES[a.dtype.name]
    for (am, (wm, vm, w2m), _), word in zip(per_matrix(a, bad, w, v, w2), info.reshape(-1)):
        # Only the `uplo` triangle is read: the matrix it stands for, and whether it
        # holds NaN/Inf, come from that triangle alone.
        t = np.tril(am) if uplo == "L" else np.triu(am)
        am = t + (np.tril(am, -1).T if uplo == "L" else np.triu(am, 1).T)
        isbad = not np.all(np.isfinite(t))
        if isbad:
            expect_nan([wm, vm, w2m], word)
            continue
        assert not word & (batchlin.INFO_NONFINITE | batchlin.INFO_NOT_CONVERGED)
        check_eigh(am, wm, vm, TOL[ct])
        scale = max(np.linalg.norm(am), 1e-300)
        assert np.linalg.norm(w2m.astype(np.float64) - np.linalg.eigvalsh(am)) / scale < TOL[ct]


@SETTINGS
@given(inputs(), st.booleans())
def test_svd_against_numpy(x, full):
    a, bad = x
    u, s, vh, info = batchlin.svd_ex(a, full)
    s2, info2 = batchlin.svdvals_ex(a)
    ct = DTYPES[a.dtype.name]
    # The same matrices flagged (the iteration counts are the routed kernel's own, and
    # a cost table may route svd and svdvals to different kernels).
    flags = batchlin.INFO_NONFINITE | batchlin.INFO_NOT_CONVERGED
    assert np.array_equal(info & flags, info2 & flags) or bad
    for (am, (um, sm, vm, s2m), isbad), word in zip(per_matrix(a, bad, u, s, vh, s2),
                                                    info.reshape(-1)):
        if isbad:
            expect_nan([um, sm, vm, s2m], word)
            continue
        assert not word & (batchlin.INFO_NONFINITE | batchlin.INFO_NOT_CONVERGED)
        check_svd(am, um, sm, vm, TOL[ct])
        scale = max(np.linalg.norm(am), 1e-300)
        ref = np.linalg.svd(am, compute_uv=False)
        assert np.linalg.norm(s2m.astype(np.float64) - ref) / scale < TOL[ct]
        if full:
            m, n = am.shape
            assert um.shape == (m, m) and vm.shape == (n, n)
