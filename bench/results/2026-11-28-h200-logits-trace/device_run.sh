#!/bin/bash
# One device call (an H200), a build carried (bench/tools/carry_pack.sh):
# a CUPTI kernel timeline of the benchmark's 1024-row sample and draft
# argmax on 151936 x 4096, the *_logits ops among them.
set -u
bash bench/tools/carry_unpack.sh >/dev/null
export LD_LIBRARY_PATH=/tmp/fs_deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64:${LD_LIBRARY_PATH:-}
O=/tmp/o; mkdir -p $O
FS_TRACE_OUT=$O/trace_logits.txt CUDA_INJECTION64_PATH=/tmp/b-full/bench/libfs_kernel_trace.so \
  /tmp/b-full/bench/flashspec_bench --shapes 151936x4096 --ops sample,argmax --rows 1024 --rounds 2 --reps 10 > $O/logits_bench.txt
python3 bench/tools/kernel_trace_table.py $O/trace_logits.txt > $O/trace_logits_table.txt
gzip -f $O/trace_logits.txt
tar czf $OUT/out.tgz -C $O .
