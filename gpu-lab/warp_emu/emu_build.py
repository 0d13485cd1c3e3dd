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
    so = os.path.join(d, "libemu.so")
    subprocess.run(["g++", "-std=c++20", "-O1", "-shared", "-fPIC", "-w", "-I", d, "-I", KERNELS,
                    "-I", HERE, "-o", so, os.path.join(HERE, driver), "-lpthread"], check=True)
    return ctypes.CDLL(so)
