# Sourced by the device scripts here: OUT (the call's $OUT, the first argument), O (a
# folder of logs), `pack` (O into OUT/logs.tgz: one file back, however many logs),
# O/env.txt (the GPU, driver and NVRTC), and the CUDA environment (scripts/gpu-env).
OUT=${1:?usage: $0 OUTDIR}
O=/tmp/o
mkdir -p "$O" "$OUT"
pack() { tar czf "$OUT/logs.tgz" -C "$O" .; }
{
  . scripts/gpu-env
  nvidia-smi --query-gpu=name,driver_version,clocks.max.sm --format=csv,noheader
} > "$O/env.txt" 2>&1
. scripts/gpu-env >/dev/null 2>&1
# The eigh and SVD suites (every CUDA kernel forced) side by side, their summaries printed.
suites() {
  (timeout 300 .gpu/tests/svd-test --test-threads=1 > "$O/svd-test.log" 2>&1; echo "rc=$?" >> "$O/svd-test.log") &
  timeout 300 .gpu/tests/eigh-test --test-threads=1 > "$O/eigh-test.log" 2>&1; echo "rc=$?" >> "$O/eigh-test.log"
  wait
  grep -hE "^test result|FAILED|panicked|^rc=" "$O"/eigh-test.log "$O"/svd-test.log
  pack
}
# memcheck and racecheck on the families named ($1, e.g. "svd-warp eigh-warp"), small cases.
sanitize() {
  SANITIZE_KERNELS="$1" SANITIZE_TOOLS="racecheck memcheck" SANITIZE_JOBS=4 SANITIZE_TIMEOUT=200 BATCHLIN_SANITIZE_SMALL=1 scripts/gpu-sanitize /tmp/san > "$O/san.log" 2>&1
  cp /tmp/san/sanitize-summary.txt "$O/" 2>/dev/null
  pack
}
# The shapes of file $1 routed by this tree's CLI, before and after torch.linalg, CuPy and JAX.
peers() {
  export XLA_PYTHON_CLIENT_PREALLOCATE=false
  .gpu/bin/batchlin bench --shapes "$1" > "$O/batchlin-routed.log" 2>&1
  timeout 200 python3 .gpu/peer_bench.py --shapes "$1" --peers torch-cusolver,cupy,jax --out "$O/peers.csv" > "$O/peers.log" 2>&1
  .gpu/bin/batchlin bench --shapes "$1" >> "$O/batchlin-routed.log" 2>&1
  pack
}
# `batchlin bench --kernel $1 --shapes $2` by the CLI before and this one, float32 and
# float64, alternated three rounds, into O/ab.log (extra bench arguments after the two).
ab() {
  local k=$1 f=$2
  shift 2
  for r in 1 2 3; do
    for bin in batchlin-prev batchlin; do
      for dt in f32 f64; do
        echo "== $r $bin $dt $k"
        timeout 90 .gpu/bin/$bin bench --kernel "$k" --dtype $dt --shapes "$f" "$@" 2>&1 | grep -E '^\| (svd|eig|qr)'
      done
    done
    pack
  done >> "$O/ab.log" 2>&1
}
# ncu's counters ($1, comma-separated) of the kernels matching regex $2, $3 launches,
# under `bench` with the arguments after "--", by each CLI named before it; into O/ncu.log.
ncu_counters() {
  local metrics=$1 re=$2 count=$3 bins=()
  shift 3
  while [ "$1" != "--" ]; do bins+=("$1"); shift; done
  shift
  local ncu
  ncu=$(command -v ncu || ls /usr/local/cuda/bin/ncu 2>/dev/null | head -1)
  for bin in "${bins[@]}"; do
    echo "== $bin"
    timeout 120 "$ncu" --clock-control none --metrics "$metrics" -k "regex:$re" -c "$count" .gpu/bin/$bin bench "$@"
  done > "$O/ncu.log" 2>&1
  pack
}
# The warp SVD's instruction, issue and occupancy counters.
WARP_COUNTERS=gpu__time_duration.sum,smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,sm__warps_active.avg.pct_of_peak_sustained_active,launch__registers_per_thread,smsp__inst_executed_pipe_fma.sum,smsp__inst_executed_op_shfl.sum
