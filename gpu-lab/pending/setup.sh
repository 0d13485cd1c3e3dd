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
