#!/usr/bin/env bash
# One device call on one H200 (build carried by bench/tools/carry_pack.sh).
set -u
bash bench/tools/carry_unpack.sh >/dev/null
export LD_LIBRARY_PATH=/tmp/fs_deps/usr/lib/x86_64-linux-gnu:/usr/local/cuda/lib64:/usr/local/cuda/extras/CUPTI/lib64
O=/tmp/o; mkdir -p $O
B=/tmp/b-full/bench/flashspec_bench
NCU=$(command -v ncu || echo /usr/local/cuda/bin/ncu)
M=gpu__time_duration.sum,sm__cycles_elapsed.avg.per_second,dram__bytes_read.sum,lts__t_bytes.sum,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum
for sh in 151936x4096 128256x8192; do for r in 512 1024; do
  for op in sample argmax; do
    $NCU --clock-control none -k regex:'fshr_scan' -c 1 --csv --metrics $M $B --shapes $sh --rows $r --ops $op --reps 1 --warmup 0 --gemm heuristic > $O/ncu_${sh}_${r}_${op}.csv 2>&1
  done
  $NCU --clock-control none -k regex:'nvjet|gemm|cutlass' -c 1 --csv --metrics $M $B --shapes $sh --rows $r --ops argmax --reps 1 --warmup 0 --gemm heuristic > $O/ncu_${sh}_${r}_cublas.csv 2>&1
done; done
