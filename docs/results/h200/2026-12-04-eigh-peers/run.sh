#!/bin/bash
# The final tree: Python and C GPU suites; eigh's shapes of record beside the peers and
# batchlin routed, one lease.
cd "$(dirname "$0")/.."
O=$1; L=$O/logs; mkdir -p $L
. scripts/gpu-env > /dev/null
# The wheel installed into /tmp/site and the Python and C GPU suites run side by side, as
# docs/results/h200/2026-12-04-python-merged/job-suites.sh (its lines 13-20, verbatim).
grep -E "^eigh " bench/shapes.txt > /tmp/eigh.txt
timeout 60 .gpu-final/batchlin bench --op eigh --shapes /tmp/eigh.txt > $L/bench.log 2>&1
timeout 150 python3 .gpu-final/peer_bench.py --shapes /tmp/eigh.txt --peers torch-cusolver,cupy,jax --reps 3 --out $L/peers.csv > $L/peers.log 2>&1
grep -H "passed\|failed\|rc=\|error" $L/py-*.log $L/c.log | tail -n 20 > $L/summary.txt
tar czf $O/logs.tgz -C $O logs
cat $L/summary.txt; grep "^| eigh" $L/bench.log; tail -30 $L/peers.log
