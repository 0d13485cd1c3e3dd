#!/usr/bin/env python3
# Sums an `ncu --csv --metrics ...` log by kernel name: launches, time, instructions and
# the stall ratios (weighted by time). Usage: python3 gpu-lab/ncu_by_kernel.py ncu.csv
import csv, sys
from collections import defaultdict

lines = open(sys.argv[1], errors='replace').read().splitlines()
start = next(i for i, l in enumerate(lines) if l.startswith('"ID"'))
rows = list(csv.DictReader(lines[start:]))
by = defaultdict(lambda: defaultdict(float))
launches = defaultdict(set)
for r in rows:
    k = r['Kernel Name'].split('(')[0]
    try:
        v = float(r['Metric Value'].replace(',', ''))
    except ValueError:
        continue
    by[k][r['Metric Name']] += v
    launches[k].add(r['ID'])
T = 'gpu__time_duration.sum'
total = sum(d[T] for d in by.values())
print('total time %.1f us over %d kernels' % (total / 1e3, len(by)))
for k, d in sorted(by.items(), key=lambda x: -x[1][T]):
    n = len(launches[k])
    stalls = ' '.join('%s=%.2f' % (m.split('stalled_')[1].split('_per')[0], d[m] / n)
                      for m in sorted(d) if 'stalled' in m)
    print('%-40s %3d launches %8.1f us (%4.1f%%) inst %.2fM | %s' % (k[:40], n, d[T] / 1e3, 100 * d[T] / total, d.get('smsp__inst_executed.sum', 0) / 1e6, stalls))
