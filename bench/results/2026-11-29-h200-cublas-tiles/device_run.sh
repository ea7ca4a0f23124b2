#!/usr/bin/env bash
# call 4: which kernels cuBLAS runs at 64-512 rows (tile shape, clusters,
# time, tensor pipe, L2 feed) beside the fused draft argmax's scan
set -u
bash bench/tools/carry_unpack.sh >/dev/null
export LD_LIBRARY_PATH=/tmp/fs_deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64
O=/tmp/o; mkdir -p $O
B=/tmp/b-full
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,memory.total --format=csv > $O/gpu.txt 2>&1
M=gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,dram__bytes_read.sum,lts__t_bytes.sum,l1tex__m_xbar2l1tex_read_bytes.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,launch__grid_size,launch__cluster_dim_x
for S in 151936x4096 128256x8192; do
  timeout 200 ncu --clock-control none -k regex:'nvjet|gemm|cutlass|fshr?_scan' --csv --metrics $M \
    $B/bench/flashspec_bench --shapes $S --rows 64,96,160,256,320,512 --ops argmax --rounds 1 --reps 1 --warmup 0 --gemm heuristic > $O/ncu_survey_$S.csv 2>&1
done
tar czf $OUT/out.tgz -C $O .
