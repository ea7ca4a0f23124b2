#!/usr/bin/env bash
# The device call that made this folder (from the repository root, after
# bench/tools/carry_pack.sh BUILD): the issue-20 sweep and the tree sweep on
# 2647880; the ncu loop at the end made ncu_large_* on 69119aa (README.md).
set -u
T0=$(date +%s); el() { echo "$1 $(( $(date +%s) - T0 )) s" >> $OUT/log.txt; }
bash bench/tools/carry_unpack.sh
B=/tmp/b-full/bench
nvidia-smi --query-gpu=name,clocks.max.sm,power.limit --format=csv > $OUT/gpu.txt
timeout 330 $B/flashspec_bench --csv $OUT/bench.csv > $OUT/bench.txt 2>&1; el "sweep rc=$?"
timeout 120 $B/tree_bench --shapes 151936x4096,128256x8192 --requests 1,4,16,64 --nodes 8,16,32,64 \
  --rounds 3 --reps 8 > $OUT/tree_bench.txt 2>&1; el "tree rc=$?"
M=gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,launch__grid_size,launch__cluster_dim_x
M=$M,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_bytes.sum
M=$M,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active
for S in 151936x4096 128256x8192; do
  timeout 70 ncu --clock-control none -k regex:'fshr?_scan|nvjet|gemm|xmma|cutlass' --csv --metrics $M \
    $B/flashspec_bench --shapes $S --rows 256,512,1024 --requests 64,200 --ops sample,argmax,verify \
    --reps 1 --warmup 0 --gemm heuristic > $OUT/ncu_large_$S.csv 2>&1; el "ncu $S rc=$?"
done
cat $OUT/log.txt
