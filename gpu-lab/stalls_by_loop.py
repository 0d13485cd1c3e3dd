#!/usr/bin/env python3
# Stall samples of one kernel summed by loop (backward branch), from ncu's source page:
#   ncu -k regex:KERNEL -c 1 --section SourceCounters -o prof BINARY MODE
#   ncu --import prof.ncu-rep --page source --csv --print-source sass > src.csv
#   python3 gpu-lab/stalls_by_loop.py src.csv
import csv, re, sys

rows = list(csv.reader(open(sys.argv[1], errors='replace')))
hi = next(i for i, r in enumerate(rows) if r and r[0] == 'Address')
hdr = rows[hi]
data = [r for r in rows[hi + 1:] if len(r) == len(hdr)]


def num(x):
    try:
        return float(x.replace(',', ''))
    except ValueError:
        return 0.0


base = int(data[0][0], 16)
ins = [(int(r[0], 16) - base, r) for r in data]
SAMPLES = hdr.index('Warp Stall Sampling (All Samples)')
EXEC = hdr.index('Instructions Executed')
reasons = [i for i, h in enumerate(hdr) if h.startswith('stall_') and 'Not Issued' not in h]
total = sum(num(r[SAMPLES]) for _, r in ins)
loops = []
for a, r in ins:
    m = re.search(r'BRA.*?0x([0-9a-f]+)', r[1])
    if m:
        t = int(m.group(1), 16) - base
        if 0 <= t < a and a - t < 0x3000:
            loops.append((t, a))


def region(lo, hi_):
    by = {i: 0.0 for i in reasons}
    samples = executed = 0.0
    for a, r in ins:
        if lo <= a <= hi_:
            samples += num(r[SAMPLES])
            executed += num(r[EXEC])
            for i in reasons:
                by[i] += num(r[i])
    return samples, executed, by


def top(by, k):
    t = sum(by.values()) or 1
    return ' '.join('%s=%.0f' % (hdr[i][6:], 100 * v / t) for i, v in sorted(by.items(), key=lambda x: -x[1])[:k])


print('total samples', total)
print('all:', top(region(0, 1 << 40)[2], 9))
inside = 0.0
for lo, hi_ in loops:
    samples, executed, by = region(lo, hi_)
    inside += samples
    print('loop %6x-%6x %4d ins: %5.1f%% samples, exec %.2fM;' % (lo, hi_, (hi_ - lo) // 16 + 1, 100 * samples / total, executed / 1e6), top(by, 6))
print('in loops %.1f%%' % (100 * inside / total))
