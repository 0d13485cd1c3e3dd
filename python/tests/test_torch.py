"""PyTorch: custom ops (opcheck), autograd (gradcheck in float64, agreement with
torch.linalg's gradients, the degenerate cases torch.linalg documents) and
torch.compile(fullgraph=True)."""

import pytest

torch = pytest.importorskip("torch", reason="torch is not installed")

import batchlin  # noqa: E402
import batchlin.torch  # noqa: E402,F401  (the ops: conftest imports batchlin before torch)
from torch.autograd import gradcheck  # noqa: E402


def randn(*shape, grad=True):
    g = torch.Generator().manual_seed(hash(shape) % 2**31)
    return torch.randn(*shape, dtype=torch.float64, generator=g).requires_grad_(grad)


def sym(a):
    return a + a.mT


# ---------------------------------------------------------------------------------------
# The ops themselves


def test_ops_registered_and_checked():
    from torch.library import opcheck

    a = torch.randn(3, 5, 4, dtype=torch.float64)
    s = sym(torch.randn(3, 4, 4, dtype=torch.float64))
    opcheck(torch.ops.batchlin.qr.default, (a, "reduced", "auto"))
    opcheck(torch.ops.batchlin.qr.default, (a.mT.contiguous(), "complete", "auto"),
            test_utils=("test_schema", "test_faketensor"))
    opcheck(torch.ops.batchlin.qr.default, (a, "r", "auto"),
            test_utils=("test_schema", "test_faketensor"))
    opcheck(torch.ops.batchlin.eigh.default, (s, "L", "auto"))
    opcheck(torch.ops.batchlin.eigvalsh.default, (s, "U", "auto"))
    opcheck(torch.ops.batchlin.svd.default, (a, False, "auto"))
    opcheck(torch.ops.batchlin.svd.default, (a, True, "auto"),
            test_utils=("test_schema", "test_faketensor"))
    opcheck(torch.ops.batchlin.svdvals.default, (a, "auto"))


@pytest.mark.parametrize("op", ["qr", "eigh", "eigvalsh", "svd", "svdvals"])
def test_ops_refuse_other_types_and_layouts_naming_the_op(op):
    # The front doors promote; the ops take float32 and float64 alone (their outputs'
    # type is the input's), as on CUDA tensors, and say so.
    a = torch.randn(2, 4, 4)
    for bad in (a.bfloat16(), a.half(), a.int(), a > 0, a.to(torch.complex64)):
        with pytest.raises(batchlin.DTypeError, match=f"torch.ops.batchlin.{op} takes"):
            getattr(torch.ops.batchlin, op)(bad)
    with pytest.raises(TypeError, match=f"batchlin.{op}: torch.sparse_coo tensors"):
        getattr(torch.ops.batchlin, op)(a[0].to_sparse())
    with pytest.raises(TypeError, match=f"batchlin.{op}: torch.sparse_coo tensors"):
        getattr(batchlin, op)(a[0].to_sparse())


def test_ops_autograd_kernel_records_backward_and_skips_it_when_not_needed():
    # The ops' own autograd kernel: with a gradient needed it records the backward (the
    # same gradient as batchlin.qr's); with none (no_grad, or no input requiring grad)
    # it calls the kernel directly and the outputs carry no graph.
    a = randn(2, 5, 3)
    q, r, info = torch.ops.batchlin.qr(a)
    assert q.grad_fn is not None and r.requires_grad and info.dtype == torch.int32
    (g,) = torch.autograd.grad(q.sum() + (r * r).sum(), a)
    q2, r2 = batchlin.qr(a)
    (g2,) = torch.autograd.grad(q2.sum() + (r2 * r2).sum(), a)
    assert torch.allclose(g, g2)
    w, v, _ = torch.ops.batchlin.eigh.default(sym(a[..., :3, :]), "U")
    assert w.grad_fn is not None
    s, _ = torch.ops.batchlin.svdvals(a)
    (gs,) = torch.autograd.grad(s.sum(), a)
    assert torch.allclose(gs, _grad(lambda a: torch.linalg.svdvals(a).sum(), a))
    with torch.no_grad():
        q, r, _ = torch.ops.batchlin.qr(a, "complete")
    assert not q.requires_grad and q.grad_fn is None and q.shape == (2, 5, 5)
    u, s, vh, info = torch.ops.batchlin.svd(a.detach(), True)
    assert u.grad_fn is None and (u.shape, s.shape, vh.shape) == ((2, 5, 5), (2, 3), (2, 3, 3))


def test_ops_meta_fake_and_dispatch_modes():
    # Below autograd, anything but a plain CPU/CUDA tensor (meta, fake, a dispatch mode)
    # goes through the dispatcher again: the fake kernel's shapes, and the mode sees it.
    from torch._subclasses.fake_tensor import FakeTensorMode
    from torch.utils._python_dispatch import TorchDispatchMode

    m = torch.empty(4, 6, 3, device="meta")
    q, r, info = torch.ops.batchlin.qr(m)
    assert (q.shape, r.shape, info.shape, info.dtype) == ((4, 6, 3), (4, 3, 3), (4,), torch.int32)
    q, r, _ = torch.ops.batchlin.qr(m, "r")
    assert (q.shape, r.shape) == ((0,), (4, 3, 3))
    u, s, vh, _ = torch.ops.batchlin.svd(m.requires_grad_(), True)
    assert (u.shape, s.shape, vh.shape) == ((4, 6, 6), (4, 3), (4, 3, 3)) and u.requires_grad
    with FakeTensorMode():
        f = torch.empty(2, 5, 5, dtype=torch.float64)
        w, v, info = torch.ops.batchlin.eigh(f)
        assert (w.shape, v.shape, info.shape) == ((2, 5), (2, 5, 5), (2,))
        (w,) = torch.ops.batchlin.eigvalsh(f)[:1]
        assert w.shape == (2, 5)

    seen = []

    class Spy(TorchDispatchMode):
        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            seen.append(str(func))
            return func(*args, **(kwargs or {}))

    a = randn(2, 4, 4, grad=False)
    with Spy():
        s, _ = torch.ops.batchlin.svdvals(a)
    assert "batchlin.svdvals.default" in seen
    assert torch.allclose(s, torch.linalg.svdvals(a))


def test_host_register_takes_cpu_tensors_and_refuses_the_rest():
    t = torch.zeros(4, 8, 8)
    with pytest.raises(ValueError, match="not contiguous"):
        batchlin.host_register(t.transpose(-1, -2))
    with pytest.raises(ValueError, match="not registered"):
        batchlin.host_unregister(t)
    if batchlin._front.gpu_absent_reason() is not None:
        with pytest.raises(batchlin.UnavailableError):
            batchlin.host_register(t)
        return
    if torch.cuda.is_available():
        with pytest.raises(ValueError, match="only host memory"):
            batchlin.host_register(t.cuda())
    batchlin.host_register(t)
    assert batchlin._pinned[t.data_ptr()][0] is t
    # Given other memory, the tensor is still unregistered by identity, and the storage
    # registered stayed alive until then.
    t.set_(torch.zeros(1024))
    batchlin.host_unregister(t)
    assert not batchlin._pinned


def test_results_are_named_like_torch():
    a = torch.randn(2, 4, 4, dtype=torch.float64)
    assert batchlin.qr(a).Q.shape == (2, 4, 4)
    e = batchlin.eigh(sym(a))
    assert e.eigenvalues is e[0] and e.eigenvectors is e[1]
    s = batchlin.svd(a)
    assert (s.U, s.S, s.Vh) == tuple(s)


# ---------------------------------------------------------------------------------------
# gradcheck, float64


@pytest.mark.parametrize("shape", [(2, 5, 3), (2, 4, 4), (2, 3, 5), (6, 2)])
def test_gradcheck_qr_reduced(shape):
    assert gradcheck(lambda a: tuple(batchlin.qr(a)), (randn(*shape),))


@pytest.mark.parametrize("shape", [(2, 4, 4), (2, 3, 5)])
def test_gradcheck_qr_complete(shape):
    assert gradcheck(lambda a: tuple(batchlin.qr(a, mode="complete")), (randn(*shape),))


@pytest.mark.parametrize("n", [1, 3, 6])
def test_gradcheck_eigh(n):
    a = randn(2, n, n)
    # The input is symmetrised: eigh reads one triangle, and its gradient (like
    # torch.linalg.eigh's) is the symmetric one.
    assert gradcheck(lambda a: tuple(batchlin.eigh(sym(a))), (a,))
    assert gradcheck(lambda a: tuple(batchlin.eigh(sym(a), UPLO="U")), (a,))
    assert gradcheck(lambda a: batchlin.eigvalsh(sym(a)), (a,))


@pytest.mark.parametrize("shape", [(2, 5, 3), (2, 4, 4), (2, 3, 5)])
def test_gradcheck_svd(shape):
    assert gradcheck(lambda a: tuple(batchlin.svd(a)), (randn(*shape),))
    assert gradcheck(lambda a: batchlin.svdvals(a), (randn(*shape),))


@pytest.mark.parametrize("shape", [(2, 5, 3), (2, 3, 5)])
def test_gradcheck_svd_full_matrices(shape):
    # As torch.linalg.svd: the gradients of U[..., :, K:] and Vh[..., K:, :] are ignored,
    # so the loss uses the first K columns and rows.
    k = min(shape[-2:])

    def f(a):
        u, s, vh = batchlin.svd(a, full_matrices=True)
        return u[..., :, :k], s, vh[..., :k, :]

    assert gradcheck(f, (randn(*shape),))


def test_gradcheck_through_ops_directly():
    a = randn(2, 4, 4)
    assert gradcheck(lambda a: torch.ops.batchlin.eigvalsh(sym(a), "L", "auto")[0], (a,))
    assert gradcheck(lambda a: torch.ops.batchlin.svdvals(a, "auto")[0], (a,))


# ---------------------------------------------------------------------------------------
# Agreement with torch.linalg's own gradients (gauge-invariant losses)


def _grad(f, a):
    a = a.detach().clone().requires_grad_(True)
    (g,) = torch.autograd.grad(f(a), a)
    return g


@pytest.mark.parametrize("shape", [(3, 6, 4), (3, 4, 6), (3, 5, 5)])
def test_gradients_match_torch_linalg(shape):
    a = randn(*shape, grad=False)
    w = torch.randn(shape, dtype=torch.float64)

    def loss_qr(lib):
        # Invariant to the signs of Q's columns and R's rows (LAPACK's R may have a
        # negative diagonal; batchlin's has not).
        def f(a):
            q, r = lib.qr(a)
            m, n = a.shape[-2:]
            return ((q @ q.mT) * w[..., :m, :1]).sum() + (r.abs() * w[..., : r.shape[-2], :n]).sum()
        return f

    assert torch.allclose(_grad(loss_qr(batchlin), a), _grad(loss_qr(torch.linalg), a), atol=1e-10)

    def loss_svd(lib):
        def f(a):
            u, s, vh = lib.svd(a, full_matrices=False)
            return ((u * s.unsqueeze(-2)) @ vh * w).sum() + (s ** 3).sum() + ((u @ vh) * w).sum()
        return f

    assert torch.allclose(_grad(loss_svd(batchlin), a), _grad(loss_svd(torch.linalg), a), atol=1e-10)
    if shape[-1] == shape[-2]:
        def loss_eigh(lib):
            def f(a):
                e, v = lib.eigh(sym(a))
                return (e ** 2).sum() + ((v * v) @ e.unsqueeze(-1)).sum() + ((v @ v.mT) * w).sum()
            return f

        assert torch.allclose(_grad(loss_eigh(batchlin), a), _grad(loss_eigh(torch.linalg), a),
                              atol=1e-10)


# ---------------------------------------------------------------------------------------
# Degenerate cases, as torch.linalg documents them


def test_eigvalsh_gradient_finite_for_repeated_eigenvalues():
    a = torch.eye(4, dtype=torch.float64).repeat(2, 1, 1)
    a[1, 2, 2] = 3.0
    for f in (lambda a: batchlin.eigvalsh(a), lambda a: batchlin.eigh(a).eigenvalues):
        g = _grad(lambda a: (f(a) * torch.arange(1.0, 5.0, dtype=torch.float64)).sum(), a)
        ref = _grad(lambda a: (torch.linalg.eigvalsh(a) * torch.arange(1.0, 5.0, dtype=torch.float64)).sum(), a)
        assert torch.isfinite(g).all()
        # Any orthonormal basis of a repeated eigenspace is valid, so compare the
        # gradient's action on that space: the trace of each block.
        assert torch.allclose(g.diagonal(dim1=-2, dim2=-1).sum(-1), ref.diagonal(dim1=-2, dim2=-1).sum(-1))
        assert torch.allclose(g, g.mT)


def test_eigh_vector_gradient_nonfinite_for_repeated_eigenvalues():
    # torch.linalg.eigh: gradients through the eigenvectors are finite only for distinct
    # eigenvalues. A loss that depends on the basis chosen inside a repeated eigenspace
    # gets the same non-finite gradient from batchlin as from torch, not a wrong finite one.
    a = torch.diag(torch.tensor([1.0, 1.0, 2.0], dtype=torch.float64))
    w = torch.randn(3, 3, dtype=torch.float64)
    g = _grad(lambda a: (batchlin.eigh(a).eigenvectors * w).sum(), a)
    ref = _grad(lambda a: (torch.linalg.eigh(a).eigenvectors * w).sum(), a)
    assert not torch.isfinite(g).all()
    assert not torch.isfinite(ref).all()


def test_svdvals_gradient_finite_for_repeated_and_zero_singular_values():
    for a in (torch.eye(3, dtype=torch.float64),           # repeated
              torch.zeros(3, 4, dtype=torch.float64),      # all zero, rectangular
              torch.ones(4, 2, dtype=torch.float64)):      # rank one, a zero value
        g = _grad(lambda a: batchlin.svdvals(a).sum(), a)
        ref = _grad(lambda a: torch.linalg.svdvals(a).sum(), a)
        assert torch.isfinite(g).all()
        # The gradient of the nuclear norm is a subgradient; both must be one: <g, A> = ||A||_*.
        assert torch.allclose((g * a).sum(), torch.linalg.svdvals(a).sum())
        assert torch.allclose((ref * a).sum(), (g * a).sum())
        g2 = _grad(lambda a: batchlin.svd(a).S.sum(), a)
        assert torch.isfinite(g2).all()


def test_svd_vector_gradient_nonfinite_for_repeated_singular_values():
    a = torch.diag(torch.tensor([2.0, 2.0, 1.0], dtype=torch.float64))
    w = torch.randn(3, 3, dtype=torch.float64)
    g = _grad(lambda a: (batchlin.svd(a).U * w).sum(), a)
    ref = _grad(lambda a: (torch.linalg.svd(a).U * w).sum(), a)
    assert not torch.isfinite(g).all()
    assert not torch.isfinite(ref).all()
    # Rectangular with a zero singular value: U's gradient is not finite either.
    b = torch.tensor([[1.0, 0.0], [0.0, 0.0], [0.0, 0.0]], dtype=torch.float64)
    wb = torch.randn(3, 2, dtype=torch.float64)
    assert not torch.isfinite(_grad(lambda b: (batchlin.svd(b).U * wb).sum(), b)).all()


def test_qr_r_mode_and_complete_tall_not_differentiable():
    a = randn(4, 3)
    with pytest.raises(RuntimeError, match="mode='r'"):
        batchlin.qr(a, mode="r").sum().backward()
    with pytest.raises(RuntimeError, match="complete"):
        q, r = batchlin.qr(a, mode="complete")
        (q.sum() + r.sum()).backward()


def test_no_grad_and_inference_use_the_direct_path():
    a = randn(3, 4, 4)
    with torch.no_grad():
        q, r = batchlin.qr(a)
    assert not q.requires_grad
    with torch.inference_mode():
        assert batchlin.svdvals(torch.randn(2, 3, 3)).shape == (2, 3)
    q, r = batchlin.qr(a)
    assert q.requires_grad and q.grad_fn is not None


# ---------------------------------------------------------------------------------------
# torch.compile


def test_compile_fullgraph_forward_and_backward():
    import torch._dynamo

    torch._dynamo.reset()

    @torch.compile(fullgraph=True, backend="aot_eager")
    def f(a):
        q, r = batchlin.qr(a)
        w, v = batchlin.eigh(a @ a.mT)
        u, s, vh = batchlin.svd(a)
        return q.sum() + (r * r).sum() + w.sum() + batchlin.svdvals(a).sum() \
            + batchlin.eigvalsh(a + a.mT).sum() + (u @ vh).sum() + s.sum()

    a = randn(3, 5, 5)
    out = f(a)
    (g,) = torch.autograd.grad(out, a)
    a2 = a.detach().clone().requires_grad_(True)
    q, r = batchlin.qr(a2)
    w, v = batchlin.eigh(a2 @ a2.mT)
    u, s, vh = batchlin.svd(a2)
    ref = q.sum() + (r * r).sum() + w.sum() + batchlin.svdvals(a2).sum() \
        + batchlin.eigvalsh(a2 + a2.mT).sum() + (u @ vh).sum() + s.sum()
    (g2,) = torch.autograd.grad(ref, a2)
    assert torch.allclose(out, ref)
    assert torch.allclose(g, g2)


def test_compile_inductor_no_grad():
    import torch._dynamo

    torch._dynamo.reset()

    @torch.compile(fullgraph=True, dynamic=True)
    def f(a):
        return batchlin.qr(a).R.sum(-1) + batchlin.svdvals(a)[..., :1]

    a = torch.randn(4, 6, 6)
    with torch.no_grad():
        assert torch.allclose(f(a), batchlin.qr(a).R.sum(-1) + batchlin.svdvals(a)[..., :1], atol=1e-5)
        b = torch.randn(2, 7, 7)
        assert f(b).shape == (2, 7)
