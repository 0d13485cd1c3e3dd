#!/bin/bash
# One call: eigh `block` version 6 (`new`: the panel steps load ahead of their sums,
# branch gpu-next, gpu-lab/pending/eigh-panel-ahead.patch) against version 5 (`head`),
# alternated, forced, at shapes of the global-memory path; the eigh tests and the
# library's CUDA tests on `new`; memcheck on the structured eigh test; with RETUNE=1 eigh
# measured again by `new` over the built-in H100 tables (docs/results/h100/2026-12-07-svd-panels)
# and checked held out.
#   run(command="RETUNE=1 bash gpu-lab/pending/session-k.sh $OUT", carry=[".gpu9-pack"], kind="nvidia-h100-x1")
# .gpu9-pack (packed from the branch's commit in .gpu9-pack/commit.txt): head.xz, new.xz
# (the CLI, release, BATCHLIN_NVRTC=none), eigh-test.xz, svd-test.xz, lib-test.xz (`new`'s
# test binaries), prev-tables.tar.gz (tune/*.toml). session-l.sh (the SVD) goes on from
# this call's tables: before it, within the machine's 30 s of idle,
#   tar xzf retune.tar.gz -C /tmp && tar czf .gpu9-pack/prev-tables.tar.gz -C /tmp/gpu-tune tune
export P=.gpu9-pack OP=eigh KERNEL=block VALUES=eigvalsh TEST=eigh-test TEST_S=120 \
  MEMCHECK=eigh_structured_every_cuda_kernel TUNE_BUDGET=2m TUNE_TIMEOUT=190
export S32=$'eigh 256 256 256\neigh 64 257 257\neigh 16 512 512\neigh 4 724 724\neigh 1 1024 1024\n'
export S64=$'eigh 1024 128 128\neigh 256 200 200\neigh 16 257 257\neigh 256 256 256\neigh 4 512 512\n'
exec bash gpu-lab/pending/kernel-ab.sh "${1:?usage: session-k.sh OUTDIR}"
