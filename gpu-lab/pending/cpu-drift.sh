#!/bin/bash
# Whether the GPU machine's CPU drifts under sustained load or its drift probe reads
# noise: the tune's CPU probe shape (QR float32 32x32, 128 matrices a thread) timed by
# `batchlin bench` on the CPU alone, idle, right after a minute of all-core work, and
# after 30 s of rest. Needs .gpu/bin/batchlin. Writes OUT/cpu-drift.log.
OUT=${1:?usage: cpu-drift.sh OUTDIR}
mkdir -p "$OUT"
T=$(nproc)
echo "qr $((128 * T)) 32 32" > /tmp/probe.txt
echo "qr 2048 64 64" > /tmp/load.txt
probe() {
  for i in 1 2 3 4 5 6; do
    .gpu/bin/batchlin bench --kernel small --shapes /tmp/probe.txt 2>/dev/null | grep -E '^\| qr' | awk -F'|' -v tag="$1" '{print tag, $6}'
    sleep 1
  done
}
{
  nproc; grep -m1 "model name" /proc/cpuinfo
  grep MHz /proc/cpuinfo | sort | uniq -c | head -4
  probe idle
  end=$((SECONDS + 60))
  while [ $SECONDS -lt $end ]; do .gpu/bin/batchlin bench --kernel faer --shapes /tmp/load.txt > /dev/null 2>&1; done
  grep MHz /proc/cpuinfo | sort | uniq -c | head -4
  probe after-load
  sleep 30
  probe rested
} > "$OUT/cpu-drift.log" 2>&1
