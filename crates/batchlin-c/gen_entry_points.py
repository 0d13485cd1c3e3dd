#!/usr/bin/env python3
"""Writes crates/batchlin-c/src/entry_points.rs: every operation's extern "C" entry points
(float and double; contiguous, strided, CUDA and CUDA strided) from the one table below.

    python3 crates/batchlin-c/gen_entry_points.py            # rewrite the file
    python3 crates/batchlin-c/gen_entry_points.py --stdout   # print it (the Rust test
                                                             # entry_points_are_generated
                                                             # compares the two)

Plain Rust functions, not macros, because cbindgen (which writes include/batchlin.h from
the sources) does not expand macros. Every function hands its arguments to one function
of src/imp.rs (`imp::qr`, `imp::eigh`, `imp::svd`), which passes the call to
`batchlin_core::run` (docs/ARCHITECTURE.md): a new operation of the core is one entry of
OPERATIONS here (and its function in imp.rs); a new GPU kernel for an operation needs no
change at all, since its `_cuda` forms already exist.

Standard library only.
"""

import sys
import textwrap
from pathlib import Path

HERE = Path(__file__).resolve().parent
TARGET = HERE / "src" / "entry_points.rs"

# ---------------------------------------------------------------------------------------
# The table.
#
# Each operation: its name (batchlin_s<name>, batchlin_d<name>, ...), its arguments after
# the input, its body (a call of an imp.rs function), and its doc text per form.
#
# Arguments: "m", "n" (sizes, int64_t); ("name", "rust type") for a parameter; "out:x" for
# an output (`x`, with `x_layout` in the strided forms); "info". The input (`a`, then
# `batch` or `a_layout`) comes first and the form's last argument (`backend` for the
# strided host form, `stream` for the CUDA forms) last, in every operation.
#
# Bodies: the imp.rs function and its arguments, in which {a} is the input, {x} output x,
# {at} where the call runs.
#
# Docs: "host" is the contiguous float form's (the operation's full description);
# "strided", "cuda" and "cuda_strided" default to the templates of FORMS. In doc text
# {f} is the function's own name, {s} the float contiguous form's; every double form's
# doc is "`<float form>` for double.". The "# Safety" section is the form's.

OPERATIONS = [
    dict(
        name="qr",
        args=["m", "n", ("mode", "batchlin_qr_mode"), "out:q", "out:r", "info"],
        body=("qr", ["{a}", "m", "n", "mode", "{q}", "{r}", "info", "{at}"]),
        docs=dict(
            host="""\
QR of `batch` row-major M x N float matrices `a` (contiguous, one after another),
as numpy.linalg.qr: Q into `q` (M x K, or M x M for BATCHLIN_QR_COMPLETE; not
touched, and may be NULL, for BATCHLIN_QR_R) and R into `r` (K x N, or M x N for
COMPLETE), K = min(M, N), both row-major contiguous. diag(R) >= 0.

`info` (NULL, or `batch` words) gets each matrix's BATCHLIN_INFO_* flags.""",
            strided="""\
`batchlin_sqr` with explicit layouts: `a_layout` (required) gives the batch count and
the input's strides; `q_layout` and `r_layout` give the outputs' (NULL: row-major
contiguous). `backend` is BATCHLIN_BACKEND_AUTO or one to force.""",
            cuda="""\
`batchlin_sqr` on the GPU, for data already there: `a`, `q`, `r` and `info` are CUDA
device pointers (`cudaMalloc`, `cuMemAlloc`, a PyTorch or CuPy tensor's data; cast a
`CUdeviceptr` with `(float *)(uintptr_t)`), all of one device: the call runs on the
device `a` lies on (device 0 when no buffer holds anything), and the work is queued on
`stream` (a `cudaStream_t` / `CUstream` of that device's primary context, the one the
CUDA runtime uses; NULL: the legacy default stream).

Returns as soon as the work is queued: no host synchronisation, so the results are
there once the stream has reached this point (`cudaStreamSynchronize`, an event, or
later work on the same stream). Scratch comes from the device's stream-ordered pool.
`info` (NULL, or `batch` words of device memory) gets each matrix's BATCHLIN_INFO_*
flags on the device; `q` may be NULL for BATCHLIN_QR_R. Only addresses and sizes are
checked: pointers must be device memory of the right size, else the kernels fault
(and CUDA reports the fault on a later call on the stream).

A status is returned for errors found while queueing (bad arguments, a pointer that is
not device memory or lies on another device than `a`: BATCHLIN_ERROR_ARGUMENT; no
CUDA, or no CUDA kernel for the call: BATCHLIN_ERROR_UNAVAILABLE; a failed launch:
BATCHLIN_ERROR_DEVICE).""",
            cuda_strided="""\
`batchlin_sqr_cuda` with explicit layouts, as `batchlin_sqr_strided` (the layouts are
host memory; the data device memory): the input is read in place whatever its strides
(column-major, padded, a zero batch stride), and the outputs are written through
theirs.""",
        ),
        safety=dict(
            host="""\
Each non-NULL pointer must point to a buffer of the size the shapes give, the outputs
not overlapping each other or `a`.""",
            strided="""\
Each non-NULL pointer must point to a buffer reaching every element its layout
gives, the outputs not overlapping each other or `a`.""",
            cuda="""\
Each non-NULL pointer must be device memory holding the elements the shapes give,
valid until the queued work has run; the outputs must not overlap each other or `a`.""",
            cuda_strided="""\
As `batchlin_sqr_cuda`, each pointer reaching every element its layout gives.""",
        ),
    ),
    dict(
        name="eigh",
        args=["n", ("uplo", "batchlin_uplo"), "out:w", "out:v", "info"],
        body=("eigh", ["{a}", "n", "uplo", "{w}", "Some({v})", "info", "{at}"]),
        docs=dict(
            host="""\
Eigenvalues and eigenvectors of `batch` symmetric row-major N x N float matrices
`a`, as numpy.linalg.eigh, reading only the `uplo` triangle: eigenvalues ascending
into `w` (N per matrix), eigenvectors as the columns of `v` (N x N row-major), each
with its largest component positive.

`info` (NULL, or `batch` words) gets each matrix's BATCHLIN_INFO_* flags.""",
            strided="""\
`batchlin_seigh` with explicit layouts (`a_layout` required, its matrices N x N;
`w_layout` a vector layout; NULL output layouts are contiguous) and a backend.""",
        ),
    ),
    dict(
        name="eigvalsh",
        args=["n", ("uplo", "batchlin_uplo"), "out:w", "info"],
        body=("eigh", ["{a}", "n", "uplo", "{w}", "None", "info", "{at}"]),
        docs=dict(
            host="""\
Eigenvalues alone (numpy.linalg.eigvalsh), ascending, into `w` (N per matrix).""",
            strided="""\
`batchlin_seigvalsh` with explicit layouts and a backend.""",
        ),
    ),
    dict(
        name="svd",
        args=["m", "n", ("full_matrices", "c_int"), "out:u", "out:s", "out:vh", "info"],
        body=(
            "svd",
            ["{a}", "m", "n", "imp::flag(\"full_matrices\", full_matrices)?", "Some(({u}, {vh}))", "{s}", "info", "{at}"],
        ),
        docs=dict(
            host="""\
SVD of `batch` row-major M x N float matrices `a`, as numpy.linalg.svd: A = U
diag(S) Vh with S descending into `s` (K per matrix, K = min(M, N)), U into `u` (M x
K) and Vh into `vh` (K x N), or M x M and N x N when `full_matrices` is 1 (0 or 1;
anything else is BATCHLIN_ERROR_ARGUMENT).
Each column of U has its largest component positive.

`info` (NULL, or `batch` words) gets each matrix's BATCHLIN_INFO_* flags.""",
            strided="""\
`batchlin_ssvd` with explicit layouts (`a_layout` required; `s_layout` a vector
layout; NULL output layouts are contiguous) and a backend.""",
        ),
    ),
    dict(
        name="svdvals",
        args=["m", "n", "out:s", "info"],
        body=("svd", ["{a}", "m", "n", "false", "None", "{s}", "info", "{at}"]),
        docs=dict(
            host="""\
Singular values alone (numpy.linalg.svdvals), descending, into `s` (min(M, N) per
matrix).""",
            strided="""\
`batchlin_ssvdvals` with explicit layouts and a backend.""",
        ),
    ),
]

# The forms: suffix, whether buffers have layouts, the last argument, where the call runs,
# and the default doc and safety text (for operations whose table entry has none).
FORMS = [
    dict(
        key="host",
        suffix="",
        strided=False,
        last=None,
        at="At::Host(BATCHLIN_BACKEND_AUTO)",
        safety="As `batchlin_sqr`.",
    ),
    dict(
        key="strided",
        suffix="_strided",
        strided=True,
        last=("backend", "batchlin_backend"),
        at="At::Host(backend)",
        safety="As `batchlin_sqr_strided`.",
    ),
    dict(
        key="cuda",
        suffix="_cuda",
        strided=False,
        last=("stream", "*mut c_void"),
        at="At::Cuda(stream)",
        doc="""\
`{s}` on the GPU, for data already there, as `batchlin_sqr_cuda`: every pointer
(`info` too) is CUDA device memory of one device, the work is queued on `stream` (NULL:
the legacy default stream) and the call returns once it is queued. Where the CUDA
backend has no kernel for this operation the call returns BATCHLIN_ERROR_UNAVAILABLE
with the reason, after checking its arguments as every form does (`batchlin_plan` with
the device's ordinal tells ahead of a call).""",
        safety="As `batchlin_sqr_cuda`.",
    ),
    dict(
        key="cuda_strided",
        suffix="_cuda_strided",
        strided=True,
        last=("stream", "*mut c_void"),
        at="At::Cuda(stream)",
        doc="""\
`{s}_cuda` with explicit layouts, as `{s}_strided` (the layouts are host memory; the
data device memory).""",
        safety="As `batchlin_sqr_cuda_strided`.",
    ),
]

TYPES = [("s", "f32"), ("d", "f64")]

HEADER = """\
// Generated by crates/batchlin-c/gen_entry_points.py from its table: do not edit.
// Regenerate with `python3 crates/batchlin-c/gen_entry_points.py`; the test
// `entry_points_are_generated` fails while this file differs from the script's output.

//! The operations' entry points: float and double, contiguous, strided, CUDA and CUDA
//! strided, each handing its arguments to imp.rs (see gen_entry_points.py).

use crate::imp::{self, guard, At, In, Out};
use crate::{
    batchlin_backend, batchlin_layout, batchlin_qr_mode, batchlin_status, batchlin_uplo,
    BATCHLIN_BACKEND_AUTO,
};
use std::ffi::{c_int, c_void};
"""


# Doc text is wrapped as written; a paragraph that a filled-in name made too long for
# the crate's 90 columns ("/// " and 86) is wrapped again.
WIDTH = 86


def doc_lines(text):
    lines = []
    for para in text.split("\n\n"):
        if lines:
            lines.append("")
        rows = para.split("\n")
        if any(len(r) > WIDTH for r in rows):
            rows = textwrap.wrap(" ".join(rows), WIDTH, break_on_hyphens=False)
        lines += rows
    return ["///" + (" " + line if line else "") for line in lines]


def params(op, form, ty):
    """The Rust parameters as (name, type) pairs."""
    out = [("a", f"*const {ty}")]
    out.append(("a_layout", "*const batchlin_layout") if form["strided"] else ("batch", "i64"))
    for arg in op["args"]:
        if arg in ("m", "n"):
            out.append((arg, "i64"))
        elif arg == "info":
            out.append(("info", "*mut u32"))
        elif isinstance(arg, tuple):
            out.append(arg)
        elif arg.startswith("out:"):
            x = arg[4:]
            out.append((x, f"*mut {ty}"))
            if form["strided"]:
                out.append((f"{x}_layout", "*const batchlin_layout"))
        else:
            raise SystemExit(f"unknown argument {arg!r} of {op['name']}")
    if form["last"]:
        out.append(form["last"])
    return out


def body(op, form):
    fill = {"at": form["at"]}
    fill["a"] = "In::strided(a, a_layout)" if form["strided"] else "Ok(In::contiguous(a, batch))"
    for arg in op["args"]:
        if isinstance(arg, str) and arg.startswith("out:"):
            x = arg[4:]
            fill[x] = (
                f'Out::strided("{x}", {x}, {x}_layout)'
                if form["strided"]
                else f'Out::contiguous("{x}", {x})'
            )
    fn, args = op["body"]
    lines = ["    guard(|| {", f"        imp::{fn}("]
    lines += [f"            {arg.format(**fill)}," for arg in args]
    return lines + ["        )", "    })"]


def function(op, form, prefix, ty):
    name = f"batchlin_{prefix}{op['name']}{form['suffix']}"
    s = f"batchlin_s{op['name']}"
    if prefix == "s":
        doc = op["docs"].get(form["key"]) or form.get("doc")
        if doc is None:
            raise SystemExit(f"{op['name']}: no doc for the {form['key']} form")
        safety = op.get("safety", {}).get(form["key"], form["safety"])
    else:
        doc = f"`{s}{form['suffix']}` for double."
        safety = f"As `{s}{form['suffix']}`."
    lines = doc_lines(doc.format(f=name, s=s))
    lines += ["///", "/// # Safety"] + doc_lines(safety)
    lines += ["#[no_mangle]", f'pub unsafe extern "C" fn {name}(']
    lines += [f"    {p}: {t}," for p, t in params(op, form, ty)]
    lines += [") -> batchlin_status {"] + body(op, form) + ["}"]
    return "\n".join(lines)


def generate():
    parts = [HEADER.rstrip("\n")]
    for op in OPERATIONS:
        parts.append(
            "// "
            + "-" * 87
            + f"\n// {op['name']}: batchlin_{{s,d}}{op['name']}{{,_strided,_cuda,_cuda_strided}}"
        )
        for form in FORMS:
            for prefix, ty in TYPES:
                parts.append(function(op, form, prefix, ty))
    return "\n\n".join(parts) + "\n"


def main():
    text = generate()
    if sys.argv[1:] == ["--stdout"]:
        sys.stdout.write(text)
    elif sys.argv[1:]:
        raise SystemExit(__doc__)
    else:
        TARGET.write_text(text)
        print(f"wrote {TARGET}")


if __name__ == "__main__":
    main()
