"""eigh, eigvalsh, svd and svdvals of CUDA input (torch tensors, CuPy arrays, JAX GPU
arrays), computed on the GPU: checked against float64 NumPy references (residual,
orthogonality, values) at sizes on both sides of the kernels' shared-memory limits,
with strided and transposed inputs, NaN isolation, the caller's stream with no host
synchronisation, CUDA graph capture, autograd, torch.compile, CuPy, and JAX eager, jit
and vmap. Skipped, with the reason shown, where there is no GPU.
"""

import numpy as np
import pytest

import batchlin
from conftest import check_eigh, check_svd, rel, rng
from test_cuda import (_on_gpu, cupy, jax_gpu, needs_backend, needs_cupy,  # noqa: F401
                       needs_torch_cuda, torch)

# n on both sides of the eigh kernel's shared-memory limit (about 167 in float32, 117 in
# float64 on an H200) and of a warp's 32 rows.
EIGH_N = [1, 2, 5, 16, 31, 32, 33, 64, 100, 120, 170]
# Tall, square and wide, around the SVD kernels' limits: `warp` (a warp a matrix, four a
# block: batches not a multiple of four; up to 32 columns, 64 rows in float32 and 32 in
# float64), `bidiag` (a block a matrix, from 33 columns) and `jacobi` (full factors of a
# non-square matrix past `warp`).
SVD_SHAPES = [(3, 1, 1), (4, 5, 3), (4, 3, 5), (3, 32, 32), (2, 33, 31), (2, 64, 64),
              (2, 40, 100), (2, 300, 20), (1, 130, 130), (5, 16, 1), (3, 1, 33),
              (6, 17, 2), (5, 32, 31), (3, 64, 32), (3, 32, 64), (2, 65, 32), (2, 33, 33),
              (2, 31, 33), (9, 16, 16)]
GTOL = {"float32": 2e-4, "float64": 1e-11}


def _sym(x):
    return (x + x.swapaxes(-1, -2)) / 2


@needs_torch_cuda
@needs_backend
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("n", EIGH_N)
def test_torch_cuda_eigh_matches_reference(n, dtype):
    x = _sym(rng(n).standard_normal((3, n, n))).astype(dtype)
    a = torch.from_numpy(x).cuda()
    w, v, info = batchlin.eigh_ex(a)
    torch.cuda.synchronize()
    assert w.device == a.device and v.device == a.device and w.dtype == a.dtype
    assert info.device == a.device
    flags = info.cpu().numpy().view(np.uint32)
    assert not (flags & (batchlin.INFO_NONFINITE | batchlin.INFO_NOT_CONVERGED)).any()
    check_eigh(x, w.cpu().numpy(), v.cpu().numpy(), GTOL[dtype])
    # Each eigenvector's largest component is positive (the sign convention).
    vn = v.cpu().numpy()
    idx = np.abs(vn).argmax(axis=-2)
    assert (np.take_along_axis(vn, idx[..., None, :], axis=-2) > 0).all()
    wv = batchlin.eigvalsh(a)
    assert wv.device == a.device and rel(wv.cpu().numpy(), np.linalg.eigvalsh(x.astype(np.float64))) < GTOL[dtype]
    # Only the named triangle is read: junk in the other one changes nothing.
    junk = x.copy()
    iu = np.triu_indices(n, 1)
    junk[:, iu[0], iu[1]] = 1e3
    w2 = batchlin.eigvalsh(torch.from_numpy(junk).cuda(), UPLO="L")
    assert torch.equal(w2, wv)


@needs_torch_cuda
@needs_backend
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_torch_cuda_eigh_structured(dtype):
    n = 24
    q, _ = np.linalg.qr(rng(3).standard_normal((n, n)))
    cases = {
        "zero": np.zeros((n, n)),
        "identity": np.eye(n),
        "rank one": np.outer(np.arange(n), np.arange(n)) / n,
        "clustered": q @ np.diag(1 + 1e-6 * np.arange(n)) @ q.T,
        "graded": q @ np.diag(np.logspace(-4, 4, n)) @ q.T,
        "repeated": q @ np.diag(np.repeat([1.0, 2.0, 3.0], n // 3)) @ q.T,
        "tiny": 1e-30 * _sym(rng(4).standard_normal((n, n))),
        "huge": 1e37 * _sym(rng(5).standard_normal((n, n))) / 8,
    }
    x = np.stack([_sym(c) for c in cases.values()]).astype(dtype)
    w, v, info = batchlin.eigh_ex(torch.from_numpy(x).cuda())
    info = info.cpu().numpy().view(np.uint32)
    assert not (info & (batchlin.INFO_NONFINITE | batchlin.INFO_NOT_CONVERGED)).any()
    for k, name in enumerate(cases):
        xk = x[k].astype(np.float64)
        s = max(np.abs(xk).max(), 1e-300)  # check at the matrix's own scale
        check_eigh(xk / s, w[k].cpu().numpy().astype(np.float64) / s, v[k].cpu().numpy(), GTOL[dtype])


@needs_torch_cuda
@needs_backend
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", SVD_SHAPES, ids=str)
def test_torch_cuda_svd_matches_reference(shape, dtype):
    x = rng(sum(shape)).standard_normal(shape).astype(dtype)
    a = torch.from_numpy(x).cuda()
    m, n = shape[-2:]
    k = min(m, n)
    for full in (False, True):
        u, s, vh, info = batchlin.svd_ex(a, full_matrices=full)
        assert u.device == a.device and s.device == a.device and vh.device == a.device
        assert u.shape == (*shape[:-2], m, m if full else k)
        assert vh.shape == (*shape[:-2], n if full else k, n)
        assert not (info.cpu().numpy().view(np.uint32)
                    & (batchlin.INFO_NONFINITE | batchlin.INFO_NOT_CONVERGED)).any()
        check_svd(x, u.cpu().numpy(), s.cpu().numpy(), vh.cpu().numpy(), GTOL[dtype])
        # Each column of U has its largest component positive.
        un = u.cpu().numpy()[..., :k]
        idx = np.abs(un).argmax(axis=-2)
        assert (np.take_along_axis(un, idx[..., None, :], axis=-2) > 0).all()
    sv = batchlin.svdvals(a)
    assert sv.device == a.device
    assert rel(sv.cpu().numpy(), np.linalg.svd(x.astype(np.float64), compute_uv=False)) < GTOL[dtype]


@needs_torch_cuda
@needs_backend
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_torch_cuda_svd_rank_deficient_and_extreme(dtype):
    m, n = 20, 12
    q, _ = np.linalg.qr(rng(6).standard_normal((m, n)))
    cases = {
        "zero": np.zeros((m, n)),
        "ones": np.ones((m, n)),
        "rank one": np.outer(np.arange(m), np.arange(1, n + 1)) / m,
        "null space": q[:, :5] @ rng(7).standard_normal((5, n)),
        "graded": q @ np.diag(np.logspace(-4, 4, n)),
        "tiny": 1e-30 * rng(8).standard_normal((m, n)),
        "huge": 1e37 * rng(9).standard_normal((m, n)) / 8,
    }
    x = np.stack(list(cases.values())).astype(dtype)
    for full in (False, True):
        u, s, vh, info = batchlin.svd_ex(torch.from_numpy(x).cuda(), full_matrices=full)
        info = info.cpu().numpy().view(np.uint32)
        assert not (info & (batchlin.INFO_NONFINITE | batchlin.INFO_NOT_CONVERGED)).any()
        for k, name in enumerate(cases):
            xk = x[k].astype(np.float64)
            sc = max(np.abs(xk).max(), 1e-300)
            check_svd(xk / sc, u[k].cpu().numpy(), s[k].cpu().numpy().astype(np.float64) / sc,
                      vh[k].cpu().numpy(),
                      GTOL[dtype])
        rd = [bool(i & batchlin.INFO_RANK_DEFICIENT) for i in info]
        # The graded case's smallest singular value is 1e-8 of its largest: below the rank
        # rule's max(m, n) eps in float32, above it in float64.
        assert rd[:4] == [True, True, True, True] and rd[4] == (dtype == "float32")


@needs_torch_cuda
@needs_backend
def test_torch_cuda_svd_small_values_relative_accuracy():
    """One-sided Jacobi gives small singular values to high relative accuracy: a graded
    matrix D1 B D2 with well-conditioned B."""
    n = 16
    b = np.eye(n) + 0.1 * rng(10).standard_normal((n, n))
    d = np.logspace(0, -12, n)
    x = (b * d[None, :])[None]
    s = batchlin.svdvals(torch.from_numpy(x).cuda()).cpu().numpy()[0]
    ref = _jacobi_svdvals_longdouble(x[0])
    assert np.max(np.abs(s - ref) / ref) < 1e-10


def _jacobi_svdvals_longdouble(x):
    """An independent reference: one-sided Jacobi in extended precision (NumPy's
    longdouble), to convergence."""
    a = x.astype(np.longdouble).copy()
    n = a.shape[1]
    for _ in range(60):
        rotated = False
        for i in range(n - 1):
            for j in range(i + 1, n):
                aii, ajj, aij = a[:, i] @ a[:, i], a[:, j] @ a[:, j], a[:, i] @ a[:, j]
                if abs(aij) <= 1e-19 * np.sqrt(aii * ajj):
                    continue
                rotated = True
                zeta = (ajj - aii) / (2 * aij)
                t = np.sign(zeta) / (abs(zeta) + np.sqrt(1 + zeta * zeta)) if zeta != 0 else 1
                c = 1 / np.sqrt(1 + t * t)
                sn = c * t
                ai, aj = a[:, i].copy(), a[:, j].copy()
                a[:, i], a[:, j] = c * ai - sn * aj, sn * ai + c * aj
        if not rotated:
            break
    return np.sort(np.sqrt((a * a).sum(axis=0)).astype(np.float64))[::-1]


@needs_torch_cuda
@needs_backend
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_torch_cuda_eigh_svd_nan_isolated(dtype):
    x = _sym(rng(11).standard_normal((6, 9, 9))).astype(dtype)
    x[1, 2, 3] = x[1, 3, 2] = np.nan
    x[4, 0, 0] = np.inf
    a = torch.from_numpy(x).cuda()
    bad, good = [1, 4], [0, 2, 3, 5]
    w, v, info = batchlin.eigh_ex(a)
    info = info.cpu().numpy().view(np.uint32)
    assert all(info[i] & batchlin.INFO_NONFINITE for i in bad)
    assert not any(info[i] & batchlin.INFO_NONFINITE for i in good)
    assert torch.isnan(w[bad]).all() and torch.isnan(v[bad]).all()
    check_eigh(x[good], w[good].cpu().numpy(), v[good].cpu().numpy(), GTOL[dtype])
    u, s, vh, info = batchlin.svd_ex(a[:, :, :7])
    info = info.cpu().numpy().view(np.uint32)
    assert all(info[i] & batchlin.INFO_NONFINITE for i in bad)
    assert torch.isnan(u[bad]).all() and torch.isnan(s[bad]).all() and torch.isnan(vh[bad]).all()
    check_svd(x[good][:, :, :7], u[good].cpu().numpy(), s[good].cpu().numpy(),
              vh[good].cpu().numpy(), GTOL[dtype])


@needs_torch_cuda
@needs_backend
def test_torch_cuda_eigh_svd_strided_and_empty():
    base = torch.from_numpy(rng(12).standard_normal((4, 3, 9, 9))).cuda()
    for name, t in {"transposed": base.mT, "sliced": base[:, 1], "stepped": base[::2, :, ::1, :],
                    "broadcast": base[:1, :1].expand(4, 3, 9, 9)}.items():
        xn = t.cpu().numpy()
        w, v = batchlin.eigh(t, UPLO="U")
        check_eigh(np.triu(xn) + np.triu(xn, 1).swapaxes(-1, -2), w.cpu().numpy(),
                   v.cpu().numpy(), 1e-11)
        u, s, vh = batchlin.svd(t[..., :, :6])
        check_svd(xn[..., :, :6], u.cpu().numpy(), s.cpu().numpy(), vh.cpu().numpy(), 1e-11)
    for shape in [(0, 4, 4), (3, 0, 0)]:
        a = torch.zeros(shape, device="cuda")
        w, v, info = batchlin.eigh_ex(a)
        assert w.shape == shape[:-1] and v.shape == shape and not info.any()
    for shape in [(0, 4, 3), (3, 0, 4), (3, 4, 0)]:
        a = torch.zeros(shape, device="cuda")
        for full in (False, True):
            got = batchlin.svd_ex(a, full_matrices=full)
            ref = batchlin.svd_ex(a.cpu(), full_matrices=full)
            for g, r in zip(got[:3], ref[:3]):
                assert g.device == a.device and torch.equal(g.cpu(), r)


@needs_torch_cuda
@needs_backend
def test_torch_cuda_eigh_svd_stream_and_graph():
    a = torch.randn(128, 32, 32, device="cuda")
    a = a + a.mT
    batchlin.eigh(a)
    batchlin.svd(a)
    torch.cuda.synchronize()
    s = torch.cuda.Stream()
    with torch.cuda.stream(s):
        torch.cuda._sleep(1_000_000_000)
        b = a * 2
        w, v = batchlin.eigh(b)
        u, sv, vh = batchlin.svd(b)
        busy = not s.query()
    s.synchronize()
    assert busy, "eigh/svd synchronised with the GPU"
    check_eigh(b.cpu().numpy(), w.cpu().numpy(), v.cpu().numpy(), 2e-4)
    check_svd(b.cpu().numpy(), u.cpu().numpy(), sv.cpu().numpy(), vh.cpu().numpy(), 2e-4)
    # CUDA graph capture: replayed on new data.
    g = torch.cuda.CUDAGraph()
    s2 = torch.cuda.Stream()
    s2.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(s2):
        batchlin.eigvalsh(a)
        batchlin.svdvals(a)
    torch.cuda.current_stream().wait_stream(s2)
    with torch.cuda.graph(g):
        wg = batchlin.eigvalsh(a)
        sg = batchlin.svdvals(a)
    c = torch.randn_like(a)
    a.copy_(c + c.mT)
    g.replay()
    torch.cuda.synchronize()
    an = a.cpu().numpy().astype(np.float64)
    assert rel(wg.cpu().numpy(), np.linalg.eigvalsh(an)) < 1e-4
    assert rel(sg.cpu().numpy(), np.linalg.svd(an, compute_uv=False)) < 1e-4


@needs_torch_cuda
@needs_backend
def test_torch_cuda_eigh_svd_autograd_and_compile():
    from torch.autograd import gradcheck

    g = torch.Generator(device="cuda").manual_seed(3)
    a = torch.randn(2, 5, 5, dtype=torch.float64, device="cuda", generator=g)
    a = (a + a.mT).requires_grad_(True)
    # Losses blind to the eigenvectors' and singular vectors' signs; eigh reads one
    # triangle, so it is checked on symmetric functions of the input (as torch.linalg's).
    sym = lambda t: (t + t.mT) / 2  # noqa: E731
    assert gradcheck(lambda t: batchlin.eigvalsh(sym(t)), (a,))
    assert gradcheck(lambda t: (lambda w, v: (w, v * v))(*batchlin.eigh(sym(t))), (a,))
    b = torch.randn(2, 6, 4, dtype=torch.float64, device="cuda", generator=g, requires_grad=True)
    assert gradcheck(lambda t: batchlin.svdvals(t), (b,))
    assert gradcheck(lambda t: (lambda u, s, vh: (s, u @ vh))(*batchlin.svd(t)), (b,))
    # Against torch.linalg's gradients.
    for lib_f, ref_f, x in ((batchlin.eigvalsh, torch.linalg.eigvalsh, a),
                            (batchlin.svdvals, torch.linalg.svdvals, b)):
        (g1,) = torch.autograd.grad((lib_f(x) ** 2).sum(), x)
        (g2,) = torch.autograd.grad((ref_f(x) ** 2).sum(), x)
        assert g1.device == x.device and torch.allclose(g1, g2, atol=1e-10)

    from torch import _dynamo

    _dynamo.reset()

    @torch.compile(fullgraph=True, backend="aot_eager")
    def f(t):
        w, v = batchlin.eigh(t)
        u, s, vh = batchlin.svd(t)
        return w.sum() + (s * s).sum() + (v @ v.mT).sum() + (u @ vh).abs().sum()

    out = f(a)
    (gc,) = torch.autograd.grad(out, a)
    a2 = a.detach().clone().requires_grad_(True)
    w, v = batchlin.eigh(a2)
    u, s, vh = batchlin.svd(a2)
    ref = w.sum() + (s * s).sum() + (v @ v.mT).sum() + (u @ vh).abs().sum()
    (gr,) = torch.autograd.grad(ref, a2)
    assert torch.allclose(out, ref) and torch.allclose(gc, gr)


@needs_cupy
@needs_backend
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_cupy_eigh_svd(dtype):
    x = rng(13).standard_normal((5, 3, 12, 12)).astype(dtype)
    xs = _sym(x)
    a = cupy.asarray(xs)
    w, v = batchlin.eigh(a)
    assert isinstance(w, cupy.ndarray) and isinstance(v, cupy.ndarray)
    check_eigh(xs, cupy.asnumpy(w), cupy.asnumpy(v), GTOL[dtype])
    assert rel(cupy.asnumpy(batchlin.eigvalsh(a.swapaxes(-1, -2), UPLO="U")),
               np.linalg.eigvalsh(xs.astype(np.float64))) < GTOL[dtype]
    b = cupy.asarray(x[..., :, :7])
    u, s, vh = batchlin.svd(b)
    assert isinstance(u, cupy.ndarray)
    check_svd(x[..., :, :7], cupy.asnumpy(u), cupy.asnumpy(s), cupy.asnumpy(vh), GTOL[dtype])
    st = cupy.cuda.Stream(non_blocking=True)
    with st:
        sv = batchlin.svdvals(b.swapaxes(-1, -2))
    st.synchronize()
    assert rel(cupy.asnumpy(sv), np.linalg.svd(x[..., :, :7].astype(np.float64), compute_uv=False)) < GTOL[dtype]


@pytest.mark.parametrize("call", ["eager", "jit"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_jax_gpu_eigh_svd(jax_gpu, dtype, call):
    jax, gpu = jax_gpu
    x = rng(14).standard_normal((4, 10, 10)).astype(dtype)
    xs = _sym(x)

    def run(f, *args):
        return jax.jit(f)(*args) if call == "jit" else f(*args)

    w, v = run(batchlin.eigh, jax.device_put(xs, gpu))
    assert _on_gpu(jax, w) and _on_gpu(jax, v)
    check_eigh(xs, np.asarray(w), np.asarray(v), GTOL[dtype])
    w2 = run(batchlin.eigvalsh, jax.device_put(xs, gpu))
    assert rel(np.asarray(w2), np.asarray(w)) < GTOL[dtype]
    b = jax.device_put(x[:, :, :6], gpu)
    u, s, vh = run(batchlin.svd, b)
    assert _on_gpu(jax, u)
    check_svd(x[:, :, :6], np.asarray(u), np.asarray(s), np.asarray(vh), GTOL[dtype])
    s2 = run(batchlin.svdvals, b)
    assert rel(np.asarray(s2), np.asarray(s)) < GTOL[dtype]
    # vmap: the mapped axis is one more batch axis.
    wv = jax.vmap(batchlin.eigvalsh)(jax.device_put(xs[None].repeat(3, 0), gpu))
    assert wv.shape == (3, 4, 10) and rel(np.asarray(wv[1]), np.asarray(w2)) < GTOL[dtype]
