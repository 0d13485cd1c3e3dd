# The eigh shapes of record up to 128: batchlin routed (float32) beside torch.linalg
# (cuSOLVER), CuPy and JAX in one call (.gpu/peer_bench.py: ../shared/bench's, copied in).
OUT=$1; . scripts/gpu-env >/dev/null 2>&1
printf 'eigh 4096 16 16\neigh 4096 32 32\neigh 1024 64 64\neigh 1024 128 128\n' > /tmp/e.txt
export XLA_PYTHON_CLIENT_PREALLOCATE=false
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > $OUT/env.txt
.gpu/bin/batchlin bench --shapes /tmp/e.txt > $OUT/batchlin.log 2>&1
timeout 300 python3 .gpu/peer_bench.py --shapes /tmp/e.txt --peers torch-cusolver,cupy,jax --out $OUT/peers.csv > $OUT/peers.log 2>&1
.gpu/bin/batchlin bench --shapes /tmp/e.txt >> $OUT/batchlin.log 2>&1
cat $OUT/batchlin.log $OUT/peers.csv
