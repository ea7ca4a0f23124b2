#!/bin/bash
# The two device calls (builds made off the device and carried with
# bench/tools/carry_pack.sh /tmp/b-full).
set -u
bash bench/tools/carry_unpack.sh >/dev/null
export LD_LIBRARY_PATH=/tmp/fs_deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64:${LD_LIBRARY_PATH:-}
O=/tmp/o; mkdir -p $O
for r in 1 2; do timeout 150 /tmp/b-full/bench/tree_bench > $O/tree_bench_$r.txt 2>&1; done
T=/tmp/b-full/bench/libfs_kernel_trace.so
FS_TRACE_OUT=$O/trace_tree.txt CUDA_INJECTION64_PATH=$T timeout 120 /tmp/b-full/bench/tree_bench \
  --requests 1,4 --nodes 8,32 --shapes 151936x4096 --rounds 2 --reps 10 > $O/tree_bench_traced.txt 2>&1
FS_TRACE_OUT=$O/trace_verify.txt CUDA_INJECTION64_PATH=$T timeout 120 /tmp/b-full/bench/flashspec_bench \
  --shapes 151936x4096 --ops verify --requests 1,8 --rounds 2 --reps 10 > $O/verify_bench_traced.txt 2>&1
python3 bench/tools/kernel_trace_table.py $O/trace_tree.txt > $O/trace_tree_table.txt 2>&1
python3 bench/tools/kernel_trace_table.py $O/trace_verify.txt > $O/trace_verify_table.txt 2>&1
gzip -f $O/trace_tree.txt $O/trace_verify.txt
tar czf $OUT/out.tgz -C $O .
