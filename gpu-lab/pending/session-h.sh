#!/bin/bash
# One call: eigh `block`'s tridiagonalisation in global memory by panels (`new`, block
# version 5) against version 4 (`head`: every step reads the trailing matrix three
# times), alternated, forced, at the shapes that take the global-memory path; the eigh
# tests and the library's CUDA tests on `new`; memcheck on the structured eigh test;
# then, with RETUNE=1, eigh measured again by `new` over the tables of
# docs/results/h100/2026-12-07-block-vector-sums and checked held out.
#   run(command="RETUNE=1 bash gpu-lab/pending/session-h.sh $OUT", carry=[".gpu5-pack"], kind="nvidia-h100-x1")
# .gpu5-pack: head.xz and new.xz (the CLI, release, BATCHLIN_NVRTC=none: kernels by NVRTC
# on the device), eigh-test.xz and lib-test.xz (`new`'s test binaries), prev-tables.tar.gz
# (tune/*.toml of that folder's tune). Phases are skipped once the call nears 560 s.
# The call itself is gpu-lab/pending/kernel-ab.sh's, with these settings.
export P=.gpu5-pack OP=eigh KERNEL=block VALUES=eigvalsh TEST=eigh-test TEST_S=120 \
  MEMCHECK=eigh_structured_every_cuda_kernel TUNE_BUDGET=2m TUNE_TIMEOUT=190
export S32=$'eigh 256 256 256\neigh 64 257 257\neigh 16 512 512\neigh 4 724 724\neigh 1 1024 1024\n'
export S64=$'eigh 1024 128 128\neigh 256 200 200\neigh 16 257 257\neigh 256 256 256\neigh 4 512 512\n'
exec bash gpu-lab/pending/kernel-ab.sh "${1:?usage: session-h.sh OUTDIR}"
