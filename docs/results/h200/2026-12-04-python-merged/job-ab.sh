#!/bin/bash
# A/B of the torch ops' registration (2026-12-04): "old" = main before the torch-ops merge
# (custom_op), "new" = after (torch.library.Library and batchlin's own autograd kernel),
# alternated on one machine. run(command="bash .gpu-ab/job.sh $OUT", carry=[".gpu-ab"]).
set -u
cd "$(dirname "$0")/.."
. scripts/gpu-env > /dev/null
O=$1; mkdir -p $O
export PYTHONUNBUFFERED=1
for w in old new; do python3 -m pip install -q --no-index --no-deps --target /tmp/s-$w .gpu-ab/$w/*.whl; done
# Warm the NVRTC cache for the new (kernel-less) wheel's QR kernels.
PYTHONPATH=/tmp/s-new python3 -c "
import torch, batchlin
for s in [(1,4,4),(64,16,16)]:
    a = torch.randn(*s, device='cuda'); batchlin.qr(a); torch.ops.batchlin.qr(a)
torch.cuda.synchronize()
import batchlin.torch as bt
a = torch.randn(1,4,4, device='cuda')
ks = torch._C._dispatch_keys(a)
print('keys', ks, 'after ADInplaceOrView', (ks & bt._after_inplace_or_view), 'direct', bt._goes_direct(ks))
" > $O/keys.log 2>&1
for r in 1 2; do
  for w in old new; do
    echo "== $w round $r" >> $O/ab.log
    PYTHONPATH=/tmp/s-$w timeout 60 python3 bench/overhead.py --calls 2000 --frameworks torch --shapes 1x4x4,64x16x16 2>&1 | grep "^|" >> $O/ab.log
    PYTHONPATH=/tmp/s-$w timeout 40 python3 .gpu-ab/overhead_ops.py --repeats 7 2>&1 | grep "^|" >> $O/ab.log
  done
done
cat $O/keys.log
