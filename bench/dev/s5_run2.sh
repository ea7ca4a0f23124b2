#!/usr/bin/env bash
# Session 5, run 2: what cuBLAS runs at 128 / 256 / 320 rows (kernel name =
# tile, cluster), and the same counters for it and the rows kernel: time,
# DRAM / L2 / L2->SM bytes, tensor-pipe activity (clocks not locked).
source "$(dirname "$0")/common.sh"
build_bench build-a
B=build-a/bench/flashspec_bench
M=gpu__time_duration.sum,launch__grid_size,launch__block_size,launch__cluster_dim_x,launch__cluster_dim_y,launch__shared_mem_per_block_dynamic,launch__registers_per_thread,dram__bytes_read.sum,lts__t_bytes.sum,l1tex__m_xbar2l1tex_read_bytes.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__cycles_elapsed.avg.per_second
for shape in 151936x4096 128256x8192; do
  timeout 200 ncu --clock-control none --kernel-name regex:'gemm|xmma|sm90|cutlass|fshr' --csv --metrics $M \
    $B --shapes $shape --rows 128,256,320 --ops argmax --reps 2 --warmup 1 > $OUT/ncu_$shape.csv 2> $OUT/ncu_$shape.err
  echo "== $shape"; tail -3 $OUT/ncu_$shape.err
done
ls -la $OUT
