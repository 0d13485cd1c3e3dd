#!/bin/bash
# One call: the SVD `bidiag` kernel's bidiagonalisation in global memory by panels (`new`:
# `bidiag` version 3, landed with docs/results/h100/2026-12-07-svd-panels) against the
# tree without it (`head`: version 2), alternated, forced, at shapes whose A is in global memory
# (place 2); the SVD tests and the library's CUDA tests on `new`; memcheck on the SVD's
# float32 every-kernel test (place 2 at 256x256; it needed more than 125 s); then, with
# RETUNE=1, the SVD measured again by `new` over the tables of
# docs/results/h100/2026-12-07-eigh-panels (tables.tar.gz) and checked held out
# (retune-over.sh).
# REPS (2), LIMIT (560: the call's seconds), TEST_S (150) trim it for a short budget.
#   run(command="RETUNE=1 bash gpu-lab/pending/session-j.sh $OUT", carry=[".gpu7-pack"], kind="nvidia-h100-x1")
# .gpu7-pack: head.xz and new.xz (the CLI, release, BATCHLIN_NVRTC=none), svd-test.xz and
# lib-test.xz (`new`'s test binaries: `cargo test --release -p batchlin --test svd
# --no-run`, `--lib --no-run`), prev-tables.tar.gz (that folder's tables.tar.gz). Phases
# are skipped once the call nears LIMIT.
# The call itself is gpu-lab/pending/kernel-ab.sh's, with these settings.
export P=.gpu7-pack OP=svd KERNEL=bidiag VALUES=svdvals TEST=svd-test \
  MEMCHECK=svd_every_cuda_kernel_f32 TUNE_BUDGET=3m TUNE_TIMEOUT=220
export S32=$'svd 256 256 256\nsvd 64 300 300\nsvd 8 512 512\nsvd 256 400 256\n'
export S64=$'svd 256 200 200\nsvd 64 256 256\nsvd 16 400 300\n'
exec bash gpu-lab/pending/kernel-ab.sh "${1:?usage: session-j.sh OUTDIR}"
