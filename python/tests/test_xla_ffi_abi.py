"""The XLA FFI handlers (crates/batchlin-py/src/xla_ffi.rs) called directly, as XLA calls
them, with call frames built here with ctypes from xla/ffi/api/c_api.h (API 0.3): the
metadata query, the stages with nothing to do, execution on host buffers, errors through
the API table's XLA_FFI_Error_Create, and the CUDA handlers' checks before any GPU work
(the stream and device ordinal taken through the table). Needs neither JAX nor a GPU."""

import ctypes as C

import numpy as np
import pytest

import batchlin
from conftest import check_qr, rng

# ---------------------------------------------------------------------------------------
# c_api.h in ctypes


class ExtensionBase(C.Structure):
    _fields_ = [("struct_size", C.c_size_t), ("type", C.c_int), ("next", C.c_void_p)]


class ApiVersion(C.Structure):
    _fields_ = [("struct_size", C.c_size_t), ("extension_start", C.c_void_p),
                ("major_version", C.c_int), ("minor_version", C.c_int)]


class Buffer(C.Structure):
    _fields_ = [("struct_size", C.c_size_t), ("extension_start", C.c_void_p),
                ("dtype", C.c_int), ("data", C.c_void_p), ("rank", C.c_int64),
                ("dims", C.POINTER(C.c_int64))]


class List(C.Structure):  # XLA_FFI_Args and XLA_FFI_Rets
    _fields_ = [("struct_size", C.c_size_t), ("extension_start", C.c_void_p),
                ("size", C.c_int64), ("types", C.POINTER(C.c_int)),
                ("items", C.POINTER(C.c_void_p))]


class ByteSpan(C.Structure):
    _fields_ = [("ptr", C.c_char_p), ("len", C.c_size_t)]


class Scalar(C.Structure):
    _fields_ = [("dtype", C.c_int), ("value", C.c_void_p)]


class Attrs(C.Structure):
    _fields_ = [("struct_size", C.c_size_t), ("extension_start", C.c_void_p),
                ("size", C.c_int64), ("types", C.POINTER(C.c_int)),
                ("names", C.POINTER(C.POINTER(ByteSpan))), ("attrs", C.POINTER(C.c_void_p))]


class CallFrame(C.Structure):
    _fields_ = [("struct_size", C.c_size_t), ("extension_start", C.c_void_p),
                ("api", C.c_void_p), ("ctx", C.c_void_p), ("stage", C.c_int),
                ("args", List), ("rets", List), ("attrs", Attrs), ("future", C.c_void_p)]


class ErrorCreateArgs(C.Structure):
    _fields_ = [("struct_size", C.c_size_t), ("extension_start", C.c_void_p),
                ("message", C.c_char_p), ("errc", C.c_int)]


class StreamGetArgs(C.Structure):
    _fields_ = [("struct_size", C.c_size_t), ("extension_start", C.c_void_p),
                ("ctx", C.c_void_p), ("stream", C.c_void_p)]


class DeviceOrdinalGetArgs(C.Structure):
    _fields_ = [("struct_size", C.c_size_t), ("extension_start", C.c_void_p),
                ("ctx", C.c_void_p), ("device_ordinal", C.c_int32)]


class Metadata(C.Structure):
    _fields_ = [("struct_size", C.c_size_t), ("api_version", ApiVersion),
                ("traits", C.c_uint32), ("state_type_id", C.c_int64)]


class MetadataExtension(C.Structure):
    _fields_ = [("extension_base", ExtensionBase), ("metadata", C.POINTER(Metadata))]


ERROR_CREATE = C.CFUNCTYPE(C.c_void_p, C.POINTER(ErrorCreateArgs))
STREAM_GET = C.CFUNCTYPE(C.c_void_p, C.POINTER(StreamGetArgs))
ORDINAL_GET = C.CFUNCTYPE(C.c_void_p, C.POINTER(DeviceOrdinalGetArgs))


class Api(C.Structure):
    _fields_ = ([("struct_size", C.c_size_t), ("extension_start", C.c_void_p),
                 ("api_version", ApiVersion), ("internal_api", C.c_void_p),
                 ("error_create", ERROR_CREATE), ("error_get_message", C.c_void_p),
                 ("error_destroy", C.c_void_p), ("handler_register", C.c_void_p),
                 ("stream_get", STREAM_GET)]
                + [(f"unused{i}", C.c_void_p) for i in range(12)]
                + [("device_ordinal_get", ORDINAL_GET)])


HANDLER = C.CFUNCTYPE(C.c_void_p, C.POINTER(CallFrame))
DT = {np.dtype(np.float32): 11, np.dtype(np.float64): 12, np.dtype(np.uint32): 8,
      np.dtype(np.int32): 4}
SENTINEL = 0x5EED  # what our XLA_FFI_Error_Create returns: the handler must hand it back


def test_layout_matches_c_api_h():
    """The sizes c_api.h gives on 64-bit Linux (sizeof; XLA_FFI_*_STRUCT_SIZE)."""
    assert C.sizeof(CallFrame) == 176 and CallFrame.attrs.offset + C.sizeof(Attrs) == 168
    assert C.sizeof(Buffer) == 48 and C.sizeof(Api) == 192
    assert Api.device_ordinal_get.offset == 184 and Api.stream_get.offset == 80
    assert C.sizeof(Metadata) == 48 and Metadata.traits.offset == 32


def handlers():
    get = C.pythonapi.PyCapsule_GetPointer
    get.restype, get.argtypes = C.c_void_p, [C.py_object, C.c_char_p]
    return {(n, p): HANDLER(get(cap, None)) for n, p, cap in batchlin._native.xla_ffi_targets()}


class Frame:
    """A call frame and everything it points to, kept alive together."""

    def __init__(self, args, rets, attrs=None, stage=3, ordinal=0):
        self.keep = []
        self.errors = []
        self.streams = 0
        api = Api()
        api.struct_size = C.sizeof(Api)
        api.api_version = ApiVersion(C.sizeof(ApiVersion), None, 0, 3)

        def error_create(p):
            a = p.contents
            assert a.struct_size >= 28
            self.errors.append((a.errc, a.message.decode()))
            return SENTINEL

        def stream_get(p):
            self.streams += 1
            p.contents.stream = None
            return None

        def ordinal_get(p):
            p.contents.device_ordinal = ordinal
            return None

        api.error_create = ERROR_CREATE(error_create)
        api.stream_get = STREAM_GET(stream_get)
        api.device_ordinal_get = ORDINAL_GET(ordinal_get)
        self.keep += [api, api.error_create, api.stream_get, api.device_ordinal_get]
        f = CallFrame()
        f.struct_size = CallFrame.attrs.offset + C.sizeof(Attrs)
        f.api = C.addressof(api)
        f.ctx = 0xC0C0
        f.stage = stage
        f.args = self.buffers(args)
        f.rets = self.buffers(rets)
        f.attrs = self.attributes(attrs or {})
        self.frame = f

    def buffers(self, arrays):
        n = len(arrays)
        types = (C.c_int * n)(*([1] * n))
        items = (C.c_void_p * n)()
        for i, x in enumerate(arrays):
            dims = (C.c_int64 * max(x.ndim, 1))(*x.shape)
            b = Buffer(C.sizeof(Buffer), None, DT[x.dtype], x.ctypes.data, x.ndim,
                       C.cast(dims, C.POINTER(C.c_int64)))
            items[i] = C.addressof(b)
            self.keep += [dims, b, x]
        self.keep += [types, items]
        return List(C.sizeof(List), None, n, C.cast(types, C.POINTER(C.c_int)),
                    C.cast(items, C.POINTER(C.c_void_p)))

    def attributes(self, attrs):
        n = len(attrs)
        types = (C.c_int * max(n, 1))()
        names = (C.POINTER(ByteSpan) * max(n, 1))()
        vals = (C.c_void_p * max(n, 1))()
        for i, (k, v) in enumerate(sorted(attrs.items())):  # XLA sorts them by name
            kb = k.encode()
            name = ByteSpan(kb, len(kb))
            names[i] = C.pointer(name)
            if isinstance(v, str):
                vb = v.encode()
                val = ByteSpan(vb, len(vb))
                types[i] = 4
                self.keep += [vb]
            else:
                cell = C.c_uint8(int(v))
                val = Scalar(1, C.addressof(cell))  # PRED
                types[i] = 3
                self.keep += [cell]
            vals[i] = C.addressof(val)
            self.keep += [kb, name, val]
        self.keep += [types, names, vals]
        return Attrs(C.sizeof(Attrs), None, n, C.cast(types, C.POINTER(C.c_int)),
                     C.cast(names, C.POINTER(C.POINTER(ByteSpan))),
                     C.cast(vals, C.POINTER(C.c_void_p)))

    def call(self, handler):
        return handler(C.byref(self.frame))


# ---------------------------------------------------------------------------------------


def test_metadata_query():
    for key, h in handlers().items():
        md = Metadata()
        md.struct_size = Metadata.traits.offset + 4
        md.api_version = ApiVersion(C.sizeof(ApiVersion), None, 0, 0)
        md.traits = 0xFF
        ext = MetadataExtension(ExtensionBase(C.sizeof(MetadataExtension), 1, None),
                                C.pointer(md))
        f = CallFrame()
        f.struct_size = CallFrame.attrs.offset + C.sizeof(Attrs)
        f.extension_start = C.addressof(ext)
        f.stage = 3
        assert h(C.byref(f)) is None, key  # null: no error, and api was null
        assert (md.api_version.major_version, md.api_version.minor_version) == (0, 3)
        assert md.api_version.struct_size == C.sizeof(ApiVersion)
        assert md.traits == 0  # not command-buffer compatible


def qr_outputs(a, mode="reduced"):
    m, n = a.shape[-2:]
    k = min(m, n)
    qc, rr = {"reduced": (k, k), "complete": (m, m), "r": (0, k)}[mode]
    outs = [] if mode == "r" else [np.full((*a.shape[:-2], m, qc), np.nan, a.dtype)]
    outs.append(np.full((*a.shape[:-2], rr, n), np.nan, a.dtype))
    outs.append(np.full(a.shape[:-2], 7, np.uint32))
    return outs


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cpu_qr_executes_on_host_buffers(dtype):
    h = handlers()[("batchlin_qr", "cpu")]
    a = rng(40).standard_normal((3, 6, 4)).astype(dtype)
    q, r, info = outs = qr_outputs(a)
    fr = Frame([a], outs, {"mode": "reduced", "backend": "auto"})
    assert fr.call(h) is None and not fr.errors
    check_qr(a, q, r, 1e-5 if dtype == np.float32 else 1e-12)
    assert np.array_equal(info, np.zeros(3, np.uint32))
    ref = batchlin.qr(a)
    assert np.allclose(q, ref.Q) and np.allclose(r, ref.R)


def test_cpu_eigh_svd_execute():
    hs = handlers()
    a = rng(41).standard_normal((2, 5, 5))
    w = np.empty((2, 5))
    v = np.empty((2, 5, 5))
    info = np.empty(2, np.uint32)
    fr = Frame([a], [w, v, info], {"uplo": "U", "vectors": True})
    assert fr.call(hs[("batchlin_eigh", "cpu")]) is None
    rw, rv = batchlin.eigh(a, UPLO="U")
    assert np.allclose(w, rw) and np.allclose(v, rv)
    s = np.empty((2, 5))
    fr = Frame([a], [s, info], {"vectors": False, "full_matrices": False})
    assert fr.call(hs[("batchlin_svd", "cpu")]) is None
    assert np.allclose(s, batchlin.svdvals(a))


def test_other_stages_do_nothing():
    h = handlers()[("batchlin_qr", "cpu")]
    a = rng(42).standard_normal((2, 3, 3))
    outs = qr_outputs(a)
    for stage in (0, 1, 2):  # instantiate, prepare, initialize
        fr = Frame([a], outs, {"mode": "reduced"}, stage=stage)
        assert fr.call(h) is None and not fr.errors
        assert np.all(np.isnan(outs[0])) and np.all(outs[2] == 7)


@pytest.mark.parametrize("case,match", [
    ("bad_shape", "result R must have shape"),
    ("bad_mode", "unknown QR mode"),
    ("bad_dtype", "float32 and float64"),
    ("bad_count", "expected 3 results"),
    ("bad_info", "info must be uint32"),
    ("small_frame", "XLA_FFI_CallFrame of"),
])
def test_errors_through_the_api_table(case, match):
    h = handlers()[("batchlin_qr", "cpu")]
    a = rng(43).standard_normal((2, 4, 3))
    outs = qr_outputs(a)
    attrs = {"mode": "reduced"}
    if case == "bad_shape":
        outs[1] = np.empty((2, 4, 3))
    elif case == "bad_mode":
        attrs = {"mode": "full"}
    elif case == "bad_dtype":
        a = a.astype(np.int32)
    elif case == "bad_count":
        outs = outs[1:]
    elif case == "bad_info":
        outs[2] = np.empty(2, np.int32)
    fr = Frame([a], outs, attrs)
    if case == "small_frame":
        fr.frame.struct_size = 100
    assert fr.call(h) == SENTINEL
    [(code, msg)] = fr.errors
    assert match in msg
    assert code == 3  # INVALID_ARGUMENT
    if case != "bad_info":
        assert np.all(outs[-1] == 7)  # nothing written


def test_cuda_handlers_check_results_before_any_gpu_work():
    """Every CUDA handler checks its results against the operation's outputs before it
    asks for XLA's stream or touches a device."""
    hs = handlers()
    a = np.zeros((2, 4, 4))
    for op, outs, attrs in [("qr", [np.empty((2, 4, 3)), np.empty((2, 4, 4)),
                                    np.empty(2, np.uint32)], {"mode": "reduced"}),
                            ("eigh", [np.empty((2, 3)), np.empty(2, np.uint32)],
                             {"vectors": False}),
                            ("svd", [np.empty((2, 4)), np.empty(2, np.uint32)], {})]:
        fr = Frame([a], outs, attrs)
        assert fr.call(hs[(f"batchlin_{op}", "CUDA")]) == SENTINEL
        [(code, msg)] = fr.errors
        assert code == 3 and "result" in msg, (op, msg)  # INVALID_ARGUMENT
        assert fr.streams == 0


@pytest.mark.skipif(batchlin._front.gpu_absent_reason() is None,
                    reason="a GPU is present: this test feeds the CUDA handlers host memory")
def test_cuda_handlers_without_gpu_say_so():
    """No GPU: every operation's CUDA handler (eigh and the SVD as QR: the handlers do not
    decide what a GPU runs) answers UNAVAILABLE with the core's reason, after asking for
    XLA's stream, and writes nothing."""
    hs = handlers()
    a = np.zeros((2, 4, 4))
    why = batchlin._front.gpu_absent_reason()
    for op, outs, attrs in [("qr", qr_outputs(a), {"mode": "reduced"}),
                            ("eigh", [np.full((2, 4), 7.0), np.full(2, 7, np.uint32)],
                             {"vectors": False}),
                            ("svd", [np.full((2, 4), 7.0), np.full(2, 7, np.uint32)],
                             {"vectors": False})]:
        fr = Frame([a], outs, attrs)
        assert fr.call(hs[(f"batchlin_{op}", "CUDA")]) == SENTINEL
        [(code, msg)] = fr.errors
        assert fr.streams == 1  # the stream was asked for through the table first
        assert code == 14 and why in msg, (op, msg)  # UNAVAILABLE
        assert "QR only" not in msg
        assert np.all(outs[-1] == 7)  # nothing written
