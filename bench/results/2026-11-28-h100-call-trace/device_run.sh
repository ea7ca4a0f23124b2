#!/usr/bin/env bash
# The device call that made the traces (builds made off the device at
# 676ac91 and carried with bench/tools/carry_pack.sh; flashspec_bench,
# libfs_kernel_trace.so and kernel_trace_table.py in carry-bin/extra.txz).
set -u
bash bench/tools/carry_unpack.sh >/dev/null
export LD_LIBRARY_PATH=/tmp/fs_deps/usr/lib/x86_64-linux-gnu
B=/tmp/fsb/flashspec_bench_base O=$OUT
A="--shapes 151936x4096 --rows 256,512,1024 --requests 64,200 --ops sample,argmax,verify"
$B $A > $O/bench_151936x4096_untraced.txt
FS_TRACE_OUT=$O/trace_151936x4096.txt CUDA_INJECTION64_PATH=/tmp/fsb/libfs_kernel_trace.so \
  $B $A > $O/bench_151936x4096_traced.txt
FS_TRACE_OUT=$O/trace_128256x8192.txt CUDA_INJECTION64_PATH=/tmp/fsb/libfs_kernel_trace.so \
  $B --shapes 128256x8192 --rows 320,1024 --requests 64 --ops sample,argmax,verify > $O/bench_128256x8192_traced.txt
# ncu_call_1024_151936x4096.csv.gz, an earlier call: every kernel of the calls, no cache or clock control
ncu --clock-control none --cache-control none --csv \
  --metrics gpu__time_duration.sum,sm__cycles_elapsed.max,sm__cycles_elapsed.avg.per_second,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum \
  $B --shapes 151936x4096 --rows 1024 --ops sample,argmax --rounds 1 --reps 3 --warmup 1 --gemm heuristic > $O/ncu_call_1024_151936x4096.csv
# here: bench/tools/kernel_trace_table.py trace_S.txt.gz > trace_table_S.txt
