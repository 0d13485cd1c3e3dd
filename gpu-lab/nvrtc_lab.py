"""What the NVRTC labs (svd_bidiag_lab.py, eigh_block_lab.py) share: the library's kernel
sources, textual variants of them, and the timing of a launch."""
import os, statistics
import cupy as cp

KERNELS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "crates", "batchlin", "src", "cuda", "kernels")


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
