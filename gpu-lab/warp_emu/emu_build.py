"""Builds a host emulator of kernels/ (one of this folder's .cpp drivers) into a shared
library: common.cu less its inline PTX as common_host.cu, compiled with the driver against
warp_emu.h. Shared by svd_warp_emu.py and eigh_block_emu.py."""
import ctypes, os, subprocess, tempfile

HERE = os.path.dirname(os.path.abspath(__file__))
KERNELS = os.path.join(HERE, "..", "..", "crates", "batchlin", "src", "cuda", "kernels")


def build(driver: str) -> ctypes.CDLL:
    d = tempfile.mkdtemp(prefix=os.path.splitext(driver)[0])
    common = open(os.path.join(KERNELS, "common.cu")).read().splitlines()
    with open(os.path.join(d, "common_host.cu"), "w") as f:
        f.write("\n".join(l for l in common if "asm" not in l) + "\n")
    # EMU_DEFINE=NAME=VALUE,..: a kernel source's `#define NAME ..` given another value
    # (e.g. BL_EIGH_PANEL=32): the sources holding one copied ahead of kernels/ on the path.
    for item in filter(None, os.environ.get("EMU_DEFINE", "").split(",")):
        name, value = item.split("=")
        for cu in os.listdir(KERNELS):
            text = open(os.path.join(KERNELS, cu)).read()
            lines = text.splitlines()
            hit = [i for i, l in enumerate(lines) if l.startswith(f"#define {name} ")]
            if hit:
                target = os.path.join(d, cu)
                lines = open(target).read().splitlines() if os.path.exists(target) else lines
                lines[hit[0]] = f"#define {name} {value}"
                open(target, "w").write("\n".join(lines) + "\n")
    so = os.path.join(d, "libemu.so")
    subprocess.run(["g++", "-std=c++20", "-O1", "-shared", "-fPIC", "-w", "-I", d, "-I", KERNELS,
                    "-I", HERE, "-o", so, os.path.join(HERE, driver), "-lpthread"], check=True)
    return ctypes.CDLL(so)
