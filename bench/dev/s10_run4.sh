#!/usr/bin/env bash
# Session 10, run 4: the rows kernel and cuBLAS's GEMM as the benchmark runs
# them -- after its 100 MiB L2 flush (dirty lines), clocks free -- at 256 and
# 320 rows, 151936 x 4096 (ncu --cache-control none): run 2's clean-L2 ncu put
# draft argmax's scan at 320 rows within 7% of cuBLAS, the benchmark's call at
# 1.27-1.34x.  DRAM bytes say whether W is read more than once.
source "$(dirname "$0")/common.sh"
exec > >(tee $OUT/run4.txt) 2>&1
build_bench build-sm90a
B=build-sm90a/bench/flashspec_bench
M=gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,launch__grid_size,launch__cluster_dim_x,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum,l1tex__m_xbar2l1tex_read_bytes.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active
timeout 200 ncu --cache-control none --clock-control none --kernel-name regex:'fshr_scan|nvjet' --csv \
  --metrics $M $B --shapes 151936x4096 --rows 256,320 --ops sample,argmax --reps 3 --warmup 1 \
  > $OUT/ncu_dirty_151936x4096.csv 2> /tmp/ncu.err
echo "ncu rc=$? at ${SECONDS}s"; tail -2 /tmp/ncu.err
gzip -f $OUT/ncu_dirty_151936x4096.csv
