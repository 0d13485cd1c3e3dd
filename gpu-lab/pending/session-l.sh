#!/bin/bash
# One call: the SVD `bidiag` version 4 (`new`: the panel steps load ahead of their sums,
# branch gpu-next, gpu-lab/pending/svd-panel-ahead.patch) against version 3 (`head`),
# alternated, forced, at shapes whose A is in global memory; the SVD tests and the
# library's CUDA tests on `new`; memcheck on the SVD's float32 every-kernel test; with
# RETUNE=1 the SVD measured again by `new` over session-k.sh's tables (see there). Also
# `jacobi` version 2 (U = A V after the sweeps; on the same branch) against
# version 1, its full factors of non-square matrices and its fewest columns, and the SVD
# suite with its float64 256x256 case, skipped before.
#   run(command="RETUNE=1 bash gpu-lab/pending/session-l.sh $OUT", carry=[".gpu9-pack"], kind="nvidia-h100-x1")
export P=.gpu9-pack OP=svd KERNEL=bidiag VALUES=svdvals TEST=svd-test \
  MEMCHECK=svd_every_cuda_kernel_f32 TUNE_BUDGET=3m TUNE_TIMEOUT=220
export S32=$'svd 256 256 256\nsvd 64 300 300\nsvd 8 512 512\nsvd 256 400 256\n'
export S64=$'svd 256 200 200\nsvd 64 256 256\nsvd 16 400 300\n'
export AB2_KERNEL=jacobi AB2_VARIANT=svd-full
export AB2_S32=$'svd 256 300 200\nsvd 4096 64 6\n'
export AB2_S64=$'svd 4 600 300\n'
exec bash gpu-lab/pending/kernel-ab.sh "${1:?usage: session-l.sh OUTDIR}"
