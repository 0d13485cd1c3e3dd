"""What the NVRTC labs (svd_bidiag_lab.py, eigh_block_lab.py) share: the library's kernel
sources, textual variants of them, and the timing of a launch."""
import os, statistics
import cupy as cp

# LAB_KERNELS=DIR: the sources of DIR instead (an A/B of a kernel change in one call).
KERNELS = os.environ.get("LAB_KERNELS") or os.path.join(
    os.path.dirname(os.path.abspath(__file__)), "..", "crates", "batchlin", "src", "cuda", "kernels")


def source(name):
    return open(os.path.join(KERNELS, name)).read()


def apply_subs(src, common, subs):
    """Each textual change (old, new) of `subs` applied to whichever of the two holds it."""
    for a, b in subs:
        assert a in src or a in common, a
        src, common = src.replace(a, b), common.replace(a, b)
    return src, common


def median_ms(call, reps=5):
    """The median of `reps` timed calls (CUDA events), after one untimed."""
    call()
    ts = []
    for _ in range(reps):
        e0, e1 = cp.cuda.Event(), cp.cuda.Event()
        e0.record(); call(); e1.record(); e1.synchronize()
        ts.append(cp.cuda.get_elapsed_time(e0, e1))
    return statistics.median(ts)



# bl_refl_apply (common.cu) with its loops not unrolled (the library: by 4).
NO_UNROLL = ("noun", dict(subs=[("#pragma unroll 4\n", "")]))


def unroll_in(common, start, end, by):
    """A textual change unrolling by `by` every loop of common.cu between the lines
    starting `start` and `end` (a function's body): loads of several iterations in flight."""
    i = common.index(start)
    j = common.index(end, i)
    body = common[i:j]
    return (body, body.replace("    for (int i", f'    _Pragma("unroll {by}") for (int i'))


def loop_variants(common):
    """The fast paths' serial loops over global scratch unrolled: the twisted
    factorisations (`tw4`, `tw8`), the Lowdin steps' dots (`lw4`), both (`twlw4`)."""
    tw = lambda by: unroll_in(common, "__device__ T bl_tri_twist(", "// The vectors of close values", by)
    lw = unroll_in(common, "__device__ T* bl_tri_lowdin(", "// The first entry of largest", 4)
    lw = (lw[0], lw[0].replace("                for (int i = 0; i < len; ++i) dot", '                _Pragma("unroll 4") for (int i = 0; i < len; ++i) dot')
          .replace("            for (int i = 0; i < len; ++i) {", '            _Pragma("unroll 4") for (int i = 0; i < len; ++i) {'))
    return [("tw4", dict(subs=[tw(4)])), ("tw8", dict(subs=[tw(8)])), ("lw4", dict(subs=[lw])),
            ("twlw4", dict(subs=[tw(4), lw]))]
