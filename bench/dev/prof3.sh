#!/usr/bin/env bash
# Session 3, run 3: ncu of the rows kernel (256 rows; 128 rows forced) and the
# tile kernel (128 rows), sample vs argmax.
source "$(dirname "$0")/common.sh"
B=build-sm90a/bench/flashspec_bench
build_bench
M=gpu__time_duration.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,lts__t_bytes.sum.per_second,lts__throughput.avg.pct_of_peak_sustained_elapsed,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active,smsp__average_warp_latency_per_inst_issued.ratio,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,smsp__pcsamp_warps_issue_stalled_long_scoreboard,smsp__pcsamp_warps_issue_stalled_barrier,smsp__pcsamp_warps_issue_stalled_wait,smsp__pcsamp_warps_issue_stalled_math_pipe_throttle,smsp__pcsamp_warps_issue_stalled_mio_throttle,smsp__pcsamp_warps_issue_stalled_short_scoreboard
run() { # label env rows ops kernel
  echo "=== $1"; env $2 ncu --clock-control none -k regex:"$5" -c 2 --metrics $M $B --shapes 151936x4096 --rows $3 --ops $4 --reps 1 --warmup 0 --gemm heuristic 2>&1 | grep -E "^\s+(fsh|void)|gpu__time|dram__|lts__|tensor|inst_executed|issue_active|latency_per|wavefronts|stalled" ; }
{
run "rows kernel 256 sample+argmax" "X=1" 256 sample,argmax fshr_scan
run "rows kernel 128 (forced) sample+argmax" "FLASHSPEC_HOPPER_ROWS_MIN=1" 128 sample,argmax fshr_scan
run "tile kernel 128 sample+argmax" "X=1" 128 sample,argmax fsh_scan
run "tile kernel 16 sample+argmax" "X=1" 16 sample,argmax fsh_scan
} 2>&1 | tee $OUT/prof3.txt
