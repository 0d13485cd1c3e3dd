"""Input kinds (NumPy, lists, torch CPU, JAX CPU, generic DLPack), strides, dtypes and
errors."""

import numpy as np
import pytest

import batchlin
from conftest import check_eigh, check_qr, check_svd, rng

# ---------------------------------------------------------------------------------------
# Strides: read where the memory lies


def strided_views():
    base = rng(10).standard_normal((6, 9, 8))
    return {
        "contiguous": base[:, :5, :5],
        "transposed": base.transpose(0, 2, 1),
        "fortran": np.asfortranarray(base),
        "sliced": base[::2, 1::2, ::2],
        "negative": base[::-1, ::-1, ::-2],
        "batch_last": np.moveaxis(base, 0, -1)[..., :6, :],  # (9, 8, 6) -> [..., 8, 6]
        "broadcast": np.broadcast_to(base[0], (3, 9, 8)),
        "nested_batch": base.reshape(2, 3, 9, 8)[:, ::-1],
    }


@pytest.mark.parametrize("name", list(strided_views()))
def test_any_strides(name):
    a = strided_views()[name]
    dense = np.ascontiguousarray(a)
    q, r = batchlin.qr(a)
    check_qr(a, q, r, 1e-12)
    q2, r2 = batchlin.qr(dense)
    assert np.allclose(q, q2, atol=1e-13) and np.allclose(r, r2, atol=1e-13)
    u, s, vh = batchlin.svd(a)
    check_svd(a, u, s, vh, 1e-12)
    if a.shape[-1] == a.shape[-2]:
        w, v = batchlin.eigh(a)
        check_eigh(np.tril(a) + np.tril(a, -1).swapaxes(-1, -2), w, v, 1e-12)


def test_unaligned_and_foreign_byte_order():
    raw = np.zeros(8 * 16 + 1, np.uint8)[1:].view(np.float64)  # misaligned by one byte
    assert not raw.flags.aligned
    raw[:] = rng(11).standard_normal(16)
    a = raw.reshape(4, 4)
    q, r = batchlin.qr(a)
    check_qr(a, q, r, 1e-12)
    big = np.asarray(a, dtype=">f8")
    assert np.allclose(batchlin.qr(big).R, r)
    assert batchlin.qr(big).R.dtype == np.float64


def test_readonly_input_is_not_written():
    a = rng(12).standard_normal((3, 5, 5))
    a.flags.writeable = False
    before = a.copy()
    batchlin.svd(a)
    batchlin.eigh(a)
    assert np.array_equal(a, before)


# ---------------------------------------------------------------------------------------
# dtypes (see batchlin/_front.py for the rules)


@pytest.mark.parametrize("dtype", [np.int8, np.int32, np.int64, np.uint16, np.bool_])
def test_integers_and_bool_computed_in_float64(dtype):
    a = (rng(13).integers(0, 5, (3, 4, 4)) % 2 if dtype is np.bool_ else
         rng(13).integers(0, 5, (3, 4, 4))).astype(dtype)
    ref = np.linalg.qr(a)  # numpy.linalg promotes these to float64 too
    got = batchlin.qr(a)
    assert got.Q.dtype == ref.Q.dtype == np.float64
    check_qr(a.astype(np.float64), got.Q, got.R, 1e-12)
    assert batchlin.svdvals(a).dtype == np.float64
    assert batchlin.eigvalsh(a).dtype == np.float64


def test_float16_computed_in_float32():
    a = rng(14).standard_normal((3, 5, 5)).astype(np.float16)
    with pytest.raises(TypeError):
        np.linalg.qr(a)  # numpy.linalg rejects float16; batchlin computes it in float32
    q, r = batchlin.qr(a)
    assert q.dtype == np.float32 and r.dtype == np.float32
    check_qr(a.astype(np.float32), q, r, 1e-5)
    assert batchlin.eigvalsh(a).dtype == np.float32


@pytest.mark.parametrize("dtype", [np.complex64, np.complex128])
def test_complex_rejected(dtype):
    a = np.eye(3, dtype=dtype)
    for f in (batchlin.qr, batchlin.eigh, batchlin.svd, batchlin.svdvals, batchlin.eigvalsh):
        with pytest.raises(ValueError, match="complex"):
            f(a)
        with pytest.raises(TypeError):  # DTypeError is both, like numpy.linalg's TypeError
            f(a)


# ---------------------------------------------------------------------------------------
# Errors


@pytest.mark.parametrize("bad", [None, "abc", b"xy", {"a": 1}, object(), [[1, 2], [3]],
                                 [["a", "b"], ["c", "d"]]])
def test_not_an_array_is_type_error(bad):
    for f in (batchlin.qr, batchlin.eigh, batchlin.svd):
        with pytest.raises(TypeError, match="expects an array"):
            f(bad)


def test_shape_and_argument_errors():
    with pytest.raises(ValueError, match="at least 2 dimensions"):
        batchlin.qr(np.ones(3))
    with pytest.raises(ValueError, match="at least 2 dimensions"):
        batchlin.svd(5.0)
    with pytest.raises(ValueError, match="square"):
        batchlin.eigh(np.ones((2, 3, 4)))
    with pytest.raises(ValueError, match="square"):
        batchlin.eigvalsh(np.ones((3, 4)))
    with pytest.raises(ValueError, match="mode"):
        batchlin.qr(np.eye(3), mode="economic")
    with pytest.raises(ValueError, match="UPLO"):
        batchlin.eigh(np.eye(3), UPLO="X")
    with pytest.raises(ValueError, match="backend"):
        batchlin.svd(np.eye(3), backend="tpu")
    with pytest.raises(batchlin.UnavailableError):
        if batchlin._front.gpu_absent_reason() is not None:
            batchlin.qr(np.eye(3), backend="cuda")
        else:
            raise batchlin.UnavailableError("skip: a GPU is present")


# ---------------------------------------------------------------------------------------
# Input kinds


def test_nested_lists():
    a = [[[4, 1], [1, 3]], [[2, 0], [0, 5]]]
    w, v = batchlin.eigh(a)
    assert isinstance(w, np.ndarray) and w.dtype == np.float64
    assert np.allclose(w, np.linalg.eigvalsh(np.array(a, float)))
    assert isinstance(batchlin.qr([[1.0, 2.0], [3.0, 4.0]]).Q, np.ndarray)
    assert np.allclose(batchlin.svdvals(((3.0, 0.0), (0.0, 4.0))), [4.0, 3.0])


def test_torch_cpu_in_torch_out(torch):
    a = torch.randn(5, 6, 4, dtype=torch.float64)
    q, r = batchlin.qr(a)
    assert isinstance(q, torch.Tensor) and q.dtype == torch.float64 and q.device == a.device
    check_qr(a.numpy(), q.numpy(), r.numpy(), 1e-12)
    s = batchlin.svdvals(a)
    assert isinstance(s, torch.Tensor)
    assert torch.allclose(s, torch.linalg.svdvals(a))
    b = a[..., :4, :] + a[..., :4, :].mT
    w, v = batchlin.eigh(b)
    assert torch.allclose(w, torch.linalg.eigvalsh(b))
    res = batchlin.svd_ex(a)
    assert res.info.dtype == torch.int32 and res.info.shape == (5,)
    # strided and non-contiguous tensors are read in place
    t = torch.randn(4, 7, 7, dtype=torch.float64).transpose(-1, -2)[:, 1:, ::2]
    q, r = batchlin.qr(t)
    check_qr(t.numpy(), q.numpy(), r.numpy(), 1e-12)


def test_torch_dtypes(torch):
    assert batchlin.qr(torch.eye(3, dtype=torch.float32)).R.dtype == torch.float32
    assert batchlin.qr(torch.eye(3, dtype=torch.float16)).R.dtype == torch.float32
    assert batchlin.qr(torch.eye(3, dtype=torch.bfloat16)).R.dtype == torch.float32
    assert batchlin.qr(torch.eye(3, dtype=torch.int64)).R.dtype == torch.float64
    assert batchlin.svdvals(torch.ones(2, 2, dtype=torch.bool)).dtype == torch.float64
    with pytest.raises(ValueError, match="complex"):
        batchlin.qr(torch.eye(3, dtype=torch.complex64))
    with pytest.raises(ValueError, match="2 dimensions"):
        batchlin.qr(torch.ones(3))
    with pytest.raises(ValueError, match="square"):
        batchlin.eigh(torch.ones(3, 4))
    neg = torch.randn(3, 3, dtype=torch.float64)._neg_view()
    assert torch.allclose(batchlin.svdvals(neg), torch.linalg.svdvals(neg.resolve_neg()))


def test_jax_cpu_in_jax_out(jax):
    import jax.numpy as jnp

    a = jnp.asarray(rng(15).standard_normal((4, 6, 5)))
    assert a.dtype == jnp.float64
    q, r = batchlin.qr(a)
    assert isinstance(q, jax.Array) and q.dtype == jnp.float64
    check_qr(np.asarray(a), np.asarray(q), np.asarray(r), 1e-12)
    u, s, vh = batchlin.svd(a)
    assert isinstance(s, jax.Array)
    check_svd(np.asarray(a), np.asarray(u), np.asarray(s), np.asarray(vh), 1e-12)
    b = a[..., :5, :] + a[..., :5, :].mT
    w, v = batchlin.eigh(b)
    assert isinstance(w, jax.Array)
    assert np.allclose(np.asarray(w), np.asarray(jnp.linalg.eigvalsh(b)), atol=1e-12)
    info = batchlin.svd_ex(a).info
    assert isinstance(info, jax.Array) and info.shape == (4,)
    big = jnp.ones((64, 32, 32), jnp.float32)  # large outputs go through DLPack
    assert isinstance(batchlin.qr(big).R, jax.Array)
    assert batchlin.svdvals(jnp.eye(3, dtype=jnp.bfloat16)).dtype == jnp.float32
    assert batchlin.qr(jnp.eye(3, dtype=jnp.int32)).R.dtype == jnp.float64
    # traced values go through XLA's FFI as concrete ones do (test_jax.py)
    assert np.allclose(np.asarray(jax.jit(lambda x: batchlin.qr(x).R)(a)), np.asarray(r))


def test_generic_dlpack_producer():
    class Producer:
        """Anything with __dlpack__ on the CPU."""

        def __init__(self, x):
            self.x = x

        def __dlpack__(self, **kw):
            return self.x.__dlpack__(**kw)

        def __dlpack_device__(self):
            return self.x.__dlpack_device__()

    x = rng(16).standard_normal((2, 4, 3))
    q, r = batchlin.qr(Producer(x))
    check_qr(x, q, r, 1e-12)

    class GpuProducer(Producer):
        def __dlpack_device__(self):
            return (2, 0)  # kDLCUDA

    with pytest.raises(batchlin.UnavailableError, match="cuda:0"):
        batchlin.qr(GpuProducer(x))


def test_numpy_subclass():
    class Sub(np.ndarray):
        pass

    m = np.array([[2.0, 1.0], [1.0, 2.0]]).view(Sub)
    w = batchlin.eigvalsh(m)
    assert type(w) is np.ndarray and np.allclose(w, [1.0, 3.0])
